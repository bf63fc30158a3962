//! The fuzz targets' drivers on random inputs, so every CI run exercises
//! them: a decoder fed hostile symbol streams never panics and keeps its
//! invariants, and over a lossy channel it delivers only exact sources.

use ltx_coding::fuzzing::{hostile_decoder_stream, lossy_channel_stream};
use proptest::collection::vec;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn hostile_streams_never_panic_the_decoder(data in vec(any::<u8>(), 0..2048)) {
        hostile_decoder_stream(&data);
    }

    #[test]
    fn a_lossy_channel_delivers_only_exact_sources(data in vec(any::<u8>(), 0..2048)) {
        lossy_channel_stream(&data);
    }
}

/// The channel driver is not vacuous: on random inputs, lost symbols are
/// rebuilt from repairs.
#[test]
fn random_channels_do_rebuild_lost_symbols() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let mut rebuilt = 0;
    for _ in 0..500 {
        let mut data = vec![0u8; 1024];
        rng.fill(&mut data[..]);
        rebuilt += lossy_channel_stream(&data);
    }
    assert!(
        rebuilt > 100,
        "only {rebuilt} symbols rebuilt over 500 channels"
    );
}
