//! What the emulator needs from the machine, checked before anything is
//! created so that a refusal says exactly what is missing.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use thiserror::Error;

/// Where the TUN driver's control device lives.
const TUN_DEVICE: &str = "/dev/net/tun";
/// This process's network namespace: present when the kernel has them.
const OWN_NAMESPACE: &str = "/proc/self/ns/net";
/// Where iproute2 is looked for besides `PATH`: `sbin` is often not on a
/// user's `PATH`.
const IP_FALLBACKS: [&str; 4] = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"];

/// Something the emulator needs that this machine or process lacks.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Missing {
    /// Not running as root.
    #[error("root: creating network namespaces and TUN devices needs root (running as uid {uid})")]
    Root {
        /// The effective user id.
        uid: u32,
    },
    /// The kernel has no network namespaces.
    #[error("network namespaces: {OWN_NAMESPACE} does not exist (kernel without CONFIG_NET_NS?)")]
    Namespaces,
    /// No TUN driver.
    #[error("the TUN driver: {TUN_DEVICE} does not exist (load it with `modprobe tun`)")]
    Tun,
    /// No iproute2.
    #[error("iproute2: no `ip` command on PATH or in /usr/sbin, /sbin (install iproute2)")]
    Ip,
}

/// Everything missing, in the order of [`Missing`]; empty when the
/// emulator can run.
pub fn missing() -> Vec<Missing> {
    let mut missing = Vec::new();
    let uid = rustix::process::geteuid().as_raw();
    if uid != 0 {
        missing.push(Missing::Root { uid });
    }
    if !Path::new(OWN_NAMESPACE).exists() {
        missing.push(Missing::Namespaces);
    }
    if !Path::new(TUN_DEVICE).exists() {
        missing.push(Missing::Tun);
    }
    if find_ip().is_none() {
        missing.push(Missing::Ip);
    }
    missing
}

/// The `ip` command to run: its full path if found, else plain `ip`.
pub(crate) fn ip_command() -> &'static Path {
    static IP: OnceLock<PathBuf> = OnceLock::new();
    IP.get_or_init(|| find_ip().unwrap_or_else(|| PathBuf::from("ip")))
}

fn find_ip() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("ip"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    on_path
        .into_iter()
        .chain(IP_FALLBACKS.iter().map(PathBuf::from))
        .find(|candidate| candidate.is_file())
}

/// The TUN control device's path.
pub(crate) fn tun_device() -> &'static Path {
    Path::new(TUN_DEVICE)
}
