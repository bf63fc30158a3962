//! How fast each AEAD seals and opens full-size ltx packets, through
//! [`AeadProtection`] as connections use it; prints one JSON object.
//!
//! ```text
//! cargo run --release -p ltx-proto --example aead_throughput [PACKETS]
//! ```
//!
//! The figures are CPU-bound and depend on the machine (AES instructions
//! above all); what matters is the ratio between the two in one run, which
//! chose [`ltx_proto::protection::PACKET_AEAD`]. One run on the development
//! machine (x86-64 with AES-NI, VAES and AVX-512; figures in
//! `docs/security.md`):
//!
//! ```text
//! {"results":[{"aead":"chacha20-poly1305","packets":400000,"packet_bytes":1400,"seconds":0.5713,"seal_and_open_gbit_per_s":7.841},
//!             {"aead":"aes-256-gcm","packets":400000,"packet_bytes":1400,"seconds":0.1626,"seal_and_open_gbit_per_s":27.552}]}
//! ```

use std::time::Instant;

use ltx_proto::protection::{AeadAlgorithm, AeadProtection, PacketProtection};
use ltx_proto::wire::{ConnectionId, Header, PacketNumber, PacketType, TruncatedPacketNumber};

/// A full-size datagram of the default configuration, tag included.
const DATAGRAM: usize = 1400;

fn main() {
    let packets: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    let mut results = Vec::new();
    for (name, algorithm) in [
        ("chacha20-poly1305", AeadAlgorithm::ChaCha20Poly1305),
        ("aes-256-gcm", AeadAlgorithm::Aes256Gcm),
    ] {
        let mut sender = AeadProtection::new(algorithm, [1; 32], [2; 32], u64::MAX);
        let mut receiver = AeadProtection::new(algorithm, [2; 32], [1; 32], u64::MAX);
        let mut packet = Vec::with_capacity(DATAGRAM);
        let start = Instant::now();
        for number in 0..packets {
            packet.clear();
            let header = Header {
                packet_type: PacketType::Data,
                key_phase: false,
                dcid: ConnectionId(1),
                number: TruncatedPacketNumber::truncate(
                    PacketNumber(number),
                    number.checked_sub(1).map(PacketNumber),
                ),
            };
            header.emit(&mut packet);
            let header_len = packet.len();
            packet.resize(DATAGRAM - 16, 0xa5);
            sender.seal(number, header_len, &mut packet);
            receiver
                .open(number, header_len, &mut packet)
                .expect("a sealed packet opens");
        }
        let seconds = start.elapsed().as_secs_f64();
        let bytes = packets as f64 * DATAGRAM as f64;
        results.push(format!(
            "{{\"aead\":\"{name}\",\"packets\":{packets},\"packet_bytes\":{DATAGRAM},\"seconds\":{seconds:.4},\"seal_and_open_gbit_per_s\":{:.3}}}",
            bytes * 8.0 / seconds / 1e9
        ));
    }
    println!("{{\"results\":[{}]}}", results.join(","));
}
