//! The fuzz targets on stable Rust, for machines without the nightly
//! toolchain `cargo fuzz` needs: each target's driver runs over its
//! committed corpus (`fuzz/corpus/TARGET/`), then over random inputs and
//! random mutations of the corpus until its time is up.
//!
//! Ignored by default (they run for a given time, not to a result):
//!
//! ```sh
//! LTX_FUZZ_SECONDS=30 cargo test -p ltx-proto --profile checked \
//!     --test fuzz_stable -- --ignored --test-threads=1
//! ```
//!
//! `LTX_FUZZ_SECONDS` is the time per target (30 by default) and
//! `LTX_FUZZ_SEED` replays a run from its seed, which each target prints.
//! An input that panics a driver is saved to a file the failure names.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Longest random input, bytes: the size libFuzzer starts from.
const MAX_INPUT: usize = 4096;

#[test]
#[ignore = "runs for LTX_FUZZ_SECONDS; see the module docs"]
fn decoder() {
    exercise("decoder", |d| {
        ltx_coding::fuzzing::hostile_decoder_stream(d)
    });
}

#[test]
#[ignore = "runs for LTX_FUZZ_SECONDS; see the module docs"]
fn lossy_channel() {
    exercise("lossy_channel", |d| {
        ltx_coding::fuzzing::lossy_channel_stream(d);
    });
}

#[test]
#[ignore = "runs for LTX_FUZZ_SECONDS; see the module docs"]
fn packet() {
    exercise("packet", |d| {
        ltx_proto::fuzzing::parse_packet(d);
    });
}

#[test]
#[ignore = "runs for LTX_FUZZ_SECONDS; see the module docs"]
fn handshake() {
    exercise("handshake", |d| {
        ltx_proto::fuzzing::handshake(d);
    });
}

#[test]
#[ignore = "runs for LTX_FUZZ_SECONDS; see the module docs"]
fn connection() {
    exercise("connection", |d| {
        ltx_proto::fuzzing::connection(d);
    });
}

#[test]
#[ignore = "runs for LTX_FUZZ_SECONDS; see the module docs"]
fn accept() {
    exercise("accept", |d| {
        ltx_proto::fuzzing::accept(d);
    });
}

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value} is not a number")),
    )
}

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    files.sort();
    files
        .into_iter()
        .filter_map(|path| Some((path.clone(), std::fs::read(&path).ok()?)))
        .collect()
}

fn exercise(target: &str, driver: impl Fn(&[u8])) {
    let budget = Duration::from_secs(env_u64("LTX_FUZZ_SECONDS").unwrap_or(30));
    let seed = env_u64("LTX_FUZZ_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    let corpus = corpus(target);
    println!(
        "{target}: seed {seed} (LTX_FUZZ_SEED={seed} replays it), {} corpus files, {}s",
        corpus.len(),
        budget.as_secs()
    );
    let run = |input: &[u8], what: &str| {
        if catch_unwind(AssertUnwindSafe(|| driver(input))).is_err() {
            let path = std::env::temp_dir().join(format!("ltx-fuzz-crash-{target}-{seed}"));
            let saved = match std::fs::write(&path, input) {
                Ok(()) => format!("saved to {}", path.display()),
                Err(e) => format!("not saved ({e})"),
            };
            panic!("{target} panicked on {what} (seed {seed}); the input is {saved}");
        }
    };
    for (path, input) in &corpus {
        run(input, &format!("corpus file {}", path.display()));
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    let start = Instant::now();
    let mut runs = 0u64;
    while start.elapsed() < budget {
        let input = if !corpus.is_empty() && rng.random_bool(0.75) {
            let base = &corpus[rng.random_range(0..corpus.len())].1;
            let other = &corpus[rng.random_range(0..corpus.len())].1;
            mutate(&mut rng, base, other)
        } else {
            let mut input = vec![0u8; rng.random_range(0..=MAX_INPUT)];
            rng.fill(&mut input[..]);
            input
        };
        run(&input, &format!("random input #{runs}"));
        runs += 1;
    }
    println!(
        "{target}: {} corpus files and {runs} random inputs, no panic",
        corpus.len()
    );
}

/// `base` changed a few times: bytes flipped, inserted, erased, copied
/// within it, or a piece of `other` spliced in.
fn mutate(rng: &mut SmallRng, base: &[u8], other: &[u8]) -> Vec<u8> {
    let mut out = base.to_vec();
    for _ in 0..rng.random_range(1..=4) {
        let at = rng.random_range(0..=out.len());
        match rng.random_range(0..5) {
            0 if at < out.len() => out[at] ^= rng.random_range(1..=u8::MAX),
            1 => {
                let bytes: Vec<u8> = (0..rng.random_range(1..=8)).map(|_| rng.random()).collect();
                out.splice(at..at, bytes);
            }
            2 => {
                let end = rng.random_range(at..=out.len());
                out.drain(at..end);
            }
            3 if !out.is_empty() => {
                let from = rng.random_range(0..out.len());
                let len = rng.random_range(0..=out.len() - from).min(64);
                let piece = out[from..from + len].to_vec();
                out.splice(at..at, piece);
            }
            _ if !other.is_empty() => {
                let from = rng.random_range(0..other.len());
                let len = rng.random_range(0..=other.len() - from).min(256);
                out.splice(at..at, other[from..from + len].iter().copied());
            }
            _ => {}
        }
        out.truncate(MAX_INPUT);
    }
    out
}
