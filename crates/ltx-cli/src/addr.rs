//! The address arguments of the commands, with errors that say what form
//! they want.

use std::net::{Ipv4Addr, SocketAddr};

/// An address to listen on: `ADDRESS:PORT` (`0.0.0.0:7000`,
/// `[::]:7000`, `127.0.0.1:7000`) or a bare port, which listens on every
/// IPv4 address.
pub(crate) fn parse_listen(input: &str) -> Result<SocketAddr, String> {
    let input = input.trim();
    if let Ok(port) = input.parse::<u16>() {
        return Ok(SocketAddr::from((Ipv4Addr::UNSPECIFIED, port)));
    }
    input.parse().map_err(|_| {
        format!(
            "{input:?} is not an address to listen on: give ADDRESS:PORT \
             (e.g. 0.0.0.0:7000, [::]:7000 or 127.0.0.1:7000) or a port alone (7000)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_alone_listens_everywhere_and_a_bad_address_says_what_form_it_wants() {
        assert_eq!(parse_listen("7001"), Ok("0.0.0.0:7001".parse().unwrap()));
        assert_eq!(parse_listen("[::]:7001"), Ok("[::]:7001".parse().unwrap()));
        let message = parse_listen("localhost:7001").unwrap_err();
        assert!(message.contains("ADDRESS:PORT"), "{message}");
        assert!(parse_listen("70000").is_err());
    }
}
