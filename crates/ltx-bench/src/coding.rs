//! `ltx-bench coding`: how fast the coding layer is, beside the memory
//! baseline (plain XOR) and a peer library, all measured in the same run.

use std::hint::black_box;

use anyhow::Context;
use clap::Args;
use ltx_coding::codec::{Code, Decoder, DecoderConfig, Encoder, EncoderConfig};
use ltx_coding::gf256::{kernel, Kernel, KernelKind, KERNEL_ENV};
use ltx_coding::{RepairKey, SymbolId, Window};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::{json, Map, Value};

use super::measure::{throughput, Budget, Throughput};

/// Options of `ltx-bench coding`.
#[derive(Debug, Args)]
pub(crate) struct CodingArgs {
    /// Short samples: the whole run takes well under 30 s.
    #[arg(long)]
    quick: bool,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
    /// Seed for buffer contents, coefficients and loss patterns.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Region sizes for the kernel figures: one packet, an L2-sized region and
/// one that spills to memory.
const REGION_SIZES: [usize; 3] = [1400, 64 * 1024, 1024 * 1024];

/// The symbol size of the encoder and decoder figures: a full packet.
const SYMBOL_SIZE: usize = 1400;

/// One line of the report.
struct Row {
    name: String,
    bytes: Option<usize>,
    throughput: Throughput,
    extra: Map<String, Value>,
}

impl Row {
    fn new(name: impl Into<String>, bytes: Option<usize>, throughput: Throughput) -> Row {
        Row {
            name: name.into(),
            bytes,
            throughput,
            extra: Map::new(),
        }
    }

    fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("name".into(), json!(self.name));
        object.insert(
            "gb_per_s".into(),
            json!(round3(self.throughput.median_gb_per_s)),
        );
        if let Some(bytes) = self.bytes {
            object.insert("bytes".into(), json!(bytes));
        }
        object.insert(
            "min_gb_per_s".into(),
            json!(round3(self.throughput.min_gb_per_s)),
        );
        object.insert(
            "max_gb_per_s".into(),
            json!(round3(self.throughput.max_gb_per_s)),
        );
        object.extend(self.extra.clone());
        Value::Object(object)
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Prints rows as they are measured, so a long run shows progress.
struct Printer {
    json: bool,
}

impl Printer {
    fn header(&self) {
        if !self.json {
            println!("{:<28} {:>9} {:>10}   (min … max)", "name", "bytes", "GB/s");
        }
    }

    fn row(&self, row: &Row) {
        if self.json {
            println!("{}", row.to_json());
        } else {
            let bytes = row.bytes.map_or_else(String::new, |b| b.to_string());
            println!(
                "{:<28} {:>9} {:>10.3}   ({:.3} … {:.3})",
                row.name,
                bytes,
                row.throughput.median_gb_per_s,
                row.throughput.min_gb_per_s,
                row.throughput.max_gb_per_s
            );
        }
    }
}

/// Runs the benchmark and prints its figures.
pub(crate) fn run(args: &CodingArgs) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        eprintln!("warning: this is a debug build; run with --release for meaningful figures");
    }
    let codec_kernel = forced_kernel()?;
    let budget = if args.quick {
        Budget::quick()
    } else {
        Budget::full()
    };
    let printer = Printer { json: args.json };
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let kernels = Kernel::available();
    let best = Kernel::best();
    if !args.json {
        let names: Vec<_> = kernels.iter().map(|k| k.kind().name()).collect();
        println!(
            "kernels on this CPU: {} (best: {})",
            names.join(", "),
            best.kind()
        );
    }
    printer.header();

    let mut rows = Vec::new();
    let mut record = |row: Row| {
        printer.row(&row);
        rows.push(row);
    };
    measure_kernels(budget, &mut rng, &kernels, best, &mut record);
    let mut record_codec = |mut row: Row| {
        row.extra
            .insert("kernel".into(), json!(codec_kernel.kind().name()));
        record(row);
    };
    measure_encoder(budget, &mut rng, &mut record_codec)?;
    measure_decoder(budget, &mut rng, &mut record_codec)?;
    print_summary(&printer, &rows, best.kind());
    Ok(())
}

/// The kernel the encoder and decoder will use: the best one, or the one
/// `LTX_GF_KERNEL` forces, checked here so that a bad value is a clear error.
fn forced_kernel() -> anyhow::Result<Kernel> {
    match std::env::var(KERNEL_ENV) {
        Ok(name) if !name.is_empty() => {
            let kind: KernelKind = name
                .parse()
                .with_context(|| format!("{KERNEL_ENV}={name}"))?;
            Kernel::new(kind).with_context(|| format!("{KERNEL_ENV}={name}"))?;
            Ok(kernel())
        }
        _ => Ok(kernel()),
    }
}

/// Region kernels at each size, with the memory baseline and the peers.
fn measure_kernels(
    budget: Budget,
    rng: &mut SmallRng,
    kernels: &[Kernel],
    best: Kernel,
    record: &mut impl FnMut(Row),
) {
    for &size in &REGION_SIZES {
        let src = random_bytes(rng, size);
        let mut dst = random_bytes(rng, size);
        let c = rng.random_range(2..=255u8);

        let t = throughput(budget, size, || {
            best.xor(black_box(&mut dst), black_box(&src))
        });
        let mut row = Row::new("xor", Some(size), t);
        row.extra.insert("kernel".into(), json!(best.kind().name()));
        record(row);

        for &kernel in kernels {
            let t = throughput(budget, size, || {
                kernel.mul_add(black_box(&mut dst), black_box(&src), black_box(c))
            });
            record(Row::new(
                format!("mul_add_{}", kernel.kind()),
                Some(size),
                t,
            ));
        }

        let t = throughput(budget, size, || {
            reed_solomon_erasure::galois_8::mul_slice_xor(
                black_box(c),
                black_box(&src),
                black_box(&mut dst),
            )
        });
        record(Row::new("peer_rse_mul_add", Some(size), t));

        let t = throughput(budget, size, || {
            reed_solomon_erasure_simd::galois_8::mul_slice_xor(
                black_box(c),
                black_box(&src),
                black_box(&mut dst),
            )
        });
        record(Row::new("peer_rse_simd_mul_add", Some(size), t));
    }

    {
        const SOURCES: usize = 8;
        let size = 64 * 1024;
        let sources: Vec<Vec<u8>> = (0..SOURCES).map(|_| random_bytes(rng, size)).collect();
        let slices: Vec<&[u8]> = sources.iter().map(Vec::as_slice).collect();
        let coefficients: Vec<u8> = (0..SOURCES).map(|_| rng.random_range(2..=255u8)).collect();
        let mut dst = vec![0u8; size];
        // Source bytes read per second: the figure comparable with mul_add.
        let t = throughput(budget, size * SOURCES, || {
            best.dot_product(black_box(&mut dst), black_box(&slices), &coefficients)
        });
        let mut row = Row::new("dot_product", Some(size), t);
        row.extra.insert("sources".into(), json!(SOURCES));
        row.extra.insert("kernel".into(), json!(best.kind().name()));
        record(row);
    }
}

/// One repair symbol over windows of 32, 64 and 256 symbols; the figure is
/// source bytes covered per second.
fn measure_encoder(
    budget: Budget,
    rng: &mut SmallRng,
    record: &mut impl FnMut(Row),
) -> anyhow::Result<()> {
    for window in [32u16, 64, 256] {
        let mut encoder = Encoder::new(EncoderConfig {
            symbol_size: SYMBOL_SIZE,
            max_window: window,
            code: Code::default(),
        })?;
        for _ in 0..window {
            encoder.push(&random_bytes(rng, SYMBOL_SIZE))?;
        }
        let mut repair = vec![0u8; SYMBOL_SIZE];
        let mut key = 0u16;
        let span = Window::new(SymbolId(0), window);
        let mut failed = None;
        let t = throughput(budget, usize::from(window) * SYMBOL_SIZE, || {
            key = key.wrapping_add(1);
            if let Err(e) = encoder.repair(span, RepairKey(key), black_box(&mut repair)) {
                failed = Some(e);
            }
        });
        if let Some(e) = failed {
            anyhow::bail!("encode_w{window}: {e}");
        }
        let mut row = Row::new(format!("encode_w{window}"), Some(SYMBOL_SIZE), t);
        row.extra.insert("window".into(), json!(window));
        record(row);
    }
    Ok(())
}

/// Windows of 64 symbols with 5, 20 and 50 % of the sources lost: the
/// decoder takes the rest and repair symbols over the window until it has
/// every source. The figure is source bytes delivered per second;
/// `recovered_gb_per_s` counts only the symbols rebuilt from repairs.
fn measure_decoder(
    budget: Budget,
    rng: &mut SmallRng,
    record: &mut impl FnMut(Row),
) -> anyhow::Result<()> {
    const WINDOW: u16 = 64;
    let code = Code::default();
    for loss_percent in [5u32, 20, 50] {
        let lost = (u32::from(WINDOW) * loss_percent).div_ceil(100) as usize;
        let mut encoder = Encoder::new(EncoderConfig {
            symbol_size: SYMBOL_SIZE,
            max_window: WINDOW,
            code,
        })?;
        for _ in 0..WINDOW {
            encoder.push(&random_bytes(rng, SYMBOL_SIZE))?;
        }
        let span = Window::new(SymbolId(0), WINDOW);
        let mut erased: Vec<u64> = (0..u64::from(WINDOW)).collect();
        erased.shuffle(rng);
        erased.truncate(lost);
        // More repair symbols than losses: a dense GF(2^8) code needs an
        // extra one about once in 256 windows.
        let mut repairs = Vec::new();
        for key in 0..lost as u16 + 4 {
            let mut payload = vec![0u8; SYMBOL_SIZE];
            encoder.repair(span, RepairKey(key), &mut payload)?;
            repairs.push((RepairKey(key), payload));
        }
        let received: Vec<(u64, &[u8])> = (0..u64::from(WINDOW))
            .filter(|i| !erased.contains(i))
            .map(|i| (i, encoder.source(SymbolId(i)).expect("held")))
            .collect();

        let mut decoder = Decoder::new(DecoderConfig {
            symbol_size: SYMBOL_SIZE,
            max_window: WINDOW,
            code,
        })?;
        // Each pass decodes the same content as the next window of the
        // stream: RFC 8681 coefficients depend on the key, not the ids.
        let mut base = 0u64;
        let mut failure = None;
        let t = throughput(budget, usize::from(WINDOW) * SYMBOL_SIZE, || {
            let result = decode_window(&mut decoder, base, &received, &repairs);
            if let Err(e) = result {
                failure = Some(e);
            }
            base += u64::from(WINDOW);
            decoder.consume(SymbolId(base));
        });
        if let Some(e) = failure {
            anyhow::bail!("decode_w{WINDOW}_l{loss_percent}: {e}");
        }
        let recovered_share = lost as f64 / f64::from(WINDOW);
        let mut row = Row::new(
            format!("decode_w{WINDOW}_l{loss_percent}"),
            Some(SYMBOL_SIZE),
            t.clone(),
        );
        row.extra.insert("window".into(), json!(WINDOW));
        row.extra.insert("lost".into(), json!(lost));
        row.extra.insert(
            "recovered_gb_per_s".into(),
            json!(round3(t.median_gb_per_s * recovered_share)),
        );
        record(row);
    }
    Ok(())
}

/// Feeds one window to the decoder, checks that it decoded, and reads it.
fn decode_window(
    decoder: &mut Decoder,
    base: u64,
    received: &[(u64, &[u8])],
    repairs: &[(RepairKey, Vec<u8>)],
) -> anyhow::Result<()> {
    for &(i, data) in received {
        decoder.receive_source(SymbolId(base + i), data)?;
    }
    let span = Window::new(SymbolId(base), 64);
    for (key, payload) in repairs {
        if decoder.missing() == 0 {
            break;
        }
        decoder.receive_repair(span, *key, payload)?;
    }
    anyhow::ensure!(decoder.missing() == 0, "window at {base} did not decode");
    while let Some(id) = decoder.poll_decoded() {
        black_box(decoder.symbol(id));
    }
    Ok(())
}

/// The ratios the targets are stated in, from figures of this run.
fn print_summary(printer: &Printer, rows: &[Row], best: KernelKind) {
    let figure = |name: &str, bytes: usize| {
        rows.iter()
            .find(|row| row.name == name && row.bytes == Some(bytes))
            .map(|row| row.throughput.median_gb_per_s)
    };
    let region = 64 * 1024;
    let best_mul_add = rows
        .iter()
        .filter(|row| row.name.starts_with("mul_add_") && row.bytes == Some(region))
        .max_by(|a, b| {
            a.throughput
                .median_gb_per_s
                .total_cmp(&b.throughput.median_gb_per_s)
        });
    let (Some(best_row), Some(xor), Some(peer), Some(peer_simd)) = (
        best_mul_add,
        figure("xor", region),
        figure("peer_rse_mul_add", region),
        figure("peer_rse_simd_mul_add", region),
    ) else {
        return;
    };
    let best_gb = best_row.throughput.median_gb_per_s;
    let gfni = matches!(best, KernelKind::Gfni256 | KernelKind::Gfni512);
    let summary = json!({
        "name": "summary",
        "gb_per_s": round3(best_gb),
        "bytes": region,
        "best_mul_add": best_row.name,
        "mul_add_over_xor": round3(best_gb / xor),
        "mul_add_over_xor_target": if gfni { 0.5 } else { 0.3 },
        "mul_add_over_peer": round3(best_gb / peer),
        "mul_add_over_peer_target": 1.5,
        "mul_add_over_peer_simd": round3(best_gb / peer_simd),
    });
    if printer.json {
        println!("{summary}");
    } else {
        println!(
            "\nat 64 KiB: best mul-add ({}) = {:.2}× xor (target {}×), \
             {:.2}× reed-solomon-erasure (target 1.5×), {:.2}× its simd-accel build",
            best_row.name,
            best_gb / xor,
            if gfni { 0.5 } else { 0.3 },
            best_gb / peer,
            best_gb / peer_simd
        );
    }
}

fn random_bytes(rng: &mut SmallRng, len: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; len];
    rng.fill(&mut bytes[..]);
    bytes
}
