//! TUN devices opened inside a namespace, and the counters the kernel
//! keeps for them there.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;

use crate::namespace::NetNamespace;
use crate::preflight::tun_device;
use crate::EmuError;

/// The kernel's limit on an interface name, its terminating zero included.
const IFNAMSIZ: usize = 16;

/// A TUN device inside a namespace: the file descriptor the forwarder
/// reads and writes whole IP packets on, and a view of the namespace's
/// interface counters.
#[derive(Debug)]
pub(crate) struct Tun {
    /// Non-blocking, without packet information: one read, one IP packet.
    pub(crate) fd: OwnedFd,
    /// The namespace's `/proc/net/dev`, opened from inside it: reading it
    /// again shows that namespace's counters whichever thread reads.
    counters: File,
    name: String,
}

/// The counters of one interface, from `/proc/net/dev`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InterfaceCounters {
    /// Packets the interface handed to its namespace (written by the
    /// forwarder).
    pub rx_packets: u64,
    /// Of those, packets the namespace's stack dropped.
    pub rx_dropped: u64,
    /// Packets the namespace sent into the interface.
    pub tx_packets: u64,
    /// Of those, packets dropped because the TUN queue was full: the
    /// forwarder did not read them in time.
    pub tx_dropped: u64,
}

impl Tun {
    /// Creates the TUN device `name` inside `namespace`.
    pub(crate) fn open(namespace: &NetNamespace, name: &str) -> Result<Tun, EmuError> {
        let failed = |error: io::Error| EmuError::Tun {
            namespace: namespace.name().to_owned(),
            error,
        };
        if name.len() >= IFNAMSIZ {
            return Err(failed(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "interface name {name:?} is longer than {} bytes",
                    IFNAMSIZ - 1
                ),
            )));
        }
        let (fd, counters) = namespace
            .run_inside(|| -> io::Result<(OwnedFd, File)> {
                let file = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
                    .open(tun_device())?;
                attach(&file, name)?;
                let counters = File::open("/proc/thread-self/net/dev")?;
                Ok((file.into(), counters))
            })?
            .map_err(failed)?;
        Ok(Tun {
            fd,
            counters,
            name: name.to_owned(),
        })
    }

    /// The interface's counters now.
    pub(crate) fn counters(&mut self) -> io::Result<InterfaceCounters> {
        let mut text = String::new();
        self.counters.seek(SeekFrom::Start(0))?;
        self.counters.read_to_string(&mut text)?;
        parse_counters(&text, &self.name).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("no counters for {} in /proc/net/dev", self.name),
            )
        })
    }
}

/// Makes `file`, an open TUN control device, the TUN interface `name`
/// (layer 3, no packet-information prefix).
fn attach(file: &File, name: &str) -> io::Result<()> {
    // SAFETY: `ifreq` is plain old data, for which all zeroes is valid.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(name.bytes()) {
        *slot = byte as libc::c_char;
    }
    request.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes one `ifreq`, which `request` is,
    // alive for the call; the descriptor is open.
    let result = unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF, &mut request) };
    if result < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The counters of interface `name` in the text of `/proc/net/dev`.
fn parse_counters(text: &str, name: &str) -> Option<InterfaceCounters> {
    text.lines().find_map(|line| {
        let (interface, fields) = line.split_once(':')?;
        if interface.trim() != name {
            return None;
        }
        // Receive: bytes packets errs drop fifo frame compressed multicast;
        // transmit: bytes packets errs drop fifo colls carrier compressed.
        let fields: Vec<u64> = fields
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        Some(InterfaceCounters {
            rx_packets: *fields.get(1)?,
            rx_dropped: *fields.get(3)?,
            tx_packets: *fields.get(9)?,
            tx_dropped: *fields.get(11)?,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_read_from_the_interfaces_line() {
        let text = "\
Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0
  ltx0: 1500000    1000    0    7    0     0          0         0  3000000    2000    0   42    0     0       0          0
";
        assert_eq!(
            parse_counters(text, "ltx0"),
            Some(InterfaceCounters {
                rx_packets: 1000,
                rx_dropped: 7,
                tx_packets: 2000,
                tx_dropped: 42,
            })
        );
        assert_eq!(parse_counters(text, "ltx"), None);
        assert_eq!(parse_counters("ltx0: 1 2 x", "ltx0"), None);
    }
}
