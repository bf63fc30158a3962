//! Each connection's trace as a qlog file, when the endpoint is given a
//! directory for them ([`EndpointConfig::qlog_dir`](crate::EndpointConfig)).

use std::fs::File;
use std::io::{self, BufWriter};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use ltx_proto::{CloseReason, Side, TraceEvent};
use ltx_qlog::{QlogWriter, Vantage};

/// One connection's open qlog file.
#[derive(Debug)]
pub(crate) struct QlogFile {
    writer: QlogWriter<BufWriter<File>>,
    /// The instant the file's times count from.
    start: Instant,
    path: PathBuf,
}

impl QlogFile {
    /// Creates `dir/<unix ms>-<pid>-<side>-<n>.sqlog` for connection
    /// number `n` of this endpoint, started at `now`, and writes its
    /// header and start.
    pub(crate) fn create(
        dir: &Path,
        n: u64,
        side: Side,
        local: SocketAddr,
        remote: SocketAddr,
        now: Instant,
    ) -> io::Result<QlogFile> {
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let (vantage, side_name) = match side {
            Side::Client => (Vantage::Client, "client"),
            Side::Server => (Vantage::Server, "server"),
        };
        let ms = since_epoch.as_millis();
        let path = dir.join(format!("{ms}-{}-{side_name}-{n}.sqlog", std::process::id()));
        let file = BufWriter::with_capacity(64 << 10, File::create_new(&path)?);
        let title = format!("ltx {side_name} {local} ↔ {remote}");
        let reference = since_epoch.as_secs_f64() * 1e3;
        let mut writer = QlogWriter::new(file, &title, vantage, reference)?;
        writer.connection_started(std::time::Duration::ZERO, Some(local), remote)?;
        Ok(QlogFile {
            writer,
            start: now,
            path,
        })
    }

    /// Writes `event`, seen at `now`.
    pub(crate) fn event(&mut self, now: Instant, event: &TraceEvent) -> io::Result<()> {
        self.writer
            .event(now.saturating_duration_since(self.start), event)
    }

    /// Writes the connection's end at `now` and flushes the file.
    pub(crate) fn closed(&mut self, now: Instant, reason: &CloseReason) -> io::Result<()> {
        let at = now.saturating_duration_since(self.start);
        self.writer.connection_closed(at, reason)?;
        io::Write::flush(self.writer.get_mut())
    }

    /// Where the file is.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}
