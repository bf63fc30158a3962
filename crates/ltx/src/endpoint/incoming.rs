//! What becomes of a datagram that reaches a driver: the connection it is
//! for, a new server connection, a retry, or nothing.

use std::net::SocketAddr;
use std::time::Instant;

use ltx_proto::accept::packet::{InitialDatagram, RetryPacket};
use ltx_proto::accept::{Decision, ServerLoad};
use ltx_proto::wire::{ConnectionId, Header, PacketType};
use ltx_proto::{EcnCodepoint, Side};

use super::{entropy, with_unused_cid, ConnectionKey, Phase, Security, State};
use crate::socket::SendQueue;

impl State {
    /// Finds (or, for a server's first packet, makes) the connection a
    /// datagram is for, and hands it the datagram; or sends the acceptor's
    /// retry; or drops it.
    pub(super) fn handle_datagram(
        &mut self,
        now: Instant,
        from: SocketAddr,
        bytes: &[u8],
        ecn: EcnCodepoint,
        out: &mut SendQueue,
        max_segments: usize,
    ) {
        if RetryPacket::parse(bytes).is_some() {
            // A retry names the Initial it answers by the id the client
            // chose for the server; the client connection checks it.
            let mut delivered = false;
            for slot in self.slots.values_mut() {
                let waiting = slot.proto.side() == Side::Client
                    && matches!(slot.phase, Phase::Handshaking)
                    && slot.remote == from;
                if waiting {
                    slot.proto.handle_datagram_from(now, from, bytes, ecn);
                    delivered = true;
                }
            }
            if !delivered {
                self.unroutable += 1;
            }
            return;
        }
        let (key, packet) = match self.route(now, from, bytes) {
            Route::Connection(key, packet) => (key, packet),
            Route::Retry(retry) => {
                out.push(from, EcnCodepoint::NotEct, &retry, max_segments);
                return;
            }
            Route::Nowhere => {
                self.unroutable += 1;
                return;
            }
        };
        let slot = self.slots.get_mut(&key).expect("routes lead to slots");
        slot.proto.handle_datagram_from(now, from, packet, ecn);
    }

    fn route<'a>(&mut self, now: Instant, from: SocketAddr, bytes: &'a [u8]) -> Route<'a> {
        if let Ok((header, _)) = Header::parse(bytes) {
            if let Some(key) = self.by_cid.get(&header.dcid) {
                return Route::Connection(*key, bytes);
            }
            if header.packet_type == PacketType::EarlyData {
                // Early data goes where its flight's Initial went; before
                // the Initial it goes nowhere (the client sends it again).
                return match self.by_initial.get(&(from, header.dcid)) {
                    Some(key) => Route::Connection(*key, bytes),
                    None => Route::Nowhere,
                };
            }
        }
        let Some(initial) = InitialDatagram::parse(bytes) else {
            return Route::Nowhere;
        };
        let route = (from, initial.dcid);
        if let Some(key) = self.by_initial.get(&route) {
            return Route::Connection(*key, initial.packet);
        }
        let made = self.make_server_connection(now, from, bytes, route);
        if !matches!(made, Route::Connection(..)) {
            // The reader sent these first packets here; they made nothing,
            // so the next ones may go to any driver.
            if let Some(router) = &self.router {
                router.forget(route, self.shard.index);
            }
        }
        made
    }

    /// Decides what a client's first packet with no connection yet makes:
    /// a server connection, a retry, or nothing.
    fn make_server_connection<'a>(
        &mut self,
        now: Instant,
        from: SocketAddr,
        bytes: &'a [u8],
        route: (SocketAddr, ConnectionId),
    ) -> Route<'a> {
        let waiting = self
            .slots
            .values()
            .filter(|s| s.proto.side() == Side::Server && !s.handed_out)
            .count();
        if !self.config.accept_incoming
            || self.handles_gone
            || waiting >= self.config.max_pending_incoming
            || self.slots.len() >= self.config.max_connections
        {
            return Route::Nowhere;
        }
        let from_same_ip = match &self.router {
            Some(router) => router.held_from(from.ip(), route),
            None => self
                .slots
                .values()
                .filter(|s| s.proto.side() == Side::Server && s.remote.ip() == from.ip())
                .count(),
        };
        let load = ServerLoad {
            half_open: self.half_open(),
            from_same_ip,
        };
        let accepted = match self.acceptor.handle(now, from, bytes, load) {
            Decision::Accept(accepted) => accepted,
            Decision::Retry(retry) => return Route::Retry(retry),
            Decision::Refuse(_) => return Route::Nowhere,
        };
        let config = &self.config;
        let built = with_unused_cid(&mut self.rng, &self.by_cid, self.shard, |seed| {
            let transport = config.transport.clone();
            match &config.security {
                Security::Noise(security) => {
                    let entropy = entropy().ok_or(())?;
                    ltx_proto::Connection::secure_server(
                        transport,
                        security.clone(),
                        now,
                        seed,
                        entropy,
                    )
                    .map_err(drop)
                }
                Security::Plain => {
                    ltx_proto::Connection::server(transport, now, seed).map_err(drop)
                }
            }
        });
        let Ok(Some(mut proto)) = built else {
            return Route::Nowhere;
        };
        if accepted.address_validated {
            proto.validate_address();
        }
        let key = self.insert(proto, from, Some((from, accepted.dcid)));
        if let Some(router) = &self.router {
            router.claim(route, self.shard.index);
        }
        Route::Connection(key, accepted.packet)
    }
}

/// Where a datagram goes.
enum Route<'a> {
    /// To this connection, as these bytes (an Initial without its cookie).
    Connection(ConnectionKey, &'a [u8]),
    /// Nowhere; this retry goes back to the sender.
    Retry(Vec<u8>),
    /// Nowhere.
    Nowhere,
}
