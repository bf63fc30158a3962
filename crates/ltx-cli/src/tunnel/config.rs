//! `--config FILE`: the TOML files that hold what the flags hold, so that
//! a tunnel runs as a service. Relative paths in a file are relative to
//! the file's directory. A flag given on the command line wins over the
//! file's value; lists (`permit`, forwards) are the file's and the flags'
//! together. Unknown keys are refused, so that a misspelt setting is not
//! silently ignored.
//!
//! ```toml
//! # ltx tunnel server --config server.toml
//! listen = "0.0.0.0:7000"
//! key = "server.key"
//! allow = "clients.txt"
//! permit = ["10.0.0.0/8:22", "db.internal:5432"]
//! max_streams = 256
//! rate_limit = "20mbit"
//! idle_timeout = "5min"
//! drivers = 4                 # threads driving clients; one per core if left out
//!
//! [repair]                    # optional, as --delay-per-percent and the others
//! delay_per_percent = "25ms"
//! expect_loss = "10%"
//! ```
//!
//! ```toml
//! # ltx tunnel client --config client.toml
//! server = "tunnel.example.net:7000"
//! peer = "<the server's public key>"
//! key = "client.key"
//!
//! [[forward]]
//! listen = "127.0.0.1:2222"
//! to = "db.internal:22"
//!
//! [socks]
//! listen = "127.0.0.1:1080"
//! users = "socks-users.txt"   # optional: USERNAME:PASSWORD lines
//! ```

use std::path::{Path, PathBuf};

use anyhow::Context;
use ltx_cli::exit::{Failed, Failure};
use ltx_cli::repair_args::RepairFile;
use serde::Deserialize;

use super::observe::{LogFormat, ObserveFile};

/// The server's file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServerFile {
    pub(crate) listen: Option<String>,
    pub(crate) key: Option<PathBuf>,
    pub(crate) allow: Option<PathBuf>,
    #[serde(default)]
    pub(crate) allow_any_client: bool,
    #[serde(default)]
    pub(crate) permit: Vec<String>,
    #[serde(default)]
    pub(crate) permit_listen: Vec<String>,
    pub(crate) max_streams: Option<usize>,
    pub(crate) rate_limit: Option<String>,
    pub(crate) rate_hint: Option<String>,
    pub(crate) idle_timeout: Option<String>,
    pub(crate) connect_timeout: Option<String>,
    pub(crate) drivers: Option<usize>,
    pub(crate) repair: Option<RepairFile>,
    pub(crate) metrics: Option<String>,
    pub(crate) qlog: Option<PathBuf>,
    pub(crate) stats_interval: Option<String>,
    pub(crate) log_format: Option<LogFormat>,
}

/// The observation settings of either file, which hold the same four keys.
macro_rules! observe_settings {
    ($file:ty) => {
        impl $file {
            /// The observation settings.
            pub(crate) fn observe(&self) -> ObserveFile {
                ObserveFile {
                    metrics: self.metrics.clone(),
                    qlog: self.qlog.clone(),
                    stats_interval: self.stats_interval.clone(),
                    log_format: self.log_format,
                }
            }
        }
    };
}

observe_settings!(ServerFile);

/// One `[[forward]]` table of the client's file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ForwardTable {
    /// `[BIND:]PORT` on this machine.
    pub(crate) listen: String,
    /// `HOST:PORT` reached from the server.
    pub(crate) to: String,
}

/// The `[socks]` table of the client's file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SocksTable {
    /// `[BIND:]PORT` on this machine.
    pub(crate) listen: String,
    /// A file of `USERNAME:PASSWORD` lines, as `--socks-users`.
    pub(crate) users: Option<PathBuf>,
}

/// The client's file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClientFile {
    pub(crate) server: Option<String>,
    pub(crate) peer: Option<String>,
    pub(crate) key: Option<PathBuf>,
    #[serde(default)]
    pub(crate) forward: Vec<ForwardTable>,
    /// `[[remote]]` tables: `listen` on the server, `to` from this machine.
    #[serde(default)]
    pub(crate) remote: Vec<ForwardTable>,
    pub(crate) socks: Option<SocksTable>,
    pub(crate) rate_hint: Option<String>,
    pub(crate) idle_timeout: Option<String>,
    pub(crate) connect_timeout: Option<String>,
    pub(crate) repair: Option<RepairFile>,
    pub(crate) metrics: Option<String>,
    pub(crate) qlog: Option<PathBuf>,
    pub(crate) stats_interval: Option<String>,
    pub(crate) log_format: Option<LogFormat>,
}

observe_settings!(ClientFile);

/// Reads and parses a file: unreadable is a local file error (exit 6),
/// not TOML of the expected shape a usage error (exit 2).
pub(crate) fn load<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the configuration file {}", path.display()))
        .context(Failed(Failure::LocalFile))?;
    toml::from_str(&text)
        .with_context(|| format!("in the configuration file {}", path.display()))
        .context(Failed(Failure::Usage))
}

/// A path from a file, relative to the file's directory.
pub(crate) fn beside(config: &Path, path: &Path) -> PathBuf {
    match config.parent() {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_files_parse() {
        let server: ServerFile = toml::from_str(
            r#"
            listen = "0.0.0.0:7000"
            key = "server.key"
            allow = "clients.txt"
            permit = ["10.0.0.0/8:22", "db.internal:5432"]
            max_streams = 256
            idle_timeout = "5min"
            drivers = 4
            [repair]
            delay_per_percent = "25ms"
            expect_loss = "10%"
            "#,
        )
        .unwrap();
        assert_eq!(server.permit.len(), 2);
        assert_eq!(server.drivers, Some(4));
        let repair = server.repair.expect("a repair table");
        assert_eq!(repair.expect_loss.as_deref(), Some("10%"));
        let client: ClientFile = toml::from_str(
            r#"
            server = "tunnel.example.net:7000"
            peer = "00"
            key = "client.key"
            [[forward]]
            listen = "127.0.0.1:2222"
            to = "db.internal:22"
            [[forward]]
            listen = "8080"
            to = "intranet:80"
            [socks]
            listen = "127.0.0.1:1080"
            "#,
        )
        .unwrap();
        assert_eq!(client.forward.len(), 2);
        assert_eq!(client.socks.unwrap().listen, "127.0.0.1:1080");
    }

    #[test]
    fn a_misspelt_key_is_refused() {
        let error = toml::from_str::<ServerFile>("permits = [\"*\"]").unwrap_err();
        assert!(error.to_string().contains("permits"), "{error}");
    }

    #[test]
    fn relative_paths_are_beside_the_file() {
        let config = Path::new("/etc/ltx/server.toml");
        assert_eq!(
            beside(config, Path::new("server.key")),
            Path::new("/etc/ltx/server.key")
        );
        assert_eq!(beside(config, Path::new("/k")), Path::new("/k"));
    }
}
