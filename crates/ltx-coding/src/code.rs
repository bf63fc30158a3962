//! Which code a stream uses: sliding-window RLC, XOR parity or fixed blocks.
