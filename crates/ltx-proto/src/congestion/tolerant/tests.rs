//! The controller's unit tests: one behaviour each, in virtual time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::bottleneck_rate::PairDispersion;
use super::*;

const MTU: u16 = 1200;

fn rtt_of(min_ms: u64, smoothed_ms: u64) -> RttEstimator {
    rtt_between(
        Duration::from_millis(min_ms),
        Duration::from_millis(smoothed_ms),
    )
}

#[test]
fn the_default_leaves_random_loss_on_an_empty_queue_alone() {
    // ltx's addition to the Coded TCP rule: random loss on an empty
    // queue costs nothing (the seed's rule alone would back off).
    let start = Instant::now();
    let mut cc = Tolerant::new(Arc::new(TolerantConfig::default()), start, MTU);
    assert_eq!(cc.name(), "ltx");
    cc.in_startup = false;
    cc.window = 100 * 1200;
    let rtt = rtt_of(100, 105);
    for i in 0..10u32 {
        let at = start + Duration::from_millis(100 + u64::from(i));
        cc.on_rtt_sample(at, &rtt);
        cc.on_ack(at, at - Duration::from_millis(100), 1200, false, &rtt);
    }
    let before = cc.window();
    let at = start + Duration::from_millis(300);
    cc.on_loss(at, at - Duration::from_millis(100), 1200, false, &rtt);
    assert_eq!(cc.window(), before);
}

#[test]
fn the_probe_burst_fits_half_a_small_path() {
    // (bottleneck rate in bytes per second over 50 ms, probe burst);
    // a datagram is 1200 bytes.
    for (rate, burst) in [(250_000, 5), (100_000, 2), (10_000_000, 10)] {
        let start = Instant::now();
        let mut cc = Tolerant::new(Arc::new(TolerantConfig::default()), start, MTU);
        let rtt = rtt_of(50, 50);
        cc.max_rate = Some(rate);
        cc.startup.settled_rate = Some(rate);
        cc.startup.round_start = Some(start);
        // The first ACK of a packet sent after the round began starts
        // the next round, with its probe burst.
        let now = start + Duration::from_millis(60);
        cc.on_ack(now, start + Duration::from_millis(10), 1200, false, &rtt);
        assert!(cc.in_startup(), "rate {rate}");
        assert_eq!(
            cc.startup.burst_left,
            burst,
            "rate {rate}: BDP {:?}",
            cc.bdp(&rtt)
        );
    }
}

#[test]
fn the_first_flight_is_paced_where_the_handshake_reads_a_small_path() {
    // 50 ms; a datagram is 1200 bytes, the initial window 32 of them
    // (38 400 bytes). (rate read by the handshake, bytes per second;
    // pacing rate of the first flight; its burst in datagrams, None
    // where the pacer's own bucket of ten is no more).
    let cases = [
        // A product of 8 datagrams: paced, a burst of 5 (enough for
        // four pair samples, though more than half the product).
        (192_000, Some(192_000), Some(5)),
        // 25 datagrams: paced, the pacer's burst.
        (600_000, Some(600_000), None),
        // 42 datagrams hold the window: sent at once, as without a
        // reading.
        (1_000_000, None, None),
    ];
    for (rate, paced, burst) in cases {
        let start = Instant::now();
        let mut cc = Tolerant::new(Arc::new(TolerantConfig::default()), start, MTU);
        let rtt = rtt_of(50, 50);
        assert!(cc.reads_handshake_spacing());
        cc.on_handshake_spacing(start, rate, &rtt);
        let expected = paced.or(Some(u64::MAX));
        assert_eq!(cc.pacing_rate(&rtt), expected, "rate {rate}");
        assert_eq!(
            cc.pacing_burst(&rtt),
            burst.map(|d| d * 1200),
            "rate {rate}"
        );
        // A reading the next answer withdraws paces nothing.
        cc.on_handshake_spacing_withdrawn(start);
        assert_eq!(cc.pacing_rate(&rtt), Some(u64::MAX), "rate {rate}");
        assert_eq!(cc.pacing_burst(&rtt), None, "rate {rate}");
    }
}

#[test]
fn a_random_loss_on_a_short_queue_cuts_to_the_path_and_two_datagrams() {
    // (window in datagrams, RTT in ms over a minimum of 100, whether
    // the loss is above the baseline, most datagrams kept over the cut;
    // never more than a ninth of what the cut left).
    let cases = [
        // A queue within the target: two datagrams for the ACK clock.
        (100, 115, false, 2.0),
        // Not for congestion.
        (100, 115, true, 0.0),
        // A small window keeps less.
        (10, 115, false, 2.0),
        // A queue past the target: nothing kept.
        (100, 200, false, 0.0),
    ];
    let start = Instant::now();
    for (window, rtt_ms, above_baseline, kept) in cases {
        let mut cc = Tolerant::new(Arc::new(TolerantConfig::default()), start, MTU);
        cc.in_startup = false;
        cc.window = window * 1200;
        let rtt = rtt_of(100, rtt_ms);
        // Two rounds of ACKs: a queue past the target drains in the
        // first (and not again for three round trips), so the loss
        // meets the queue the second shows, of packets sent after it.
        for round in [300, 600] {
            for i in 0..10 {
                let at = start + Duration::from_millis(round + i);
                cc.on_rtt_sample(at, &rtt);
                cc.on_ack(at, at - rtt.latest(), 1200, false, &rtt);
            }
        }
        let before = cc.window() as f64;
        let at = start + Duration::from_millis(700);
        cc.on_loss(
            at,
            at - Duration::from_millis(100),
            1200,
            above_baseline,
            &rtt,
        );
        let factor = (100.0 / rtt_ms as f64).min(if above_baseline { 0.85 } else { 1.0 });
        let cut = before * factor;
        let want = cut + (kept * 1200.0_f64).min(cut / 9.0);
        let got = cc.window() as f64;
        assert!(
            (got - want).abs() <= 2.0,
            "window {window}, RTT {rtt_ms} ms, above baseline {above_baseline}: \
             window {got}, want {want}"
        );
    }
}

#[test]
fn a_rounds_later_pairs_replace_the_rate_its_first_pairs_read() {
    // A first flight of 32 datagrams meets an empty bottleneck for its
    // first 8 (ACKs 200 µs apart: 6 MB/s), then three other flows'
    // flights, and its datagrams take every fourth slot (800 µs apart).
    let start = Instant::now();
    let mut cc = Tolerant::new(Arc::new(TolerantConfig::default()), start, MTU);
    let mut rtt = RttEstimator::new(Duration::from_millis(100));
    let mut at = start + Duration::from_millis(100);
    let mut first_read = None;
    for i in 0..32u32 {
        at += Duration::from_micros(if i < 8 { 200 } else { 800 });
        rtt.update(Duration::ZERO, at - start);
        cc.on_ack(at, start, 1200, false, &rtt);
        first_read = first_read.or(cc.max_delivery_rate());
    }
    let first = first_read.expect("a rate from the first pairs");
    assert!((4_000_000..=7_000_000).contains(&first), "first {first}");
    let rate = cc.max_delivery_rate().expect("a rate");
    assert!((1_300_000..=1_800_000).contains(&rate), "rate {rate}");
    // The window follows: one bandwidth-delay product at the later rate
    // (with the probe burst), not at the first.
    assert!(cc.window() < 300_000, "window {}", cc.window());
}

/// A burst of 64 datagrams sent at one instant crosses a bottleneck
/// that takes `gap` per datagram and loses every `lose`-th one after
/// it; the ACKs of the others come back spaced by the bottleneck, and
/// each loss is declared three datagrams later, as packet-threshold
/// detection does. Returns the pairs' median.
fn burst_through_lossy_bottleneck(lose: Option<u64>) -> u64 {
    let start = Instant::now();
    let sent = start;
    let gap = Duration::from_micros(200);
    let mut pairs = PairDispersion::default();
    let mut lost = Vec::new();
    for i in 0..64u64 {
        let at = start + Duration::from_millis(100) + gap * (i as u32);
        if lose.is_some_and(|k| i % k == k - 1) {
            lost.push(i);
        } else {
            pairs.on_ack(at, sent, 1200);
        }
        // Losses three slots back are declared by this ACK.
        if let Some(pos) = lost.iter().position(|&l| l + 3 == i) {
            lost.remove(pos);
            pairs.on_loss(sent, 1200);
        }
    }
    pairs.take_median().expect("enough samples")
}

#[test]
fn pair_samples_count_the_slots_of_lost_packets() {
    // 1200 bytes per 200 µs: 6 MB/s.
    let clean = burst_through_lossy_bottleneck(None);
    assert!((5_900_000..=6_100_000).contains(&clean), "{clean}");
    // Every other packet lost after the bottleneck: its slot still
    // spaced the ACKs. Without counting lost slots the median read
    // about half the rate.
    for lose in [2, 3, 5] {
        let median = burst_through_lossy_bottleneck(Some(lose));
        assert!(
            (5_000_000..=7_200_000).contains(&median),
            "one in {lose} lost: {median}"
        );
    }
}

#[test]
fn a_train_whose_tail_was_lost_gives_its_rate_once_its_gap_has_passed() {
    // Eight ACKs of a flight sent at once across a 600 ms path whose
    // bottleneck spaces them 200 µs apart (6 MB/s): too close for pair
    // samples, and the flight's tail was lost, so no ACK of this flight
    // ends the train; the next round's first comes a round trip later.
    let start = Instant::now();
    let mut cc = Tolerant::new(Arc::new(TolerantConfig::default()), start, MTU);
    let rtt = rtt_of(600, 600);
    let first_ack = start + Duration::from_millis(600);
    let mut last = first_ack;
    for i in 0..8u32 {
        last = first_ack + Duration::from_micros(200) * i;
        cc.on_ack(last, start, 1200, false, &rtt);
    }
    let before = cc.window();
    let deadline = cc.deadline().expect("a train is open");
    assert_eq!(deadline, last + Duration::from_millis(150));
    cc.on_deadline(deadline - Duration::from_millis(1), &rtt);
    assert_eq!(cc.window(), before, "the train ended before its gap");
    cc.on_deadline(deadline, &rtt);
    let product = 6_000_000 * 6 / 10;
    assert!(
        cc.window() >= product * 9 / 10,
        "window {} against the path's product {product}",
        cc.window()
    );
    assert_eq!(cc.deadline(), None);
}

/// A train of ACKs arriving at the offsets `at_us` (microseconds from the
/// first), every packet sent back to back at the start.
fn train_at(at_us: &[u64]) -> bottleneck_rate::Train {
    let start = Instant::now();
    let mut longest_gap = Duration::ZERO;
    for pair in at_us.windows(2) {
        longest_gap = longest_gap.max(Duration::from_micros(pair[1] - pair[0]));
    }
    let last = *at_us.last().expect("at least one ACK");
    let count = at_us.len() as u64;
    bottleneck_rate::Train {
        first: start,
        first_sent: start,
        last_sent: start,
        last: start + Duration::from_micros(last),
        longest_gap,
        acks: count,
        packets: count,
        bytes_after_first: (count - 1) * 1200,
        acked_after_first: (count - 1) * 1200,
        head_dropped: 0,
        // Sent together: each ACK's RTT sample is its offset.
        rtt_range: (Duration::ZERO, Duration::from_micros(last)),
    }
}

#[test]
fn a_train_at_the_bottlenecks_spacing_is_not_clumped_and_one_held_in_order_is() {
    // 20 ACKs 110 µs apart (100 Mbit/s): a spacing, however short the
    // train.
    let even: Vec<u64> = (0..20).map(|i| i * 110).collect();
    assert!(!train_at(&even).clumped());
    // 32 packets sent together on a path that delays each by up to 60 ms
    // and holds it behind the one before: they come back in four clumps,
    // each at the instant its first arrived.
    let mut held = vec![0; 8];
    held.extend([16_000; 10]);
    held.extend([35_000; 6]);
    held.extend([53_000; 8]);
    assert!(train_at(&held).clumped());
    // A train too short to have given four pairs says nothing either way.
    let short = [0, 0, 400, 400, 900, 900];
    assert!(!train_at(&short).clumped());
}

#[test]
fn a_rate_read_before_the_train_showed_clumps_is_not_sent_at() {
    // On a path that holds packets in order behind a delayed one, a
    // round's first pairs can be read, as steady, before its train shows
    // the clumps: start-up took that rate (a fifth of the path's) as
    // measured and capped its window at its product. The clumps void the
    // measurement; a given rate (a hint) stands, and so does one that a
    // train too short to trust (13 ACKs at 50 Mbit/s, a gap of 2 ms that
    // a burst of loss not yet declared may have left) calls clumped.
    let mut held = vec![0; 8];
    held.extend([16_000; 10]);
    held.extend([35_000; 6]);
    held.extend([53_000; 8]);
    let short: Vec<u64> = (0..13)
        .map(|i| i * 240 + if i >= 6 { 2_000 } else { 0 })
        .collect();
    assert!(train_at(&short).clumped());
    for (arrivals, hinted, voided) in [
        (&held, false, true),
        (&held, true, false),
        (&short, false, false),
    ] {
        let start = Instant::now();
        let mut cc = Tolerant::new(Arc::new(TolerantConfig::default()), start, MTU);
        if hinted {
            cc.take_known_rate(600_000);
        } else {
            cc.max_rate = Some(600_000);
            cc.startup.settled_rate = Some(600_000);
            cc.startup.measured = true;
        }
        cc.startup.train = Some(train_at(arrivals));
        cc.close_train();
        assert!(cc.startup.held_in_clumps);
        assert_eq!(
            cc.startup.measured,
            !voided,
            "{} ACKs, hinted: {hinted}",
            arrivals.len()
        );
    }
}

#[test]
fn a_gap_left_by_a_burst_of_loss_is_not_clumps() {
    // 32 packets at 240 µs (50 Mbit/s), the 10 from the 12th lost: a gap
    // of 11 slots, more than a quarter of the span, and no clumps. Held
    // in order on a jittery path, the same train with one loss is.
    let arrivals: Vec<u64> = (0..32)
        .filter(|i| !(12..22).contains(i))
        .map(|i| i * 240)
        .collect();
    let mut lossy = train_at(&arrivals);
    lossy.packets = 32;
    assert!(lossy.longest_gap >= lossy.span() / 4);
    assert!(!lossy.clumped());
    let mut held = vec![0; 15];
    held.extend([30_000; 16]);
    let mut held = train_at(&held);
    held.packets += 1;
    assert!(held.clumped());
}

#[test]
fn a_paced_train_is_read_only_once_it_outlasts_the_jitter_of_its_rtt_samples() {
    // A jump paced at 1200 bytes a millisecond, acknowledged over 100 ms
    // on a path whose delay jitters: RTT samples from 640 to 680 ms. Its
    // ACKs span only 2.5 times that spread, so the jitter, not the path,
    // may have set their spacing: no reading.
    let start = Instant::now();
    let mut train = train_at(&(0..=100).map(|i| i * 1_000).collect::<Vec<_>>());
    train.last_sent = start + Duration::from_millis(100);
    train.rtt_range = (Duration::from_millis(640), Duration::from_millis(680));
    assert_eq!(train.rate_within_jitter(), None);
    // Over 200 ms (5 spreads) it reads; the jitter may have stretched
    // its span by the spread, so the reading allows for that: the
    // train's 1.2 MB/s over 200 ms, taken over 160 ms.
    let mut train = train_at(&(0..=200).map(|i| i * 1_000).collect::<Vec<_>>());
    train.rtt_range = (Duration::from_millis(640), Duration::from_millis(680));
    let read = train
        .rate_within_jitter()
        .expect("the train outlasts its jitter");
    assert_eq!(train.rate(), Some(1_200_000));
    assert_eq!(read, 1_500_000);
    // On a steady path a few milliseconds of ACKs read at once.
    let mut steady = train_at(&(0..=10).map(|i| i * 1_000).collect::<Vec<_>>());
    steady.rtt_range = (Duration::from_millis(640), Duration::from_micros(640_200));
    assert!(steady.rate_within_jitter().is_some());
}

#[test]
fn a_train_sent_as_slowly_as_it_came_back_is_not_dispersed() {
    // Sent over 300 ms and acknowledged over 330 ms: the sender's pace, not
    // the bottleneck's. Sent at once and spread over 7 ms: the bottleneck's.
    let start = Instant::now();
    let mut paced = train_at(&[0, 330_000]);
    paced.last_sent = start + Duration::from_millis(300);
    assert!(!paced.dispersed(Duration::ZERO));
    let burst = train_at(&(0..30).map(|i| i * 240).collect::<Vec<_>>());
    assert!(burst.dispersed(Duration::ZERO));
}

#[test]
fn a_train_the_jitter_stretched_is_not_dispersed() {
    // Sent over 342 ms and acknowledged over 450 ms on a path whose delay
    // jitter spread a flight over 112 ms: without the jitter, its ACKs
    // span what its sending did, and its rate (a quarter of the path's)
    // is the sender's.
    let start = Instant::now();
    let mut stretched = train_at(&[0, 450_000]);
    stretched.last_sent = start + Duration::from_millis(342);
    assert!(stretched.dispersed(Duration::ZERO));
    assert!(!stretched.dispersed(Duration::from_millis(112)));
    let mut spread = train_at(&[0, 450_000]);
    spread.last_sent = start + Duration::from_millis(200);
    assert!(spread.dispersed(Duration::from_millis(112)));
}

/// The window after one second after start-up at 10 MB/s, RTTmin 90 ms,
/// from a window of 900 kB, an ACK a millisecond whose RTT is
/// `sample(millisecond, window)`.
fn window_after_probing(sample: impl Fn(u64, u64) -> Duration) -> u64 {
    let start = Instant::now();
    let mut cc = Tolerant::new(Arc::new(TolerantConfig::default()), start, MTU);
    cc.in_startup = false;
    cc.max_rate = Some(10_000_000);
    cc.window = 900_000;
    let mut rtt = RttEstimator::new(Duration::from_millis(90));
    rtt.update(Duration::ZERO, Duration::from_millis(90));
    for ms in 1..=1000u64 {
        let sample = sample(ms, cc.window());
        rtt.update(Duration::ZERO, sample);
        let now = start + Duration::from_millis(ms);
        cc.on_rtt_sample(now, &rtt);
        cc.on_ack(now, now - sample, 1200, false, &rtt);
    }
    cc.window()
}

/// 100 ms and 0 or 4 ms of jitter, by the millisecond.
fn jittered(ms: u64) -> Duration {
    Duration::from_millis(100 + 4 * (ms % 2))
}

#[test]
fn a_step_the_delay_does_not_follow_is_kept_and_one_it_follows_is_undone() {
    // The measured rate fills 1 MB over the 100 ms the flow sees: the
    // probe steps up by 100 kB. Where the delay is the path's jitter, it
    // stays as it was and the step is kept; where the flow's own window
    // builds the queue, it rises by the step over the rate (10 ms) and
    // the step is undone. Either way the additive increase adds a few
    // datagrams.
    let jitter_only = window_after_probing(|ms, _| jittered(ms));
    assert!(jitter_only >= 1_000_000, "window {jitter_only}");
    let own_queue = window_after_probing(|ms, window| {
        let queue = window.saturating_sub(900_000) as f64 / 10_000_000.0;
        jittered(ms) + Duration::from_secs_f64(queue)
    });
    assert!(
        (900_000..900_000 + 10 * 1200).contains(&own_queue),
        "window {own_queue}"
    );
}

#[test]
fn a_smooth_delay_is_not_probed() {
    // The same window short of what the rate fills, but RTT samples that
    // change by less than a datagram's time at the rate (120 µs): a
    // queue, the flow's own or shared, not jitter; the window grows by
    // additive increase alone.
    let window = window_after_probing(|ms, _| Duration::from_micros(104_000 + 50 * (ms % 2)));
    assert!(window < 900_000 + 10 * 1200, "window {window}");
}

/// The controller 3 s after a start-up that read `read_rate`
/// (bytes per second) and sized its window from it over RTTmin (100 ms),
/// on a path of `path_rate` whose jitter holds a dense flow's packets
/// `held` and 0 or 4 ms more by the millisecond: an ACK a millisecond, of
/// what the window sends over its RTT, whose sample adds the queue the
/// window builds beyond the path's product.
fn controller_after_probing(read_rate: u64, path_rate: u64, held: Duration) -> Tolerant {
    let start = Instant::now();
    let base = Duration::from_millis(100);
    let mut cc = Tolerant::new(Arc::new(TolerantConfig::default()), start, MTU);
    cc.in_startup = false;
    cc.max_rate = Some(read_rate);
    cc.window = read_rate / 10;
    let mut rtt = RttEstimator::new(base);
    rtt.update(Duration::ZERO, base);
    for ms in 1..=3000 {
        let path_bdp = path_rate / 10;
        let queue = cc.window().saturating_sub(path_bdp) as f64 / path_rate as f64;
        let sample = held + jittered(ms) + Duration::from_secs_f64(queue);
        rtt.update(Duration::ZERO, sample);
        let now = start + Duration::from_millis(ms);
        let sends = (cc.window() as f64 / sample.as_secs_f64()).min(path_rate as f64);
        cc.on_rtt_sample(now, &rtt);
        // `as` saturates; a millisecond of the flow's rate.
        cc.on_ack(now, now - sample, (sends / 1000.0) as u64, false, &rtt);
    }
    cc
}

#[test]
fn a_rate_read_low_is_raised_by_what_a_step_beyond_it_delivers() {
    // Start-up read 8 MB/s of a 10 MB/s path through the jitter, and the
    // window fills that rate: nothing short of it to probe. Steps beyond
    // it deliver more than 8 MB/s, the rate is raised, and the window
    // grows to the path's 1 MB. Where the path's rate is the one read, a
    // step beyond it builds a queue of its own and is undone: the window
    // grows by additive increase alone. Where the round trip stands at
    // RTTmin, nothing hid the rate, and no step goes beyond it.
    let held = Duration::from_millis(3);
    let read_low = controller_after_probing(8_000_000, 10_000_000, held);
    let raised = read_low.max_delivery_rate().unwrap_or(0);
    assert!(raised >= 9_500_000, "rate {raised}");
    assert!(read_low.window() >= 950_000, "window {}", read_low.window());
    let read_right = controller_after_probing(8_000_000, 8_000_000, held);
    assert!(
        read_right.window() < 800_000 + 40 * 1200,
        "window {}",
        read_right.window()
    );
    let at_min = controller_after_probing(8_000_000, 10_000_000, Duration::ZERO);
    assert_eq!(at_min.max_delivery_rate(), Some(8_000_000));
    assert!(
        at_min.window() < 800_000 + 40 * 1200,
        "window {}",
        at_min.window()
    );
}

/// An estimator whose minimum is `min` and whose smoothed RTT settles at
/// `smoothed`.
fn rtt_between(min: Duration, smoothed: Duration) -> RttEstimator {
    let mut rtt = RttEstimator::new(min);
    rtt.update(Duration::ZERO, min);
    for _ in 0..200 {
        rtt.update(Duration::ZERO, smoothed);
    }
    rtt
}

/// The window a loss above the random baseline (`congestion`), or the
/// queue target's drain (not `congestion`), leaves of `window` bytes, with
/// a standing queue measured at `standing`.
fn window_after_cut(
    window: u64,
    mut rtt: RttEstimator,
    standing: Duration,
    congestion: bool,
) -> u64 {
    let start = Instant::now();
    let mut cc = Tolerant::new(Arc::new(TolerantConfig::default()), start, MTU);
    cc.in_startup = false;
    cc.window = window;
    for i in 0..20u32 {
        let at = start + Duration::from_micros(10 * u64::from(i));
        rtt.update(Duration::ZERO, standing);
        cc.standing.on_sample(at, standing, Duration::from_secs(1));
    }
    let at = start + Duration::from_millis(1);
    if congestion {
        cc.on_loss(at, at, 1200, true, &rtt);
    } else {
        cc.drain_standing_queue(at, &rtt);
    }
    cc.window()
}

#[test]
fn a_cut_keeps_what_the_host_batches_where_the_rtt_is_microseconds() {
    // Loopback: a lone packet comes back in 30 µs, a flow's packets in
    // 300 µs to 2 ms, most of it the two hosts' batching. `RTTmin / RTT`
    // would leave a tenth of the window or less, below one send batch.
    let window = 200_000;
    let near = |kept: u64, expected: u64| kept.abs_diff(expected) <= 1000;
    // Delay alone keeps a millisecond's worth: at 300 µs that is all of
    // it (no drain), at 2 ms half.
    for (smoothed_us, expected) in [(300, window), (2000, window / 2)] {
        let smoothed = Duration::from_micros(smoothed_us);
        let rtt = rtt_between(Duration::from_micros(30), smoothed);
        let kept = window_after_cut(window, rtt, smoothed, false);
        assert!(
            near(kept, expected),
            "drain at {smoothed_us} µs: kept {kept}"
        );
    }
    // A loss keeps what the queue margin (250 µs here) sends.
    let smoothed = Duration::from_micros(300);
    let rtt = rtt_between(Duration::from_micros(30), smoothed);
    let kept = window_after_cut(window, rtt, smoothed, true);
    assert!(near(kept, window * 250 / 300), "loss: kept {kept}");
    // A 20 ms path: the floors are below the product, and both cuts are
    // the plain `RTTmin / RTT`.
    for congestion in [true, false] {
        let path = rtt_between(Duration::from_millis(20), Duration::from_millis(40));
        let kept = window_after_cut(window, path, Duration::from_millis(40), congestion);
        assert_eq!(kept, window / 2, "20 ms path, congestion {congestion}");
    }
}

#[test]
fn a_train_reads_the_bottleneck_not_the_packet_sent_ahead_of_it() {
    // An application writes a few bytes, then the rest 9 ms later: one
    // datagram leaves alone, then 30 back to back. Their ACKs come back
    // 9 ms apart and then at the bottleneck's spacing, 240 µs (5 MB/s).
    // Counted from the lone datagram's ACK, the train reads the sender's
    // 9 ms: a third of the rate.
    let start = Instant::now();
    let mut cc = Tolerant::new(Arc::new(TolerantConfig::default()), start, MTU);
    let mut rtt = RttEstimator::new(Duration::from_millis(600));
    let burst = start + Duration::from_millis(9);
    let mut acks = vec![(start + Duration::from_millis(600), start)];
    for i in 0..30u32 {
        acks.push((
            burst + Duration::from_millis(600) + Duration::from_micros(240) * (i + 1),
            burst,
        ));
    }
    for (at, sent) in acks {
        rtt.update(Duration::ZERO, at - sent);
        cc.on_ack(at, sent, 1200, false, &rtt);
    }
    let rate = cc.max_delivery_rate().expect("a rate");
    assert!((4_000_000..=6_000_000).contains(&rate), "rate {rate}");
}

#[test]
fn an_acknowledgement_of_many_packets_is_one_sample_of_the_queue() {
    // An ACK passes every packet it names to `on_ack`, but it carries one
    // RTT sample: the standing queue is judged on enough samples, not on
    // enough packets. Here it stands 50 ms above a 100 ms minimum, past
    // the queue target, which drains it by `RTTmin / RTT` once it is known.
    let start = Instant::now();
    let mut cc = Tolerant::new(Arc::new(TolerantConfig::default()), start, MTU);
    cc.in_startup = false;
    cc.window = 100 * 1200;
    let rtt = rtt_of(100, 150);
    let mut at = start + Duration::from_millis(300);
    cc.on_rtt_sample(at, &rtt);
    for _ in 0..2 * queue::MIN_QUEUE_SAMPLES {
        cc.on_ack(at, at - rtt.latest(), 1200, false, &rtt);
    }
    assert_eq!(cc.window(), 100 * 1200, "one sample is no standing queue");
    for _ in 1..queue::MIN_QUEUE_SAMPLES {
        at += Duration::from_millis(1);
        cc.on_rtt_sample(at, &rtt);
        cc.on_ack(at, at - rtt.latest(), 1200, false, &rtt);
    }
    assert_eq!(cc.window(), 100 * 1200 * 100 / 150);
}

/// The window a start-up that measured 6.25 MB/s over a 600 ms minimum
/// (a bandwidth-delay product of 3.75 MB) leaves when its RTT samples show
/// 200 ms of queue, with `in_flight` bytes of its own in flight.
fn window_after_exit_on_a_queue(in_flight: u64) -> u64 {
    let start = Instant::now();
    let mut cc = Tolerant::new(Arc::new(TolerantConfig::default()), start, MTU);
    let rate = 6_250_000;
    cc.max_rate = Some(rate);
    cc.startup.settled_rate = Some(rate);
    cc.startup.measured = true;
    cc.startup.round_start = Some(start);
    cc.window = in_flight;
    let rtt = rtt_of(600, 800);
    cc.on_sent(start, 1200, in_flight);
    for i in 0..startup::QUEUE_SAMPLES as u64 {
        let at = start + Duration::from_millis(700 + i);
        cc.on_rtt_sample(at, &rtt);
        cc.on_ack(at, at - rtt.latest(), 1200, false, &rtt);
        if !cc.in_startup() {
            break;
        }
    }
    assert!(!cc.in_startup(), "the queue ends start-up");
    cc.window()
}

#[test]
fn a_queue_of_the_flows_own_excess_is_not_drained_twice() {
    // Leaving start-up on a queue sets the window to the measured
    // product, and drains what queue that leaves by RTTmin / RTT: flows
    // that start together each measure the whole rate, and their products
    // add up to more than the path. A queue that this flow's own bytes
    // beyond the product explain (200 ms at 6.25 MB/s: 1.25 MB) is gone
    // with them: the window stays at the product. Without such bytes the
    // same queue is another flow's, and the window is drained by 600/800.
    let bdp = 3_750_000;
    let own = window_after_exit_on_a_queue(bdp + 1_250_000);
    assert!((own as f64 / bdp as f64 - 1.0).abs() < 0.01, "window {own}");
    let others = window_after_exit_on_a_queue(bdp);
    assert!(
        (others as f64 / bdp as f64 - 0.75).abs() < 0.01,
        "window {others}"
    );
}

#[test]
fn a_resumed_jump_leads_with_the_initial_window_at_once() {
    // The jump is paced at half the saved rate, so its ACKs show no more
    // than that; its first flight's burst is the initial window, sent at
    // once as a first contact's is, whose pairs read the bottleneck where
    // the path got faster than it was saved.
    let start = Instant::now();
    let config = TolerantConfig::default();
    let burst = config.initial_window_packets;
    let mut cc = Tolerant::new(Arc::new(config), start, MTU);
    let saved = SavedPath {
        rate: 2_000_000,
        min_rtt: Duration::from_millis(100),
    };
    cc.on_saved_path(start, saved);
    let rtt = rtt_of(100, 100);
    for sent in 0..burst {
        assert_eq!(cc.pacing_rate(&rtt), Some(u64::MAX), "datagram {sent}");
        cc.on_sent(start, 1200, (sent + 1) * 1200);
    }
    assert_eq!(cc.pacing_rate(&rtt), Some(1_000_000));
}
