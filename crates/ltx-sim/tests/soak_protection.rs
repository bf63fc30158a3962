//! The soak's packet protection: with AEAD after a Noise handshake (every
//! soak run's), the links' bit flips are refused by authentication and
//! counted, and the bytes still arrive intact; the plain checksum counts
//! them the same way.

use ltx_sim::soak::{SoakCase, SoakOutcome, SoakProtection};

/// Seed 7's case with no loss, jitter, duplication or outage, and one bit
/// flipped in `corrupt` of the packets each way.
fn corrupting_path(corrupt: f64, protection: SoakProtection) -> SoakCase {
    let mut case = SoakCase::draw(7);
    case.size = 300_000;
    case.protection = protection;
    for d in [&mut case.forward, &mut case.reverse] {
        d.loss = 0.0;
        d.jitter = None;
        d.duplicate = 0.0;
        d.corrupt = corrupt;
        d.outages.clear();
    }
    case
}

#[test]
fn soak_runs_are_sealed_with_aead() {
    for seed in [1, 2, 3, 1000] {
        assert_eq!(SoakCase::draw(seed).protection, SoakProtection::Aead);
    }
}

#[test]
fn corrupted_packets_fail_authentication_and_are_counted() {
    for protection in [SoakProtection::Aead, SoakProtection::Plain] {
        let case = corrupting_path(0.05, protection);
        let report = case.run();
        assert_eq!(report.outcome, SoakOutcome::Delivered, "{case}");
        assert_eq!(report.read, case.size);
        assert!(report.corrupted > 10, "{protection}: {report:?}");
        // Every corrupted packet that reached an open connection is
        // refused (a flip that breaks the header is dropped before
        // authentication, and not counted as unauthentic); nothing else is.
        assert!(
            report.unauthentic <= report.corrupted
                && report.unauthentic * 10 >= report.corrupted * 9,
            "{protection}: {} corrupted, {} unauthentic",
            report.corrupted,
            report.unauthentic
        );
    }
}

#[test]
fn a_path_without_corruption_has_nothing_unauthentic() {
    // The other side of the test above.
    let report = corrupting_path(0.0, SoakProtection::Aead).run();
    assert_eq!(report.outcome, SoakOutcome::Delivered);
    assert_eq!((report.corrupted, report.unauthentic), (0, 0));
}
