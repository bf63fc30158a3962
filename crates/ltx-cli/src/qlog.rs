//! `--qlog DIR`: where the commands write their qlog files.

use std::path::{Path, PathBuf};

use anyhow::Context;
use ltx_proto::TraceEvent;
use ltx_qlog::{QlogWriter, Vantage};

/// Makes `dir` (and its parents) if it does not exist, so that `--qlog
/// traces` works on a first run; returns it.
pub fn prepare_dir(dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("making the qlog directory {}", dir.display()))?;
    Ok(dir.to_owned())
}

/// Writes a simulated connection's trace, `events` with their times in
/// seconds, as the qlog file `dir/name.sqlog` seen from `vantage`;
/// returns its path.
pub fn write_simulated<'a>(
    dir: &Path,
    name: &str,
    vantage: Vantage,
    events: impl Iterator<Item = (f64, &'a TraceEvent)>,
) -> anyhow::Result<PathBuf> {
    let path = dir.join(format!("{name}.sqlog"));
    let write = || -> std::io::Result<()> {
        let file = std::io::BufWriter::new(std::fs::File::create(&path)?);
        let title = format!("simulated {name}");
        let mut writer = QlogWriter::new(file, &title, vantage, 0.0)?;
        for (at, event) in events {
            writer.event(std::time::Duration::from_secs_f64(at.max(0.0)), event)?;
        }
        writer.finish().map(drop)
    };
    write().with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}
