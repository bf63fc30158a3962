//! Drivers that feed arbitrary bytes to the wire parsers, the handshake,
//! the server's acceptor and established connections, shared by the `cargo fuzz` targets and the
//! property tests that run the same inputs on every CI build. Not part of
//! the stable API.

mod accept;
mod connection;
mod handshake;
mod packet;
mod pair;

pub use accept::{accept, AcceptOutcome};
pub use connection::{connection, ConnectionOutcome};
pub use handshake::{handshake, HandshakeOutcome};
pub use packet::parse_packet;

#[cfg(test)]
mod tests {
    use super::*;

    /// The acceptor's settings at the front of an [`accept`] input: the
    /// policy byte, the cookie lifetime in milliseconds (at least 1), the
    /// half-open and per-address limits less one.
    fn settings(policy: u8, lifetime_ms: u16, half_open: u8, per_ip: u8) -> Vec<u8> {
        let [low, high] = (lifetime_ms - 1).to_le_bytes();
        vec![policy, low, high, half_open, per_ip]
    }

    /// A client at 192.0.2.1:4000, then `rounds` of: its next datagram
    /// sent, and what the server sent delivered.
    fn client_rounds(rounds: usize) -> Vec<u8> {
        let mut ops = vec![0, 0x10];
        for _ in 0..rounds {
            ops.extend_from_slice(&[1, 4]);
        }
        ops
    }

    /// Inputs that reach each refusal and each kind of admission, written
    /// as the seeds of the fuzz corpus.
    pub(super) fn seeds() -> Vec<(&'static str, Vec<u8>)> {
        let mut seeds = Vec::new();
        let mut retried = settings(1, 10_000, 15, 7);
        retried.extend(client_rounds(8));
        seeds.push(("retry_then_cookie", retried));
        // The client's cookie from another address, bit-flipped for
        // another connection id, from its own address once its connection
        // is gone (admitted again), and after expiry.
        let number = [0u8; 8];
        let mut replays = settings(1, 500, 15, 7);
        replays.extend(client_rounds(2));
        for op in [
            &[5, 0, 0, 4, 0x21][..],
            &number,
            &[5, 0, 0, 3, 7, 2, 1],
            &number,
            &[22, 0, 5, 0, 0, 0],
            &number,
            &[22, 0, 8, 0xf4, 0x01, 0, 5, 0, 0, 0],
            &number,
        ] {
            replays.extend_from_slice(op);
        }
        seeds.push(("cookie_replays", replays));
        // A flood from spoofed addresses: admitted without retries below
        // six half-open handshakes, retried above.
        let mut flood = settings(0x1a, 10_000, 15, 0);
        flood.extend_from_slice(&[7, 40]);
        seeds.push(("spoofed_flood", flood));
        // Without retries: a client admitted at once, a second Initial from
        // its IP address at the per-address limit, arbitrary bytes, a
        // flood at the half-open limit, time passing.
        let mut never = settings(0, 1000, 3, 0);
        never.extend(client_rounds(4));
        never.extend_from_slice(&[6, 0x10, 0x14, 0x05, 1, 2, 3, 4, 5, 6, 7, 8]);
        never.extend_from_slice(&number);
        never.extend_from_slice(&[0x12, 0x11, 10, 0, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9]);
        never.extend_from_slice(&[7, 10, 8, 0x30, 0x75, 3, 1, 4]);
        seeds.push(("no_retry", never));
        seeds
    }

    #[test]
    fn a_client_follows_one_retry_and_is_admitted_with_its_cookie() {
        let (_, data) = &seeds()[0];
        let outcome = accept(data);
        assert_eq!(outcome.retries_followed, 1);
        assert_eq!(outcome.stats.retries_sent, 1);
        assert_eq!(outcome.stats.accepted_with_cookie, 1);
        assert_eq!(outcome.clients_established, 1);
    }

    #[test]
    fn cookies_open_only_where_and_while_they_were_issued() {
        let (_, data) = &seeds()[1];
        let stats = accept(data).stats;
        assert_eq!(stats.retries_sent, 1, "{stats:?}");
        assert_eq!(stats.accepted_with_cookie, 2, "{stats:?}");
        assert_eq!(stats.cookies_invalid, 2, "{stats:?}");
        assert_eq!(stats.cookies_expired, 1, "{stats:?}");
    }

    #[test]
    fn a_spoofed_flood_is_retried_above_the_threshold() {
        let (_, data) = &seeds()[2];
        let stats = accept(data).stats;
        assert_eq!(stats.accepted_unvalidated, 6, "{stats:?}");
        assert_eq!(stats.retries_sent, 34, "{stats:?}");
    }

    #[test]
    fn without_retries_the_limits_still_hold() {
        let (_, data) = &seeds()[3];
        let stats = accept(data).stats;
        assert_eq!(stats.retries_sent, 0, "{stats:?}");
        // The client's connection is established, so four more fit.
        assert_eq!(stats.accepted_unvalidated, 5, "{stats:?}");
        assert_eq!(stats.address_limit, 1, "{stats:?}");
        assert_eq!(stats.not_initial, 1, "{stats:?}");
        assert_eq!(stats.half_open_limit, 6, "{stats:?}");
    }

    /// Writes the seeds into the fuzz corpus: `cargo test -p ltx-proto
    /// --lib write_accept_seeds -- --ignored`.
    #[test]
    #[ignore = "writes fuzz/corpus/accept/"]
    fn write_accept_seeds() {
        let dir =
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/accept");
        std::fs::create_dir_all(&dir).expect("the corpus directory");
        for (name, data) in seeds() {
            std::fs::write(dir.join(format!("seed-{name}")), data).expect("a seed file");
        }
    }
}
