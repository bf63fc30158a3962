//! What a connection measured of its path, kept for the next connection to
//! the same peer (careful resume).

use std::time::Duration;

/// A path's bottleneck rate and minimum round trip as an earlier
/// connection measured them. Given to a new connection to the same peer
/// ([`TransportConfig::set_saved_path`](crate::TransportConfig::set_saved_path)),
/// it lets start-up begin at a safe fraction of the saved rate instead of
/// measuring, once the handshake's round trip shows the path is likely
/// the same one; what the application keeps it in, and for how long, is
/// the application's choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SavedPath {
    /// The bottleneck rate, bytes per second; above zero.
    pub rate: u64,
    /// The smallest round trip measured.
    pub min_rtt: Duration,
}

impl SavedPath {
    /// The bandwidth-delay product the saved path had, bytes.
    pub fn bdp(&self) -> u64 {
        let bytes = u128::from(self.rate) * self.min_rtt.as_nanos() / 1_000_000_000;
        u64::try_from(bytes).unwrap_or(u64::MAX)
    }

    /// Whether a round trip of `rtt` is within the tolerance of the saved
    /// one for resuming: from half of it to 1.5 times it plus 10 ms. Much
    /// shorter or longer says the route changed (another access network,
    /// another satellite), and the saved rate says nothing of it.
    pub fn matches(&self, rtt: Duration) -> bool {
        rtt >= self.min_rtt / 2 && rtt <= self.min_rtt.mul_f64(1.5) + Duration::from_millis(10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_trip_far_from_the_saved_one_does_not_match() {
        let saved = SavedPath {
            rate: 6_250_000,
            min_rtt: Duration::from_millis(600),
        };
        assert_eq!(saved.bdp(), 3_750_000);
        assert!(saved.matches(Duration::from_millis(600)));
        assert!(saved.matches(Duration::from_millis(900)));
        assert!(!saved.matches(Duration::from_millis(1000)));
        assert!(!saved.matches(Duration::from_millis(250)));
    }
}
