//! tables.md: per section, the seed's layout (rows × columns) with the
//! best preset of each cell and ltx beside it, then every preset's median
//! T/T* per column group; the shared bottleneck's figures per preset.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ltx_presets::Profile;
use ltx_sim::compare::{best, CellSummary, Plan, Section};

/// ltx is marked where it is more than this much slower than the best.
const MARK_SLOWER: f64 = 1.05;

/// The whole tables.md.
pub(super) fn markdown(plan: &Plan, summaries: &[CellSummary], quick: bool) -> String {
    let mut by_cell: BTreeMap<usize, Vec<&CellSummary>> = BTreeMap::new();
    for s in summaries {
        by_cell.entry(s.cell).or_default().push(s);
    }
    let mut text = String::from(
        "# ltx-bench compare: every preset over the seed matrix\n\n\
         Median T/T* over the seeds of each cell (T* = R + R/2 + S/(C·(1−p)·f)); \
         ∞: most runs did not complete within 20 × T* (at least 10 s). \
         **Bold**: the best preset of the cell; † after ltx: more than 5 % \
         slower than the best.\n",
    );
    if quick {
        text.push_str(
            "\nThe quick subset (`--quick`): 300 kB transfers, two flows on the \
             shared bottleneck; the headings name the full matrix's paths.\n",
        );
    }
    let mut sections: Vec<Section> = Vec::new();
    for cell in &plan.cells {
        if !sections.contains(&cell.section) {
            sections.push(cell.section);
        }
    }
    for section in sections {
        let cells: Vec<usize> = (0..plan.cells.len())
            .filter(|&i| plan.cells[i].section == section)
            .collect();
        let seeds = plan.seeds_of(&plan.cells[cells[0]]).count();
        let _ = write!(
            text,
            "\n## {}\n\n{seeds} seed(s) per cell.\n\n",
            section.title()
        );
        if section == Section::Shared {
            text.push_str(&shared(plan, &cells, &by_cell));
        } else {
            text.push_str(&layout(plan, &cells, &by_cell));
            text.push_str(&per_preset(plan, &cells, &by_cell));
        }
    }
    text
}

/// Labels in the order they first appear.
fn ordered(labels: impl Iterator<Item = String>) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for label in labels {
        if !seen.contains(&label) {
            seen.push(label);
        }
    }
    seen
}

/// A median T/T*, `∞` when infinite.
fn ratio(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}")
    } else {
        "∞".to_owned()
    }
}

/// The section's row label and column group label of its first column.
fn row_label(plan: &Plan, cells: &[usize]) -> &'static str {
    match plan.cells[cells[0]].section {
        Section::DelaySweep => "RTT",
        _ => "loss",
    }
}

/// The seed's layout: rows × groups, each cell the best preset and ltx.
fn layout(plan: &Plan, cells: &[usize], by_cell: &BTreeMap<usize, Vec<&CellSummary>>) -> String {
    let rows = ordered(cells.iter().map(|&i| plan.cells[i].row()));
    let groups = ordered(cells.iter().map(|&i| plan.cells[i].group()));
    let mut text = format!("| {} |", row_label(plan, cells));
    for group in &groups {
        let _ = write!(text, " {group} |");
    }
    text.push_str("\n| --- |");
    text.push_str(&" --- |".repeat(groups.len()));
    text.push('\n');
    for row in &rows {
        let _ = write!(text, "| {row} |");
        for group in &groups {
            let found = cells
                .iter()
                .find(|&&i| plan.cells[i].row() == *row && plan.cells[i].group() == *group);
            let shown = match found.and_then(|i| by_cell.get(i)) {
                None => "N/A".to_owned(),
                Some(summaries) => best_and_ltx(summaries),
            };
            let _ = write!(text, " {shown} |");
        }
        text.push('\n');
    }
    text.push('\n');
    text
}

/// "**best** r, ltx r †" for one cell.
fn best_and_ltx(summaries: &[&CellSummary]) -> String {
    let Some((profile, r)) = best(summaries) else {
        return "none completed".to_owned();
    };
    match summaries.iter().find(|s| s.profile == Profile::Ltx) {
        Some(ltx) if profile != Profile::Ltx => {
            let mark = if ltx.ratio > r * MARK_SLOWER {
                " †"
            } else {
                ""
            };
            format!("**{profile}** {}, ltx {}{mark}", ratio(r), ratio(ltx.ratio))
        }
        _ => format!("**{profile}** {}", ratio(r)),
    }
}

/// One table per column group: rows × presets, median T/T*.
fn per_preset(
    plan: &Plan,
    cells: &[usize],
    by_cell: &BTreeMap<usize, Vec<&CellSummary>>,
) -> String {
    let groups = ordered(cells.iter().map(|&i| plan.cells[i].group()));
    let mut text = String::new();
    for group in groups {
        let _ = write!(
            text,
            "{group}: median T/T* per preset\n\n| {} |",
            row_label(plan, cells)
        );
        for profile in &plan.profiles {
            let _ = write!(text, " {profile} |");
        }
        text.push_str("\n| --- |");
        text.push_str(&" --- |".repeat(plan.profiles.len()));
        text.push('\n');
        for &i in cells.iter().filter(|&&i| plan.cells[i].group() == group) {
            let Some(summaries) = by_cell.get(&i) else {
                continue;
            };
            let cell_best = best(summaries);
            let _ = write!(text, "| {} |", plan.cells[i].row());
            for profile in &plan.profiles {
                let shown = match summaries.iter().find(|s| s.profile == *profile) {
                    None => "–".to_owned(),
                    Some(s) => {
                        let value = ratio(s.ratio);
                        match cell_best {
                            Some((b, _)) if b == *profile => format!("**{value}**"),
                            Some((_, r))
                                if *profile == Profile::Ltx && s.ratio > r * MARK_SLOWER =>
                            {
                                format!("{value} †")
                            }
                            _ => value,
                        }
                    }
                };
                let _ = write!(text, " {shown} |");
            }
            text.push('\n');
        }
        text.push('\n');
    }
    text
}

/// The shared bottleneck: per preset and queue, T/T*, goodput, p95
/// queueing delay, queue loss, Jain's index.
fn shared(plan: &Plan, cells: &[usize], by_cell: &BTreeMap<usize, Vec<&CellSummary>>) -> String {
    let mut text = String::new();
    for &i in cells {
        let cell = &plan.cells[i];
        let rtt_ms = cell.rtt.as_secs_f64() * 1000.0;
        let _ = write!(
            text,
            "{} flows, {} queue (1 BDP){}\n\n\
             | preset | T/T* | goodput (Mbit/s) | queue p95 (ms) | queue p95 / RTT | queue loss | jain |\n\
             | --- | --- | --- | --- | --- | --- | --- |\n",
            cell.flows,
            cell.queue(),
            if cell.ecn { ", CoDel marking ECN" } else { "" }
        );
        let Some(summaries) = by_cell.get(&i) else {
            continue;
        };
        for profile in plan.profiles.iter().filter(|&&p| !cell.runs_profile(p)) {
            let _ = writeln!(
                text,
                "| {profile} | not run: it answers ECN marks only and never backs off from this queue | | | | | |"
            );
        }
        for s in summaries {
            let _ = writeln!(
                text,
                "| {} | {} | {:.1} | {:.1} | {:.2} | {:.3} % | {} |",
                s.profile,
                ratio(s.ratio),
                s.goodput_bps / 1e6,
                s.queue_delay_p95_ms,
                s.queue_delay_p95_ms / rtt_ms,
                s.queue_loss * 100.0,
                s.jain.map_or("–".to_owned(), |j| format!("{j:.3}"))
            );
        }
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use ltx_sim::compare::{summarize, Run, RunSpec};

    use super::*;

    fn run(cell: usize, profile: Profile, ratio: Option<f64>) -> Run {
        Run {
            spec: RunSpec {
                cell,
                profile,
                seed: 1,
            },
            completion_s: ratio,
            ideal_s: 1.0,
            ratio,
            goodput_bps: 1e6,
            overhead: 1.0,
            delay_p50_ms: 0.0,
            delay_p99_ms: 0.0,
            queue_delay_p95_ms: 0.0,
            queue_loss: 0.0,
            random_loss: 0.0,
            jain: None,
            verified: ratio.is_some(),
            error: None,
            simulated_s: 1.0,
        }
    }

    #[test]
    fn the_layout_marks_the_best_and_a_slow_ltx_and_shows_infinity() {
        let plan = Plan::full(
            &[Section::Correlated],
            vec![Profile::Ltx, Profile::Bbr, Profile::Cubic],
            1,
            1,
        );
        // Cell 0: 0 %, bbr best and ltx 10 % slower; cell 1: 5 %
        // uncorrelated, ltx best, cubic did not complete.
        let runs = [
            run(0, Profile::Ltx, Some(1.1)),
            run(0, Profile::Bbr, Some(1.0)),
            run(0, Profile::Cubic, Some(1.2)),
            run(1, Profile::Ltx, Some(1.0)),
            run(1, Profile::Bbr, Some(1.04)),
            run(1, Profile::Cubic, None),
        ];
        let text = markdown(&plan, &summarize(&plan, &runs), false);
        assert!(
            text.contains("| 0 % | **bbr** 1.00, ltx 1.10 † | N/A | N/A | N/A |"),
            "{text}"
        );
        assert!(text.contains("| 5 % | **ltx** 1.00 |"), "{text}");
        assert!(
            text.contains("| 0 % | 1.10 † | **1.00** | 1.20 |"),
            "{text}"
        );
        assert!(text.contains("| 5 % | **1.00** | 1.04 | ∞ |"), "{text}");
    }
}
