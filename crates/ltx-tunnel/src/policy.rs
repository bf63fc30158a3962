//! Which destinations a tunnel server connects to: none unless a permit
//! rule names them. A server is never an open proxy by accident; `*`
//! permits everything, and must be written out.
//!
//! A rule is `TARGET:PORTS`, or `*` alone for every destination:
//!
//! - `TARGET` is a domain name (`db.internal`, matched exactly, ignoring
//!   case), a suffix of names (`*.example.com`: every name below it, not
//!   the name itself), an address (`10.0.0.5`, `[::1]`), a network in CIDR
//!   notation (`10.0.0.0/8`, `[fd00::/8]`), or `*` (any host);
//! - `PORTS` is a port (`22`), a range (`8000-8099`) or `*`.
//!
//! A destination given as an address is permitted if an address or
//! network rule holds it. A destination given as a name is permitted if a
//! name rule matches it; the server then connects to whatever the name
//! resolves to. Otherwise its addresses are looked up and only those that
//! an address or network rule holds are used, so that a name cannot lead
//! past the address rules (a name that resolves to 127.0.0.1 does not
//! reach the server's own services unless 127.0.0.1 is permitted).
//!
//! ```
//! use ltx_tunnel::policy::{Decision, Policy};
//!
//! let policy = Policy::new(vec!["10.0.0.0/8:22".parse()?, "git.example.com:443".parse()?]);
//! assert!(matches!(policy.decide(&"10.1.2.3:22".parse()?), Decision::Connect(_)));
//! assert_eq!(policy.decide(&"10.1.2.3:80".parse()?), Decision::Denied);
//! assert_eq!(policy.decide(&"git.example.com:443".parse()?), Decision::ResolveAny);
//! // Another name may resolve into 10.0.0.0/8; only those addresses are used.
//! assert_eq!(policy.decide(&"build.internal:22".parse()?), Decision::ResolveThenCheck);
//! assert!(!policy.permits_address("127.0.0.1:22".parse()?));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use crate::wire::{Destination, DomainName, Host};

/// Why text is not a permit rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PermitError {
    /// No `:PORTS` part.
    #[error("{0:?} has no port: write HOST:PORT, CIDR:PORT or '*' (a port may be N, N-M or *)")]
    NoPort(String),
    /// A port part that is not `N`, `N-M` (with N ≤ M) or `*`.
    #[error("{0:?} is not a port, a range N-M or *")]
    BadPorts(String),
    /// A prefix longer than the address.
    #[error("{0:?}: the prefix length is beyond the address's bits")]
    BadPrefix(String),
    /// A network whose address has bits set past its prefix.
    #[error("{given:?} has bits set past its prefix; the network is {network}")]
    HostBitsSet {
        /// The rule as written.
        given: String,
        /// The network meant, probably.
        network: String,
    },
    /// An IPv6 address written without brackets.
    #[error("{0:?}: write an IPv6 address or network in brackets, as [fd00::/8]:443")]
    UnbracketedIpv6(String),
    /// A host that is neither an address nor a name.
    #[error("{given:?} is not an address, a network or a name: {why}")]
    BadHost {
        /// The host as written.
        given: String,
        /// Why it is not a name.
        why: crate::wire::DestinationError,
    },
}

/// The ports a rule covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ports {
    /// Every port.
    Any,
    /// The ports from the first to the second, both included.
    Range(u16, u16),
}

impl Ports {
    fn contains(self, port: u16) -> bool {
        match self {
            Ports::Any => true,
            Ports::Range(low, high) => (low..=high).contains(&port),
        }
    }
}

impl FromStr for Ports {
    type Err = PermitError;

    fn from_str(text: &str) -> Result<Ports, PermitError> {
        let bad = || PermitError::BadPorts(text.to_owned());
        if text == "*" {
            return Ok(Ports::Any);
        }
        let (low, high) = text.split_once('-').unwrap_or((text, text));
        let low: u16 = low.parse().map_err(|_| bad())?;
        let high: u16 = high.parse().map_err(|_| bad())?;
        if low > high {
            return Err(bad());
        }
        Ok(Ports::Range(low, high))
    }
}

impl fmt::Display for Ports {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ports::Any => f.write_str("*"),
            Ports::Range(low, high) if low == high => write!(f, "{low}"),
            Ports::Range(low, high) => write!(f, "{low}-{high}"),
        }
    }
}

/// The hosts a rule covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hosts {
    /// Every host, named or not.
    Any,
    /// One name, exactly.
    Name(DomainName),
    /// Every name below this one (`*.example.com`).
    Below(DomainName),
    /// The addresses of a network: its first address (host bits zero)
    /// and the prefix length. A single address is a full-length prefix.
    Network(IpAddr, u8),
}

impl Hosts {
    fn holds_name(&self, name: &DomainName) -> bool {
        match self {
            Hosts::Any => true,
            Hosts::Name(n) => n == name,
            Hosts::Below(parent) => name
                .as_str()
                .strip_suffix(parent.as_str())
                .is_some_and(|head| head.ends_with('.')),
            Hosts::Network(..) => false,
        }
    }

    fn holds_address(&self, ip: IpAddr) -> bool {
        match self {
            Hosts::Any => true,
            Hosts::Network(network, prefix) => mask(ip.to_canonical(), *prefix) == Some(*network),
            Hosts::Name(_) | Hosts::Below(_) => false,
        }
    }

    fn is_address_rule(&self) -> bool {
        matches!(self, Hosts::Any | Hosts::Network(..))
    }
}

/// `ip` with the bits past `prefix` cleared; `None` if the prefix is
/// longer than the address.
fn mask(ip: IpAddr, prefix: u8) -> Option<IpAddr> {
    let prefix = u32::from(prefix);
    match ip {
        IpAddr::V4(v4) if prefix <= 32 => {
            let kept = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
            Some(IpAddr::from((u32::from(v4) & kept).to_be_bytes()))
        }
        IpAddr::V6(v6) if prefix <= 128 => {
            let kept = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
            Some(IpAddr::from((u128::from(v6) & kept).to_be_bytes()))
        }
        _ => None,
    }
}

/// One permit rule: hosts and ports. See the [module](self) for the
/// syntax.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermitRule {
    /// The hosts it covers.
    pub hosts: Hosts,
    /// The ports it covers.
    pub ports: Ports,
}

impl FromStr for PermitRule {
    type Err = PermitError;

    fn from_str(text: &str) -> Result<PermitRule, PermitError> {
        let text = text.trim();
        if text == "*" {
            return Ok(PermitRule {
                hosts: Hosts::Any,
                ports: Ports::Any,
            });
        }
        let (host, ports) = text
            .rsplit_once(':')
            .ok_or_else(|| PermitError::NoPort(text.to_owned()))?;
        let ports = ports.parse()?;
        let bracketed = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
        if bracketed.is_none() && host.contains(':') {
            return Err(PermitError::UnbracketedIpv6(text.to_owned()));
        }
        let host = bracketed.unwrap_or(host);
        let hosts = if host == "*" {
            Hosts::Any
        } else if let Some(parent) = host.strip_prefix("*.") {
            Hosts::Below(DomainName::new(parent).map_err(|why| PermitError::BadHost {
                given: host.to_owned(),
                why,
            })?)
        } else if let Some((address, prefix)) = host.split_once('/') {
            let bad_prefix = || PermitError::BadPrefix(text.to_owned());
            let ip = address
                .parse::<IpAddr>()
                .map_err(|_| PermitError::BadHost {
                    given: host.to_owned(),
                    why: crate::wire::DestinationError::BadCharacter(b'/'),
                })?
                .to_canonical();
            let prefix: u8 = prefix.parse().map_err(|_| bad_prefix())?;
            let network = mask(ip, prefix).ok_or_else(bad_prefix)?;
            if network != ip {
                return Err(PermitError::HostBitsSet {
                    given: text.to_owned(),
                    network: format!("{}:{ports}", Hosts::Network(network, prefix)),
                });
            }
            Hosts::Network(network, prefix)
        } else if let Ok(ip) = host.parse::<IpAddr>() {
            let ip = ip.to_canonical();
            Hosts::Network(ip, if ip.is_ipv4() { 32 } else { 128 })
        } else {
            Hosts::Name(DomainName::new(host).map_err(|why| PermitError::BadHost {
                given: host.to_owned(),
                why,
            })?)
        };
        Ok(PermitRule { hosts, ports })
    }
}

impl fmt::Display for Hosts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Hosts::Any => f.write_str("*"),
            Hosts::Name(name) => write!(f, "{name}"),
            Hosts::Below(name) => write!(f, "*.{name}"),
            Hosts::Network(IpAddr::V4(ip), 32) => write!(f, "{ip}"),
            Hosts::Network(IpAddr::V6(ip), 128) => write!(f, "[{ip}]"),
            Hosts::Network(IpAddr::V4(ip), prefix) => write!(f, "{ip}/{prefix}"),
            Hosts::Network(IpAddr::V6(ip), prefix) => write!(f, "[{ip}/{prefix}]"),
        }
    }
}

impl fmt::Display for PermitRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.hosts, self.ports) {
            (Hosts::Any, Ports::Any) => f.write_str("*"),
            (hosts, ports) => write!(f, "{hosts}:{ports}"),
        }
    }
}

/// What the server does with a requested destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Connect to this address.
    Connect(SocketAddr),
    /// A permitted name: resolve it and connect to any of its addresses.
    ResolveAny,
    /// A name no name rule permits: resolve it and connect only to the
    /// addresses [`Policy::permits_address`] allows.
    ResolveThenCheck,
    /// Refuse it.
    Denied,
}

/// A server's permit rules. The empty policy denies everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    rules: Vec<PermitRule>,
}

impl Policy {
    /// A policy of these rules.
    pub fn new(rules: Vec<PermitRule>) -> Policy {
        Policy { rules }
    }

    /// The rules.
    pub fn rules(&self) -> &[PermitRule] {
        &self.rules
    }

    /// What to do with a request for `destination`.
    pub fn decide(&self, destination: &Destination) -> Decision {
        let port = destination.port;
        let ports = self.rules.iter().filter(|r| r.ports.contains(port));
        match &destination.host {
            Host::Ip(ip) => {
                let address = SocketAddr::new(*ip, port);
                if self.permits_address(address) {
                    Decision::Connect(address)
                } else {
                    Decision::Denied
                }
            }
            Host::Domain(name) => {
                let mut decision = Decision::Denied;
                for rule in ports {
                    if rule.hosts.holds_name(name) {
                        return Decision::ResolveAny;
                    }
                    if rule.hosts.is_address_rule() {
                        decision = Decision::ResolveThenCheck;
                    }
                }
                decision
            }
        }
    }

    /// Whether an address and port is permitted by an address or network
    /// rule (an IPv4-mapped IPv6 address counts as its IPv4 address).
    pub fn permits_address(&self, address: SocketAddr) -> bool {
        self.rules
            .iter()
            .any(|r| r.ports.contains(address.port()) && r.hosts.holds_address(address.ip()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(rules: &[&str]) -> Policy {
        Policy::new(rules.iter().map(|r| r.parse().unwrap()).collect())
    }

    fn decide(policy: &Policy, destination: &str) -> Decision {
        policy.decide(&destination.parse().unwrap())
    }

    #[test]
    fn with_no_rule_nothing_is_permitted() {
        let none = Policy::default();
        assert_eq!(decide(&none, "127.0.0.1:22"), Decision::Denied);
        assert_eq!(decide(&none, "localhost:22"), Decision::Denied);
    }

    #[test]
    fn a_star_permits_everything() {
        let all = policy(&["*"]);
        assert!(matches!(decide(&all, "127.0.0.1:22"), Decision::Connect(_)));
        assert_eq!(decide(&all, "anything.example:1"), Decision::ResolveAny);
    }

    #[test]
    fn a_network_holds_its_addresses_and_not_the_next_one() {
        let net = policy(&["10.0.0.0/8:22", "[fd00::/8]:443"]);
        assert!(net.permits_address("10.255.255.255:22".parse().unwrap()));
        assert!(!net.permits_address("11.0.0.0:22".parse().unwrap()));
        assert!(!net.permits_address("9.255.255.255:22".parse().unwrap()));
        assert!(!net.permits_address("10.0.0.1:23".parse().unwrap()));
        assert!(net.permits_address("[fdff::1]:443".parse().unwrap()));
        assert!(!net.permits_address("[fe00::]:443".parse().unwrap()));
        // An IPv4-mapped address is its IPv4 address.
        assert!(net.permits_address("[::ffff:10.0.0.1]:22".parse().unwrap()));
    }

    #[test]
    fn port_ranges_hold_both_ends_and_nothing_past_them() {
        let range = policy(&["127.0.0.1:8000-8099"]);
        for (port, permitted) in [(7999, false), (8000, true), (8099, true), (8100, false)] {
            let address = SocketAddr::from(([127, 0, 0, 1], port));
            assert_eq!(range.permits_address(address), permitted, "{port}");
        }
    }

    #[test]
    fn a_name_rule_permits_the_name_but_not_an_address_it_resolves_to() {
        let named = policy(&["db.internal:5432", "*.example.com:443"]);
        assert_eq!(decide(&named, "DB.internal:5432"), Decision::ResolveAny);
        assert_eq!(decide(&named, "db.internal:5433"), Decision::Denied);
        assert_eq!(decide(&named, "a.b.example.com:443"), Decision::ResolveAny);
        // The suffix covers names below it, not itself nor look-alikes.
        assert_eq!(decide(&named, "example.com:443"), Decision::Denied);
        assert_eq!(decide(&named, "badexample.com:443"), Decision::Denied);
        assert!(!named.permits_address("127.0.0.1:5432".parse().unwrap()));
    }

    #[test]
    fn a_name_no_name_rule_holds_is_checked_by_its_addresses() {
        let mixed = policy(&["10.0.0.0/8:22", "db.internal:5432"]);
        assert_eq!(
            decide(&mixed, "build.internal:22"),
            Decision::ResolveThenCheck
        );
        // No address rule for that port: refused before any look-up.
        assert_eq!(decide(&mixed, "build.internal:80"), Decision::Denied);
    }

    #[test]
    fn rules_read_back_as_written() {
        for rule in [
            "*",
            "*:443",
            "10.0.0.0/8:22",
            "10.0.0.5:22",
            "[::1]:8000-8099",
            "[fd00::/8]:*",
            "db.internal:5432",
            "*.example.com:443",
        ] {
            assert_eq!(rule.parse::<PermitRule>().unwrap().to_string(), rule);
        }
    }

    #[test]
    fn a_rule_that_is_not_one_says_what_to_write() {
        assert!(matches!(
            "db.internal".parse::<PermitRule>(),
            Err(PermitError::NoPort(_))
        ));
        assert!(matches!(
            "db:99999".parse::<PermitRule>(),
            Err(PermitError::BadPorts(_))
        ));
        assert!(matches!(
            "db:90-80".parse::<PermitRule>(),
            Err(PermitError::BadPorts(_))
        ));
        assert!(matches!(
            "10.0.0.0/33:1".parse::<PermitRule>(),
            Err(PermitError::BadPrefix(_))
        ));
        assert!(matches!(
            "::1:22".parse::<PermitRule>(),
            Err(PermitError::UnbracketedIpv6(_))
        ));
        let Err(PermitError::HostBitsSet { network, .. }) = "10.1.2.3/8:22".parse::<PermitRule>()
        else {
            panic!("host bits not caught");
        };
        assert_eq!(network, "10.0.0.0/8:22");
        assert!(matches!(
            "a b:22".parse::<PermitRule>(),
            Err(PermitError::BadHost { .. })
        ));
    }
}
