//! The forward operands of `ltx tunnel client`: `-L [BIND:]PORT:HOST:HOSTPORT`
//! and `--socks [BIND:]PORT`, as ssh writes them.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use ltx_tunnel::wire::Destination;

/// A local forward: a TCP port on this machine whose connections go to a
/// destination reached from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LocalForward {
    /// Where this machine listens.
    pub(crate) listen: SocketAddr,
    /// Where the server connects each connection to.
    pub(crate) to: Destination,
}

/// Splits at the colons outside brackets (`[::1]:22` is two parts).
fn split_colons(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ':' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// The address to listen on for `BIND`: an IP address (IPv6 in
/// brackets), `localhost`, or `*` for every IPv4 address. Without one,
/// loopback only, as ssh does.
fn parse_bind(bind: Option<&str>) -> Result<IpAddr, String> {
    match bind {
        None | Some("localhost") => Ok(Ipv4Addr::LOCALHOST.into()),
        Some("*") | Some("") => Ok(Ipv4Addr::UNSPECIFIED.into()),
        Some(text) => {
            let bare = text
                .strip_prefix('[')
                .and_then(|t| t.strip_suffix(']'))
                .unwrap_or(text);
            bare.parse().map_err(|_| {
                format!("{text:?} is not an address to listen on (an IP address, localhost or *)")
            })
        }
    }
}

fn parse_port(text: &str) -> Result<u16, String> {
    text.parse()
        .map_err(|_| format!("{text:?} is not a port (0 to 65535)"))
}

/// Parses `[BIND:]PORT:HOST:HOSTPORT`.
pub(crate) fn parse_local_forward(text: &str) -> Result<LocalForward, String> {
    let usage = || {
        format!(
            "{text:?} is not a forward: give [BIND:]PORT:HOST:HOSTPORT \
             (e.g. 8080:intranet:80, 127.0.0.1:2222:10.0.0.5:22, 8443:[fd00::5]:443)"
        )
    };
    let parts = split_colons(text);
    let (bind, port, host, host_port) = match parts[..] {
        [port, host, host_port] => (None, port, host, host_port),
        [bind, port, host, host_port] => (Some(bind), port, host, host_port),
        _ => return Err(usage()),
    };
    let ip = parse_bind(bind).map_err(|e| format!("{}: {e}", usage()))?;
    let port = parse_port(port).map_err(|e| format!("{}: {e}", usage()))?;
    let to: Destination = format!("{host}:{host_port}")
        .parse()
        .map_err(|e| format!("{}: {e}", usage()))?;
    Ok(LocalForward {
        listen: SocketAddr::new(ip, port),
        to,
    })
}

/// Parses `[BIND:]PORT`, the SOCKS front end's address.
pub(crate) fn parse_socks(text: &str) -> Result<SocketAddr, String> {
    let parts = split_colons(text);
    let (bind, port) = match parts[..] {
        [port] => (None, port),
        [bind, port] => (Some(bind), port),
        _ => {
            return Err(format!(
                "{text:?} is not a SOCKS address: give [BIND:]PORT (e.g. 1080 or 127.0.0.1:1080)"
            ))
        }
    };
    Ok(SocketAddr::new(parse_bind(bind)?, parse_port(port)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forward_without_bind_listens_on_loopback_only() {
        let forward = parse_local_forward("8080:intranet:80").unwrap();
        assert_eq!(forward.listen, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(forward.to.to_string(), "intranet:80");
    }

    #[test]
    fn forwards_with_addresses_of_both_families() {
        let forward = parse_local_forward("[::1]:2222:[fd00::5]:22").unwrap();
        assert_eq!(forward.listen, "[::1]:2222".parse().unwrap());
        assert_eq!(forward.to.to_string(), "[fd00::5]:22");
        let everywhere = parse_local_forward("*:2222:10.0.0.5:22").unwrap();
        assert_eq!(everywhere.listen, "0.0.0.0:2222".parse().unwrap());
    }

    #[test]
    fn a_forward_that_is_not_one_says_what_form_it_wants() {
        for bad in [
            "8080",
            "8080:intranet",
            "x:8080:intranet:80",
            "8080:intranet:http",
            "1:2:3:4:5",
        ] {
            let message = parse_local_forward(bad).unwrap_err();
            assert!(message.contains(bad), "{message}");
        }
    }

    #[test]
    fn a_socks_port_alone_listens_on_loopback() {
        assert_eq!(
            parse_socks("1080").unwrap(),
            "127.0.0.1:1080".parse().unwrap()
        );
        assert_eq!(
            parse_socks("0.0.0.0:1080").unwrap(),
            "0.0.0.0:1080".parse().unwrap()
        );
        assert!(parse_socks("a:b:c").is_err());
    }
}
