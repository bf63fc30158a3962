//! probe
use ltx_sim::scenario::Scenario;
use std::time::Duration;

#[test]
fn probe() {
    for seed in [3u64, 4] {
        let mut s = Scenario {
            rate_bps: 50_000_000,
            rtt: Duration::from_millis(600),
            loss: 0.2,
            burst: 1.0,
            size: 10_000_000,
            seed,
            ..Scenario::default()
        };
        s.transport
            .repair_mut()
            .set_delay_per_percent(Duration::ZERO);
        let r = s.run().unwrap();
        let d = &r.flows[0].delays_ms;
        let big: Vec<(usize, f64)> = d
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, x)| *x > 300.0)
            .collect();
        println!(
            "seed {seed}: {} symbols, {} over 300 ms: first {:?} last {:?}",
            d.len(),
            big.len(),
            big.first(),
            big.last()
        );
    }
}
