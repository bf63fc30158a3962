//! The cells of the comparison: the seed matrix's sections, their paths
//! and transfers, and the runs (cell × preset × seed) they make.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use ltx_presets::Profile;
use ltx_proto::{ConfigError, RepairSettings, TransportConfig};

use crate::scenario::Scenario;
use crate::units::QueueSpec;

/// The loss patterns of seed 000's tables: mean burst length in packets
/// (1 is uncorrelated, else Gilbert–Elliott with that mean burst).
pub const PATTERNS: [f64; 4] = [1.0, 2.0, 5.0, 10.0];

/// How many ideal times a run may take before it "did not complete".
const BOUND_FACTOR: u32 = 20;

/// The least bound, so that a short transfer's handshake time-outs do not
/// count as a failure to complete.
const MIN_BOUND: Duration = Duration::from_secs(10);

const MS: fn(u64) -> Duration = Duration::from_millis;

/// One part of the seed matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Section {
    /// Seed 000, table 1: 100 Mbit/s, 20 ms, 10 MB, loss × pattern.
    Correlated,
    /// Seed 000, table 2: 50 Mbit/s, 600 ms, 10 MB, loss × pattern.
    LongDelay,
    /// Seed 000's table 2 with 100 MB transfers.
    LongDelay100Mb,
    /// Seed 004's delay sweep: 50 MB, 10 Mbit/s, loss 0.5 % and 5 %, RTT
    /// 10–200 ms.
    DelaySweep,
    /// Seed 004's loss sweep: 50 MB, 10 Mbit/s, RTT 20 and 50 ms, loss
    /// 0.1–25 %.
    LossSweep,
    /// Seed 002's web-like objects: 1080 KiB and 3204 KiB over 10 Mbit/s,
    /// RTT 25, 100 and 400 ms, loss 0–5 %.
    Web,
    /// Seed 001's shared bottleneck: four flows of one preset on a
    /// drop-tail 1-BDP queue and on an ECN-marking one, no random loss.
    Shared,
}

/// A section name that is not one of [`Section::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown section '{0}' (valid: correlated, long-delay, long-delay-100mb, delay-sweep, loss-sweep, web, shared)")]
pub struct UnknownSection(pub String);

impl Section {
    /// Every section, in the order the results list them.
    pub const ALL: [Section; 7] = [
        Section::Correlated,
        Section::LongDelay,
        Section::LongDelay100Mb,
        Section::DelaySweep,
        Section::LossSweep,
        Section::Web,
        Section::Shared,
    ];

    /// The section's name, as [`FromStr`] reads it.
    pub fn name(self) -> &'static str {
        match self {
            Section::Correlated => "correlated",
            Section::LongDelay => "long-delay",
            Section::LongDelay100Mb => "long-delay-100mb",
            Section::DelaySweep => "delay-sweep",
            Section::LossSweep => "loss-sweep",
            Section::Web => "web",
            Section::Shared => "shared",
        }
    }

    /// A heading for the section's tables.
    pub fn title(self) -> &'static str {
        match self {
            Section::Correlated => "Correlated erasures (seed 000, table 1): 100 Mbit/s, 20 ms RTT, 10 MB",
            Section::LongDelay => "Long delay (seed 000, table 2): 50 Mbit/s, 600 ms RTT, 10 MB",
            Section::LongDelay100Mb => "Long delay, 100 MB: 50 Mbit/s, 600 ms RTT",
            Section::DelaySweep => "Delay sweep (seed 004): 50 MB, 10 Mbit/s",
            Section::LossSweep => "Loss sweep (seed 004): 50 MB, 10 Mbit/s",
            Section::Web => "Web-like objects (seed 002): 10 Mbit/s, uncorrelated loss",
            Section::Shared => "Shared bottleneck (seed 001): 4 flows of one preset, 100 Mbit/s, 20 ms RTT, 10 MB each, no random loss",
        }
    }

    /// Whether a cell of this section takes long enough to simulate that
    /// the plan gives it its own (smaller) number of seeds: the 100 MB
    /// table and the 50 MB sweeps.
    pub fn is_heavy(self) -> bool {
        matches!(
            self,
            Section::LongDelay100Mb | Section::DelaySweep | Section::LossSweep
        )
    }

    /// Whether the section is one of seed 000's tables (loss rows ×
    /// pattern columns).
    pub fn is_seed_table(self) -> bool {
        matches!(
            self,
            Section::Correlated | Section::LongDelay | Section::LongDelay100Mb
        )
    }

    /// The section's cells.
    pub fn cells(self) -> Vec<Cell> {
        match self {
            Section::Correlated => seed_table(
                self,
                100_000_000,
                MS(20),
                10_000_000,
                &[0.0, 0.05, 0.1, 0.2],
            ),
            Section::LongDelay | Section::LongDelay100Mb => {
                let size = if self == Section::LongDelay {
                    10_000_000
                } else {
                    100_000_000
                };
                let losses = [0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5];
                seed_table(self, 50_000_000, MS(600), size, &losses)
            }
            Section::DelaySweep => [0.005, 0.05]
                .into_iter()
                .flat_map(|loss| {
                    [10, 20, 50, 100, 200]
                        .map(|rtt| Cell::single(self, 10_000_000, MS(rtt), loss, 1.0, 50_000_000))
                })
                .collect(),
            Section::LossSweep => [20, 50]
                .into_iter()
                .flat_map(|rtt| {
                    [0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.25]
                        .map(|loss| Cell::single(self, 10_000_000, MS(rtt), loss, 1.0, 50_000_000))
                })
                .collect(),
            Section::Web => [1080 * 1024, 3204 * 1024]
                .into_iter()
                .flat_map(|size| {
                    [25, 100, 400].into_iter().flat_map(move |rtt| {
                        [0.0, 0.01, 0.02, 0.03, 0.05].map(|loss| {
                            Cell::single(Section::Web, 10_000_000, MS(rtt), loss, 1.0, size)
                        })
                    })
                })
                .collect(),
            Section::Shared => [false, true]
                .map(|ecn| Cell {
                    flows: 4,
                    ecn,
                    ..Cell::single(self, 100_000_000, MS(20), 0.0, 1.0, 10_000_000)
                })
                .to_vec(),
        }
    }

    /// A few small cells of the section, for a check that the whole
    /// pipeline works: 300 kB transfers (one cell per section with loss
    /// where every preset finishes within the bound; none on the 600 ms
    /// path, where the loss-based presets do not), two flows on the shared
    /// bottleneck.
    pub fn quick_cells(self) -> Vec<Cell> {
        const SIZE: u64 = 300_000;
        match self {
            Section::Correlated => vec![Cell::single(self, 100_000_000, MS(20), 0.05, 2.0, SIZE)],
            Section::LongDelay | Section::LongDelay100Mb => {
                vec![Cell::single(self, 50_000_000, MS(600), 0.0, 1.0, SIZE)]
            }
            Section::DelaySweep => vec![Cell::single(self, 10_000_000, MS(50), 0.005, 1.0, SIZE)],
            Section::LossSweep => vec![Cell::single(self, 10_000_000, MS(20), 0.01, 1.0, SIZE)],
            Section::Web => vec![Cell::single(self, 10_000_000, MS(100), 0.01, 1.0, SIZE)],
            Section::Shared => [false, true]
                .map(|ecn| Cell {
                    flows: 2,
                    ecn,
                    ..Cell::single(self, 100_000_000, MS(20), 0.0, 1.0, SIZE)
                })
                .to_vec(),
        }
    }
}

impl fmt::Display for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Section {
    type Err = UnknownSection;

    fn from_str(s: &str) -> Result<Section, UnknownSection> {
        Section::ALL
            .into_iter()
            .find(|section| section.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownSection(s.to_owned()))
    }
}

/// Seed 000's layout: every loss rate with every pattern, but only the
/// uncorrelated column at 0 % (a burst of nothing is nothing).
fn seed_table(section: Section, rate: u64, rtt: Duration, size: u64, losses: &[f64]) -> Vec<Cell> {
    let mut cells = Vec::new();
    for &loss in losses {
        for burst in PATTERNS {
            if loss > 0.0 || burst == 1.0 {
                cells.push(Cell::single(section, rate, rtt, loss, burst, size));
            }
        }
    }
    cells
}

/// One path and transfer of the matrix, run with every preset.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// The section the cell belongs to.
    pub section: Section,
    /// Bottleneck rate, bits per second.
    pub rate_bps: u64,
    /// Round-trip propagation delay.
    pub rtt: Duration,
    /// Mean random loss on the data direction.
    pub loss: f64,
    /// Mean loss burst, packets (1: uncorrelated).
    pub burst: f64,
    /// Bytes each flow transfers.
    pub size: u64,
    /// Flows of the same preset sharing the bottleneck.
    pub flows: usize,
    /// Whether the bottleneck marks ECN (CoDel) besides dropping at 1 BDP.
    pub ecn: bool,
}

impl Cell {
    /// One flow over a drop-tail 1-BDP bottleneck.
    fn single(
        section: Section,
        rate: u64,
        rtt: Duration,
        loss: f64,
        burst: f64,
        size: u64,
    ) -> Cell {
        Cell {
            section,
            rate_bps: rate,
            rtt,
            loss,
            burst,
            size,
            flows: 1,
            ecn: false,
        }
    }

    /// The scenario of one run of the cell: `profile` on every flow, the
    /// bound of [`Cell::bound`].
    pub fn scenario(&self, profile: Profile, seed: u64) -> Scenario {
        Scenario {
            seed,
            transport: profile.transport_config(),
            deadline: Some(self.bound()),
            ..self.path()
        }
    }

    /// The cell's path and transfer, with the default transport.
    fn path(&self) -> Scenario {
        Scenario {
            rate_bps: self.rate_bps,
            rtt: self.rtt,
            loss: self.loss,
            burst: self.burst,
            size: self.size,
            flows: self.flows,
            queue: QueueSpec::Bdp(1.0),
            ecn: self.ecn,
            ..Scenario::default()
        }
    }

    /// The ideal completion time T* of one flow (every preset sends
    /// packets of the same size, so it is the same for all).
    pub fn ideal(&self) -> Duration {
        self.path().ideal()
    }

    /// Simulated time after which a run "did not complete": 20 × T*, and
    /// at least 10 s.
    pub fn bound(&self) -> Duration {
        self.ideal().saturating_mul(BOUND_FACTOR).max(MIN_BOUND)
    }

    /// The loss pattern as seed 000 names its columns: `uncorrelated` or
    /// `E=<mean burst>`.
    pub fn pattern(&self) -> String {
        if self.burst <= 1.0 {
            "uncorrelated".to_owned()
        } else {
            format!("E={}", self.burst)
        }
    }

    /// Whether the cell runs `profile`: every preset but two, which would
    /// take minutes of CPU a run there: lt-tcp on the shared drop-tail
    /// bottleneck (it answers ECN marks only, so its flows keep the queue
    /// overflowing), and fectcp in the 100 MB table (each of its repairs
    /// combines a whole block of up to 16 384 symbols, a round trip of them
    /// per block; `docs/benchmarks.md`, "The simulator comparison").
    pub fn runs_profile(&self, profile: Profile) -> bool {
        let flooded_queue = self.flows > 1 && !self.ecn && profile == Profile::LtTcp;
        let whole_block_100mb =
            self.section == Section::LongDelay100Mb && profile == Profile::Fectcp;
        !(flooded_queue || whole_block_100mb)
    }

    /// The bottleneck's queue: `drop-tail` or `ecn`.
    pub fn queue(&self) -> &'static str {
        if self.ecn {
            "ecn"
        } else {
            "drop-tail"
        }
    }

    /// What the cell's table column group is: the pattern in seed 000's
    /// tables, the loss rate in the delay sweep, the RTT in the loss
    /// sweep, the object size in the web section, the queue on the shared
    /// bottleneck.
    pub fn group(&self) -> String {
        match self.section {
            Section::Correlated | Section::LongDelay | Section::LongDelay100Mb => self.pattern(),
            Section::DelaySweep => format!("loss {}", percent(self.loss)),
            Section::LossSweep => format!("RTT {} ms", self.rtt.as_millis()),
            Section::Web => format!("{} KiB, RTT {} ms", self.size / 1024, self.rtt.as_millis()),
            Section::Shared => self.queue().to_owned(),
        }
    }

    /// What the cell's table row is: the RTT in the delay sweep, the loss
    /// rate elsewhere.
    pub fn row(&self) -> String {
        match self.section {
            Section::DelaySweep => format!("{} ms", self.rtt.as_millis()),
            _ => percent(self.loss),
        }
    }

    /// The cell in a few words, for progress lines.
    pub fn label(&self) -> String {
        format!(
            "{} {} Mbit/s {} ms {} {} {} B{}",
            self.section,
            self.rate_bps / 1_000_000,
            self.rtt.as_millis(),
            percent(self.loss),
            self.pattern(),
            self.size,
            match self.flows {
                1 => String::new(),
                n => format!(" ×{n} {}", self.queue()),
            }
        )
    }
}

/// A loss rate as a percentage, without trailing zeros (`0.1 %`, `5 %`).
fn percent(loss: f64) -> String {
    let value = (loss * 1e5).round() / 1e3;
    format!("{value} %")
}

/// Which cells to run with which presets and seeds.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The cells, in the order the results list them.
    pub cells: Vec<Cell>,
    /// The presets every cell runs.
    pub profiles: Vec<Profile>,
    /// Seeds per cell (seeds 1 to N).
    pub seeds: u64,
    /// Seeds per cell of the heavy sections ([`Section::is_heavy`]).
    pub heavy_seeds: u64,
    /// Changes to the repair settings of every preset that reads them
    /// (none by default; see [`Plan::set_repair`]).
    repair: RepairSettings,
}

/// One run: a cell (by index into [`Plan::cells`]), a preset and a seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSpec {
    /// Index of the cell in the plan.
    pub cell: usize,
    /// The preset every flow runs.
    pub profile: Profile,
    /// The scenario's seed.
    pub seed: u64,
}

impl Plan {
    /// The full matrix of `sections`.
    pub fn full(
        sections: &[Section],
        profiles: Vec<Profile>,
        seeds: u64,
        heavy_seeds: u64,
    ) -> Plan {
        Plan {
            cells: sections.iter().flat_map(|s| s.cells()).collect(),
            profiles,
            seeds,
            heavy_seeds,
            repair: RepairSettings::default(),
        }
    }

    /// A few small cells of each of `sections` ([`Section::quick_cells`]).
    pub fn quick(sections: &[Section], profiles: Vec<Profile>, seeds: u64) -> Plan {
        Plan {
            cells: sections.iter().flat_map(|s| s.quick_cells()).collect(),
            profiles,
            seeds,
            heavy_seeds: seeds,
            repair: RepairSettings::default(),
        }
    }

    /// Seeds of `cell`: 1 to [`Plan::seeds`], or to [`Plan::heavy_seeds`]
    /// in a heavy section.
    pub fn seeds_of(&self, cell: &Cell) -> std::ops::RangeInclusive<u64> {
        let n = if cell.section.is_heavy() {
            self.heavy_seeds
        } else {
            self.seeds
        };
        1..=n
    }

    /// The scenario of `spec`: its cell's, with the plan's repair settings
    /// over the preset's where its scheme reads them.
    pub fn scenario(&self, spec: RunSpec) -> Scenario {
        let mut scenario = self.cells[spec.cell].scenario(spec.profile, spec.seed);
        self.repair
            .apply_where_read(&mut scenario.transport)
            .expect("the settings were checked by Plan::set_repair");
        scenario
    }

    /// The changes to the presets' repair settings.
    pub fn repair(&self) -> &RepairSettings {
        &self.repair
    }

    /// Changes the repair settings of every preset whose scheme reads them
    /// (the others run as they are: a comparison of presets applies one
    /// trade to all that can take it). Each value is checked first.
    pub fn set_repair(&mut self, settings: RepairSettings) -> Result<(), ConfigError> {
        settings.apply(&mut TransportConfig::default())?;
        self.repair = settings;
        Ok(())
    }

    /// Every run, cell by cell, preset by preset, seed by seed.
    pub fn runs(&self) -> Vec<RunSpec> {
        let mut runs = Vec::new();
        for (index, cell) in self.cells.iter().enumerate() {
            for &profile in self.profiles.iter().filter(|&&p| cell.runs_profile(p)) {
                for seed in self.seeds_of(cell) {
                    runs.push(RunSpec {
                        cell: index,
                        profile,
                        seed,
                    });
                }
            }
        }
        runs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_tables_have_the_seeds_cells() {
        // 4 loss rates × 4 patterns less the three bursty 0 % cells; 7 × 4 − 3.
        assert_eq!(Section::Correlated.cells().len(), 13);
        assert_eq!(Section::LongDelay.cells().len(), 25);
        assert_eq!(Section::LongDelay100Mb.cells().len(), 25);
        assert!(Section::LongDelay100Mb
            .cells()
            .iter()
            .all(|c| c.size == 100_000_000 && c.rtt == MS(600)));
        assert!(!Section::Correlated
            .cells()
            .iter()
            .any(|c| c.loss == 0.0 && c.burst > 1.0));
    }

    #[test]
    fn the_sweeps_span_the_seeds_ranges() {
        let delay = Section::DelaySweep.cells();
        assert_eq!(delay.iter().map(|c| c.rtt).min(), Some(MS(10)));
        assert_eq!(delay.iter().map(|c| c.rtt).max(), Some(MS(200)));
        let loss = Section::LossSweep.cells();
        assert!(loss.iter().any(|c| c.loss == 0.001));
        assert!(loss.iter().any(|c| c.loss == 0.25));
        assert!(delay
            .iter()
            .chain(&loss)
            .all(|c| c.size == 50_000_000 && c.rate_bps == 10_000_000));
    }

    #[test]
    fn the_shared_bottleneck_has_no_random_loss_and_both_queues() {
        let cells = Section::Shared.cells();
        assert_eq!(cells.len(), 2);
        assert!(cells.iter().all(|c| c.loss == 0.0 && c.flows > 1));
        assert_ne!(cells[0].ecn, cells[1].ecn);
    }

    #[test]
    fn the_plans_repair_settings_reach_every_presets_scenario() {
        let mut plan = Plan::full(
            &[Section::LongDelay],
            vec![Profile::Ltx, Profile::Cubic],
            1,
            1,
        );
        let spec = plan.runs()[0];
        let preset = plan.scenario(spec).transport.repair().delay_per_percent();
        plan.set_repair(RepairSettings {
            delay_per_percent: Some(preset * 4),
            max_repair_span: Some(1024),
            ..RepairSettings::default()
        })
        .unwrap();
        for spec in plan.runs() {
            let repair = *plan.scenario(spec).transport.repair();
            assert_eq!(repair.delay_per_percent(), preset * 4);
            assert_eq!(repair.max_repair_span(), 1024);
        }
        let out_of_range = RepairSettings {
            tail_residual: Some(0.9),
            ..RepairSettings::default()
        };
        assert!(plan.set_repair(out_of_range).is_err());
    }

    #[test]
    fn heavy_sections_take_their_own_seed_count() {
        let plan = Plan::full(
            &[Section::Correlated, Section::LongDelay100Mb],
            vec![Profile::Ltx, Profile::Cubic],
            3,
            1,
        );
        let runs = plan.runs();
        assert_eq!(runs.len(), 13 * 2 * 3 + 25 * 2);
        assert!(runs
            .iter()
            .filter(|r| plan.cells[r.cell].section == Section::LongDelay100Mb)
            .all(|r| r.seed == 1));
    }

    #[test]
    fn fectcp_sits_out_the_100_mb_table_only() {
        let plan = Plan::full(
            &[Section::LongDelay, Section::LongDelay100Mb],
            vec![Profile::Fectcp, Profile::Ltx],
            1,
            1,
        );
        let fectcp: Vec<Section> = plan
            .runs()
            .iter()
            .filter(|r| r.profile == Profile::Fectcp)
            .map(|r| plan.cells[r.cell].section)
            .collect();
        assert_eq!(fectcp.len(), 25);
        assert!(fectcp.iter().all(|&s| s == Section::LongDelay));
        let ltx_100mb = plan
            .runs()
            .iter()
            .filter(|r| {
                r.profile == Profile::Ltx && plan.cells[r.cell].section == Section::LongDelay100Mb
            })
            .count();
        assert_eq!(ltx_100mb, 25);
    }

    #[test]
    fn lt_tcp_shares_only_the_ecn_bottleneck() {
        let plan = Plan::full(&[Section::Shared], vec![Profile::LtTcp, Profile::Ltx], 1, 1);
        let runs: Vec<(bool, Profile)> = plan
            .runs()
            .iter()
            .map(|r| (plan.cells[r.cell].ecn, r.profile))
            .collect();
        assert_eq!(
            runs,
            [
                (false, Profile::Ltx),
                (true, Profile::LtTcp),
                (true, Profile::Ltx)
            ]
        );
    }

    #[test]
    fn the_bound_is_twenty_ideal_times_or_the_floor() {
        let long = &Section::LongDelay100Mb.cells()[0];
        assert_eq!(long.bound(), long.ideal() * 20);
        let web = &Section::Web.quick_cells()[0];
        assert!(web.ideal() * 20 < MIN_BOUND);
        assert_eq!(web.bound(), MIN_BOUND);
    }

    #[test]
    fn sections_parse_by_name() {
        for section in Section::ALL {
            assert_eq!(section.name().parse(), Ok(section));
        }
        assert!("table".parse::<Section>().is_err());
    }
}
