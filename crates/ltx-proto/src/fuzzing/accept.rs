//! A server's admission of first packets under arbitrary clients, floods,
//! replays and forged cookies.

use super::connection::canonical;
use super::pair::{DRAIN_LIMIT, PATH_CAPACITY};
use crate::accept::packet::{InitialDatagram, RetryPacket, MAX_COOKIE_LEN};
use crate::accept::{AcceptStats, Acceptor, CookieError, Decision, Refusal, ServerLoad};
use crate::config::{AcceptConfig, RetryPolicy};
use crate::connection::MIN_INITIAL;
use crate::protection::{PacketProtection, PlainProtection};
use crate::wire::{ConnectionId, Header, PacketNumber, PacketType, TruncatedPacketNumber, VarInt};
use crate::{Connection, EcnCodepoint, TransportConfig, AMPLIFICATION_FACTOR};
use ltx_coding::fuzzing::FuzzInput as Input;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

/// A source address the input picks: one of a few IPv4 or IPv6 hosts and
/// ports (so that addresses repeat), the IPv4-mapped form of one, or any
/// address at all.
pub(super) fn source_address(input: &mut Input<'_>) -> SocketAddr {
    let pick = input.u8();
    let host = pick >> 4;
    let port = 4000 + u16::from(pick >> 2 & 3);
    match pick & 3 {
        0 => SocketAddr::new(Ipv4Addr::new(192, 0, 2, host).into(), port),
        1 => SocketAddr::new(
            Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, u16::from(host)).into(),
            port,
        ),
        2 => SocketAddr::new(Ipv4Addr::new(192, 0, 2, host).to_ipv6_mapped().into(), port),
        _ => {
            let bits = input.u64();
            if bits & 1 == 0 {
                SocketAddr::new(Ipv4Addr::from((bits >> 16) as u32).into(), bits as u16)
            } else {
                let high = u128::from(input.u64()) << 64;
                SocketAddr::new(Ipv6Addr::from(high | u128::from(bits)).into(), bits as u16)
            }
        }
    }
}

/// The `n`th address of a spoofed flood: every one distinct, IPv4 and
/// IPv6 in turn.
pub(super) fn flood_address(n: u32) -> SocketAddr {
    if n.is_multiple_of(2) {
        SocketAddr::new(
            Ipv4Addr::from(0x0a00_0000 | n).into(),
            1024 + (n % 60_000) as u16,
        )
    } else {
        SocketAddr::new(
            Ipv6Addr::from(0x2001_0db8_ffff_u128 << 80 | u128::from(n)).into(),
            (n % 60_000) as u16 + 1024,
        )
    }
}

/// A plain-layer Initial to `dcid`, padded with zeros to `len` bytes (or
/// left at its header and checksum if that is longer).
pub(super) fn forged_initial(dcid: ConnectionId, number: u64, len: usize) -> Vec<u8> {
    let mut packet = Vec::new();
    let number = PacketNumber(number & VarInt::MAX.into_inner());
    Header {
        packet_type: PacketType::Initial,
        key_phase: false,
        dcid,
        number: TruncatedPacketNumber::whole(number),
    }
    .emit(&mut packet);
    let header_len = packet.len();
    packet.resize(len.saturating_sub(4).max(header_len), 0);
    PlainProtection.seal(number.0, header_len, &mut packet);
    packet
}

/// A cookie the acceptor sent: for whom, and until when.
#[derive(Debug, Clone, Copy)]
pub(super) struct Issued {
    pub(super) to: (Ipv6Addr, u16),
    pub(super) dcid: ConnectionId,
    pub(super) expiry: Instant,
}

/// A connection the driver made from an accepted Initial.
pub(super) struct Admitted {
    pub(super) from: SocketAddr,
    pub(super) dcid: ConnectionId,
    /// Finished its handshake (or, without a connection, was told so).
    pub(super) complete: bool,
    /// The server connection, for the first few admitted: it answers the
    /// client within the anti-amplification limit.
    pub(super) server: Option<Connection>,
}

/// A genuine client and where it sends from.
pub(super) struct AcceptClient {
    pub(super) conn: Connection,
    pub(super) from: SocketAddr,
    /// Datagrams it sent, for replays.
    pub(super) sent: Vec<Vec<u8>>,
}

/// Server connections the driver makes of admitted Initials at most; the
/// others exist only as counts.
pub(super) const MAX_SERVERS: usize = 4;

/// Spoofed datagrams one flood sends at most.
pub(super) const MAX_FLOOD: u32 = 64;

/// What a run of [`accept`] came to, so that tests can check the driver
/// reaches the decisions that matter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AcceptOutcome {
    /// The acceptor's counters at the end.
    pub stats: AcceptStats,
    /// Retries a genuine client followed.
    pub retries_followed: u64,
    /// Genuine clients that ended established.
    pub clients_established: usize,
}

/// The server's side of [`accept`]: the acceptor, the connections it
/// admitted, and what the driver expects of both.
pub(super) struct AcceptRun {
    pub(super) acceptor: Acceptor,
    pub(super) config: AcceptConfig,
    pub(super) now: Instant,
    pub(super) admitted: Vec<Admitted>,
    /// Half-open handshakes of other clients, as the load the input sets.
    pub(super) other_half_open: usize,
    pub(super) issued: HashMap<Vec<u8>, Issued>,
    /// Per address: bytes received from it, and bytes sent to it before
    /// it was proved.
    pub(super) received: HashMap<(Ipv6Addr, u16), u64>,
    pub(super) sent_unproved: HashMap<(Ipv6Addr, u16), u64>,
    /// What the acceptor's counters must be.
    pub(super) expected: AcceptStats,
    /// Datagrams from the server to each address, oldest first.
    pub(super) to_address: Vec<(SocketAddr, Vec<u8>)>,
}

impl AcceptRun {
    pub(super) fn load(&self, from: SocketAddr) -> ServerLoad {
        let ip = canonical(from).0;
        ServerLoad {
            half_open: self.other_half_open + self.admitted.iter().filter(|a| !a.complete).count(),
            from_same_ip: self
                .admitted
                .iter()
                .filter(|a| canonical(a.from).0 == ip)
                .count(),
        }
    }

    /// What the acceptor must decide, as a refusal or the kind of
    /// decision: `Ok(None)` a retry, `Ok(Some(validated))` an accept.
    pub(super) fn expect(
        &self,
        from: SocketAddr,
        datagram: &[u8],
        load: ServerLoad,
    ) -> Result<Option<bool>, Refusal> {
        let initial = InitialDatagram::parse(datagram).ok_or(Refusal::NotInitial)?;
        if datagram.len() < MIN_INITIAL {
            return Err(Refusal::TooShort(datagram.len()));
        }
        if load.from_same_ip >= self.config.max_connections_per_ip {
            return Err(Refusal::AddressLimit);
        }
        if let Some(cookie) = initial.cookie {
            let issued = self
                .issued
                .get(cookie)
                .filter(|i| i.to == canonical(from) && i.dcid == initial.dcid)
                .ok_or(Refusal::Cookie(CookieError::Invalid))?;
            if self.now >= issued.expiry {
                return Err(Refusal::Cookie(CookieError::Expired));
            }
            if load.half_open >= self.config.max_half_open {
                return Err(Refusal::HalfOpenLimit);
            }
            return Ok(Some(true));
        }
        let retry = match self.config.retry {
            RetryPolicy::Never => false,
            RetryPolicy::Always => true,
            RetryPolicy::AboveHalfOpen(threshold) => load.half_open >= threshold,
        };
        if retry {
            return Ok(None);
        }
        if load.half_open >= self.config.max_half_open {
            return Err(Refusal::HalfOpenLimit);
        }
        Ok(Some(false))
    }

    /// A datagram from `from` that no connection claims, checked against
    /// what the acceptor must decide.
    pub(super) fn decide(&mut self, from: SocketAddr, datagram: &[u8]) {
        let load = self.load(from);
        let expected = self.expect(from, datagram, load);
        let decision = self.acceptor.handle(self.now, from, datagram, load);
        match (&decision, expected) {
            (Decision::Retry(retry), Ok(None)) => {
                let parsed = RetryPacket::parse(retry).expect("a retry that parses");
                let initial = InitialDatagram::parse(datagram).expect("an initial");
                assert_eq!(parsed.initial_dcid, initial.dcid, "retry for another id");
                self.issued.insert(
                    parsed.cookie.to_vec(),
                    Issued {
                        to: canonical(from),
                        dcid: initial.dcid,
                        expiry: self.now + self.config.cookie_lifetime,
                    },
                );
                *self.sent_unproved.entry(canonical(from)).or_default() += retry.len() as u64;
                self.expected.retries_sent += 1;
                if self.to_address.len() < PATH_CAPACITY {
                    self.to_address.push((from, retry.clone()));
                }
            }
            (Decision::Accept(accepted), Ok(Some(validated))) => {
                assert_eq!(accepted.address_validated, validated, "{accepted:?}");
                assert!(
                    load.half_open < self.config.max_half_open
                        && load.from_same_ip < self.config.max_connections_per_ip,
                    "admitted beyond the limits: {load:?}"
                );
                if validated {
                    self.expected.accepted_with_cookie += 1;
                } else {
                    self.expected.accepted_unvalidated += 1;
                }
                self.admit(from, accepted.dcid, accepted.packet, validated);
            }
            (Decision::Refuse(refusal), Err(expected)) if *refusal == expected => {
                let counter = match expected {
                    Refusal::NotInitial => &mut self.expected.not_initial,
                    Refusal::TooShort(_) => &mut self.expected.too_short,
                    Refusal::Cookie(CookieError::Invalid) => &mut self.expected.cookies_invalid,
                    Refusal::Cookie(CookieError::Expired) => &mut self.expected.cookies_expired,
                    Refusal::HalfOpenLimit => &mut self.expected.half_open_limit,
                    Refusal::AddressLimit => &mut self.expected.address_limit,
                };
                *counter += 1;
            }
            (decision, expected) => panic!(
                "from {from}, {} bytes, {load:?}: decided {decision:?}, expected {expected:?}",
                datagram.len()
            ),
        }
    }

    /// Makes a connection of an accepted Initial.
    pub(super) fn admit(
        &mut self,
        from: SocketAddr,
        dcid: ConnectionId,
        packet: &[u8],
        validated: bool,
    ) {
        let servers = self.admitted.iter().filter(|a| a.server.is_some()).count();
        let server = (servers < MAX_SERVERS)
            .then(|| Connection::server(TransportConfig::default(), self.now, 2).ok())
            .flatten()
            .map(|mut server| {
                if validated {
                    server.validate_address();
                }
                server.handle_datagram(self.now, packet, EcnCodepoint::NotEct);
                server
            });
        self.admitted.push(Admitted {
            from,
            dcid,
            complete: false,
            server,
        });
        self.drain_servers();
    }

    /// A datagram from `from`, routed as a server's driver does: to the
    /// connection whose own id it names, else to the one made of an
    /// Initial from that address to its connection id, else to the
    /// acceptor.
    pub(super) fn receive(&mut self, from: SocketAddr, datagram: &[u8]) {
        *self.received.entry(canonical(from)).or_default() += datagram.len() as u64;
        let header_dcid = Header::parse(datagram).ok().map(|(h, _)| h.dcid);
        let initial = InitialDatagram::parse(datagram);
        let by_own_id = header_dcid.and_then(|dcid| {
            self.admitted.iter().position(|a| {
                a.server
                    .as_ref()
                    .is_some_and(|server| server.local_cid() == dcid)
            })
        });
        let claimed = by_own_id.map(|at| (at, datagram)).or_else(|| {
            let initial = initial?;
            let at = self
                .admitted
                .iter()
                .position(|a| a.dcid == initial.dcid && canonical(a.from) == canonical(from))?;
            Some((at, initial.packet))
        });
        match claimed {
            Some((at, packet)) => {
                if let Some(server) = &mut self.admitted[at].server {
                    server.handle_datagram(self.now, packet, EcnCodepoint::NotEct);
                }
                self.drain_servers();
            }
            None => self.decide(from, datagram),
        }
    }

    /// Takes what the server connections send, counting what goes to
    /// unproved addresses.
    pub(super) fn drain_servers(&mut self) {
        for admitted in &mut self.admitted {
            let Some(server) = &mut admitted.server else {
                continue;
            };
            for _ in 0..DRAIN_LIMIT {
                let proved = server.is_address_validated();
                let Some(transmit) = server.poll_transmit(self.now) else {
                    break;
                };
                if !proved {
                    *self
                        .sent_unproved
                        .entry(canonical(admitted.from))
                        .or_default() += transmit.contents.len() as u64;
                }
                if self.to_address.len() < PATH_CAPACITY {
                    self.to_address.push((admitted.from, transmit.contents));
                }
            }
            if server.is_established() {
                admitted.complete = true;
            }
        }
    }

    /// The invariants that hold after every step.
    pub(super) fn check(&self) {
        assert_eq!(self.acceptor.stats(), self.expected, "stats");
        for (address, &sent) in &self.sent_unproved {
            let received = self.received.get(address).copied().unwrap_or(0);
            assert!(
                sent <= received * AMPLIFICATION_FACTOR,
                "{sent} bytes to unproved {address:?}, which sent {received}"
            );
        }
    }
}

/// Runs a server's [`Acceptor`] (its retry policy, cookie lifetime and
/// limits picked by the input) against a sequence of events the input
/// picks: genuine clients' Initials from their addresses (IPv4, IPv6 or
/// IPv4-mapped) and the retries they follow, replays of their datagrams
/// from other addresses, Initials carrying issued cookies from the address
/// and connection id they were issued to or others, before or after
/// expiry, bit-flipped, arbitrary datagrams, floods of padded Initials
/// from many spoofed addresses, time moving, other clients' half-open
/// handshakes coming and going, and admitted connections completing or
/// closing. The first few admitted Initials become real server connections
/// that answer their clients.
///
/// Every decision is the one the acceptor's rules give for that datagram
/// and load (so no connection is admitted for a cookie issued to another
/// address or connection id, or expired, or beyond the half-open and
/// per-address limits, and without a cookie only when the policy does not
/// ask for one); its counters match the decisions; what goes to an address
/// before it is proved (retries and server connections' datagrams) is at
/// most [`AMPLIFICATION_FACTOR`] times what came from it; and a client
/// follows at most one retry.
pub fn accept(data: &[u8]) -> AcceptOutcome {
    let mut input = Input::new(data);
    let config = accept_config(&mut input);
    let mut driver = AcceptDriver::new(config, Instant::now());
    while !input.is_empty() {
        let op = input.u8();
        driver.step(op, &mut input);
        driver.check();
    }
    driver.outcome()
}

/// The acceptor's settings at the front of an [`accept`] input.
fn accept_config(input: &mut Input<'_>) -> AcceptConfig {
    let policy = input.u8();
    AcceptConfig {
        retry: match policy % 4 {
            0 => RetryPolicy::Never,
            1 => RetryPolicy::Always,
            _ => RetryPolicy::AboveHalfOpen(usize::from(policy >> 2 & 7)),
        },
        cookie_lifetime: Duration::from_millis(1 + u64::from(input.u16())),
        max_half_open: 1 + usize::from(input.u8() % 16),
        max_connections_per_ip: 1 + usize::from(input.u8() % 8),
    }
}

/// One acceptor under an [`accept`] input: its record, the genuine clients
/// and the spoofed flood's next address.
struct AcceptDriver {
    run: AcceptRun,
    clients: Vec<AcceptClient>,
    flood: u32,
}

impl AcceptDriver {
    fn new(config: AcceptConfig, start: Instant) -> AcceptDriver {
        AcceptDriver {
            run: AcceptRun {
                acceptor: Acceptor::new(config.clone(), [9; 32], start),
                config,
                now: start,
                admitted: Vec::new(),
                other_half_open: 0,
                issued: HashMap::new(),
                received: HashMap::new(),
                sent_unproved: HashMap::new(),
                expected: AcceptStats::default(),
                to_address: Vec::new(),
            },
            clients: Vec::new(),
            flood: 0,
        }
    }

    /// Applies one operation of the input.
    fn step(&mut self, op: u8, input: &mut Input<'_>) {
        let (run, clients) = (&mut self.run, &mut self.clients);
        match op % 12 {
            // A new genuine client.
            0 if clients.len() < 3 => {
                let from = source_address(input);
                let seed = 10 + clients.len() as u64;
                if let Ok(conn) = Connection::client(TransportConfig::default(), run.now, seed) {
                    clients.push(AcceptClient {
                        conn,
                        from,
                        sent: Vec::new(),
                    });
                }
            }
            // A client's next datagram, from its address.
            0..=2 if !clients.is_empty() => {
                let at = usize::from(op >> 4) % clients.len();
                let client = &mut clients[at];
                if let Some(transmit) = client.conn.poll_transmit(run.now) {
                    if client.sent.len() < PATH_CAPACITY {
                        client.sent.push(transmit.contents.clone());
                    }
                    run.receive(client.from, &transmit.contents);
                }
            }
            // A client's datagram replayed from anywhere.
            3 if !clients.is_empty() => {
                let client = &clients[usize::from(op >> 4) % clients.len()];
                if !client.sent.is_empty() {
                    let datagram = client.sent[usize::from(input.u8()) % client.sent.len()].clone();
                    let from = source_address(input);
                    run.receive(from, &datagram);
                }
            }
            // The server's datagrams reach whichever client has the address.
            4 => {
                for (to, datagram) in std::mem::take(&mut run.to_address) {
                    let client = clients
                        .iter_mut()
                        .find(|c| canonical(c.from) == canonical(to));
                    if let Some(client) = client {
                        client
                            .conn
                            .handle_datagram(run.now, &datagram, EcnCodepoint::NotEct);
                    }
                }
            }
            5 if !run.issued.is_empty() => self.forged_cookie(input),
            // An arbitrary datagram, or a plain Initial to any id.
            6 => {
                let from = source_address(input);
                let len = usize::from(input.u16()) % 1500;
                let datagram = if op & 0x10 != 0 {
                    input.bytes(len).to_vec()
                } else {
                    forged_initial(ConnectionId(input.u64() as u32), input.u64(), len)
                };
                run.receive(from, &datagram);
            }
            7 => self.flood(input),
            8 => self.tick(input),
            // Other clients' handshakes come and go.
            9 => run.other_half_open = usize::from(input.u8() % 32),
            // An admitted connection completes its handshake, or closes.
            10 if !run.admitted.is_empty() => {
                let at = usize::from(input.u8()) % run.admitted.len();
                if op & 0x10 != 0 {
                    run.admitted.remove(at);
                } else if run.admitted[at].server.is_none() {
                    run.admitted[at].complete = true;
                }
            }
            11 if !clients.is_empty() => self.retry_to_client(op, input),
            _ => {}
        }
    }

    /// An issued cookie (perhaps changed) on an Initial, from anywhere, for
    /// any connection id.
    fn forged_cookie(&mut self, input: &mut Input<'_>) {
        let run = &mut self.run;
        let mut cookies: Vec<(&Vec<u8>, &Issued)> = run.issued.iter().collect();
        cookies.sort_by(|a, b| a.0.cmp(b.0));
        let (cookie, issued) = cookies[usize::from(input.u16()) % cookies.len()];
        let (mut cookie, issued) = (cookie.clone(), *issued);
        let flags = input.u8();
        if flags & 1 != 0 {
            let bit = usize::from(input.u8()) % (cookie.len() * 8);
            cookie[bit / 8] ^= 1 << (bit % 8);
        }
        let dcid = if flags & 2 != 0 {
            ConnectionId(input.id(u64::from(issued.dcid.0)) as u32)
        } else {
            issued.dcid
        };
        let from = if flags & 4 != 0 {
            source_address(input)
        } else {
            SocketAddr::new(IpAddr::V6(issued.to.0), issued.to.1)
        };
        let len = if flags & 8 != 0 {
            usize::from(input.u16()) % 1400
        } else {
            MIN_INITIAL
        };
        let packet = forged_initial(dcid, input.u64(), len);
        run.receive(from, &InitialDatagram::wrap(&cookie, &packet));
    }

    /// A flood of padded Initials from distinct spoofed addresses.
    fn flood(&mut self, input: &mut Input<'_>) {
        let count = u32::from(input.u8()) % MAX_FLOOD;
        for _ in 0..count {
            let from = flood_address(self.flood);
            let packet = forged_initial(ConnectionId(self.flood), 0, MIN_INITIAL);
            self.flood += 1;
            self.run.receive(from, &packet);
        }
    }

    /// Time moves, in whole milliseconds.
    fn tick(&mut self, input: &mut Input<'_>) {
        let run = &mut self.run;
        let step = u64::from(input.u16()) * u64::from(input.u8() % 4 + 1);
        run.now += Duration::from_millis(step);
        for client in &mut self.clients {
            client.conn.handle_timeout(run.now);
        }
        for admitted in &mut run.admitted {
            if let Some(server) = &mut admitted.server {
                server.handle_timeout(run.now);
            }
        }
        run.drain_servers();
    }

    /// A retry sent to a client (its own, another's, or made up).
    fn retry_to_client(&mut self, op: u8, input: &mut Input<'_>) {
        let at = usize::from(op >> 4) % self.clients.len();
        let client = &mut self.clients[at];
        let dcid = ConnectionId(input.u64() as u32);
        let len = 1 + usize::from(input.u8()) % MAX_COOKIE_LEN;
        let cookie = input.bytes(len);
        if !cookie.is_empty() {
            let mut retry = Vec::new();
            RetryPacket {
                initial_dcid: dcid,
                cookie,
            }
            .emit(&mut retry);
            client
                .conn
                .handle_datagram(self.run.now, &retry, EcnCodepoint::NotEct);
        }
    }

    /// The invariants after every operation.
    fn check(&self) {
        self.run.check();
        for client in &self.clients {
            assert!(
                client.conn.stats().retries <= 1,
                "a client followed two retries"
            );
        }
    }

    fn outcome(&self) -> AcceptOutcome {
        AcceptOutcome {
            stats: self.run.acceptor.stats(),
            retries_followed: self.clients.iter().map(|c| c.conn.stats().retries).sum(),
            clients_established: self
                .clients
                .iter()
                .filter(|c| c.conn.is_established())
                .count(),
        }
    }
}
