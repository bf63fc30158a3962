package main

import "bytes"

// The payload every peer of `ltx-bench emu` sends, in every language: one
// block of patternLen bytes drawn from SplitMix64, repeated and cut to the
// size. Output k of the generator gives bytes 8k..8k+7 of the block, least
// significant first; the block's last bytes take the first ones of the last
// output. The Rust peers make the same block (bench/payload.rs in ltx-cli).

// patternLen is 3 bytes short of 1 MiB, so that no power-of-two shift of
// the stream lines the pattern up with itself again.
const patternLen = (1 << 20) - 3

func newPattern(seed uint64) []byte {
	block := make([]byte, patternLen)
	state := seed
	for i := 0; i < patternLen; i += 8 {
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		for j := 0; j < 8 && i+j < patternLen; j++ {
			block[i+j] = byte(z >> (8 * j))
		}
	}
	return block
}

// verifier compares a received stream with the pattern as it arrives.
type verifier struct {
	pattern       []byte
	received      uint64
	firstMismatch int64 // -1 while every byte has matched
}

func newVerifier(pattern []byte) *verifier {
	return &verifier{pattern: pattern, firstMismatch: -1}
}

func (v *verifier) feed(data []byte) {
	for len(data) > 0 {
		at := int(v.received % uint64(len(v.pattern)))
		n := len(v.pattern) - at
		if n > len(data) {
			n = len(data)
		}
		if v.firstMismatch < 0 && !bytes.Equal(data[:n], v.pattern[at:at+n]) {
			expected := v.pattern[at : at+n]
			for i := 0; i < n; i++ {
				if data[i] != expected[i] {
					v.firstMismatch = int64(v.received) + int64(i)
					break
				}
			}
		}
		v.received += uint64(n)
		data = data[n:]
	}
}

// report is the receiver's line: what arrived, whether it is exactly the
// payload, and when its first and last bytes were read (CLOCK_MONOTONIC).
func (v *verifier) report(size uint64, firstNs, endNs int64) map[string]any {
	var mismatch any
	if v.firstMismatch >= 0 {
		mismatch = v.firstMismatch
	}
	return map[string]any{
		"bytes":          v.received,
		"verified":       v.firstMismatch < 0 && v.received == size,
		"first_mismatch": mismatch,
		"first_ns":       firstNs,
		"end_ns":         endNs,
	}
}
