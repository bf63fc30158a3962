//! The network: nodes, links, routes, and the event loop that moves
//! datagrams between them in virtual time.

use std::collections::VecDeque;
use std::fmt;
use std::time::Instant;

use ltx_link::{Admission, Datagram, DropCause, Link, LinkConfig, LinkConfigError, LinkStats};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use thiserror::Error;

use crate::node::Node;
use crate::packet::Packet;

/// The identity of a node in one [`Network`], in the order nodes were added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(usize);

impl NodeId {
    /// The node's position in the order nodes were added, from 0.
    pub fn index(self) -> usize {
        self.0
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node {}", self.0)
    }
}

/// The identity of a link in one [`Network`], in the order links were added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinkId(usize);

impl LinkId {
    /// The link's position in the order links were added, from 0.
    pub fn index(self) -> usize {
        self.0
    }
}

impl fmt::Display for LinkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "link {}", self.0)
    }
}

/// Counters of what one node put on and took off the network, for wire
/// overhead (bytes sent / bytes delivered).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// Datagrams the node sent.
    pub sent_datagrams: u64,
    /// Bytes of the datagrams it sent.
    pub sent_bytes: u64,
    /// Datagrams delivered to it.
    pub received_datagrams: u64,
    /// Bytes of the datagrams delivered to it.
    pub received_bytes: u64,
    /// Datagrams it sent before it was connected to a peer, thrown away.
    pub unrouted_datagrams: u64,
}

/// Why [`Network::connect`] refused to join two nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum ConnectError {
    /// A node id that this network did not hand out.
    #[error("{0} does not exist")]
    UnknownNode(NodeId),
    /// A link id that this network did not hand out.
    #[error("{0} does not exist")]
    UnknownLink(LinkId),
    /// A node asked to talk to itself.
    #[error("{0} cannot be connected to itself")]
    SelfLoop(NodeId),
    /// A node that already has a peer: each node talks to exactly one.
    #[error("{0} is already connected")]
    AlreadyConnected(NodeId),
}

/// Why [`Network::run`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// The `stop` predicate returned true.
    Stopped,
    /// The next event lies beyond the deadline.
    Deadline,
    /// No event is pending anywhere: no datagram in flight, no timeout set.
    /// Virtual time stays at the last event.
    Idle,
}

/// What [`Network::run`] returns: where virtual time stands and why it stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOutcome {
    /// The network's virtual time when it stopped.
    pub now: Instant,
    /// Why it stopped.
    pub reason: StopReason,
}

/// One direction of a flow: the links in order, then the node it ends at.
#[derive(Debug)]
struct Route {
    links: Vec<LinkId>,
    to: NodeId,
}

/// A node and what the network keeps about it.
struct Slot<N> {
    node: N,
    /// The route its datagrams take, once connected.
    route: Option<usize>,
    /// Its timeout as last polled: nodes change it only when the network
    /// calls into them, so one poll after each call keeps it current.
    timeout: Option<Instant>,
    /// Whether it got an input this step and must be polled for output.
    touched: bool,
    stats: NodeStats,
}

/// A simulated network: nodes joined in pairs by routes over links, run in
/// virtual time by [`run`](Network::run). Every link's randomness comes from
/// one generator seeded at [`new`](Network::new), and nodes and links are
/// visited in index order, so a run replays exactly from its seed.
pub struct Network<N> {
    epoch: Instant,
    now: Instant,
    seed: u64,
    rng: SmallRng,
    nodes: Vec<Slot<N>>,
    links: Vec<Link<Packet>>,
    /// Per link, when its queue dropped a packet (full, or by its AQM).
    queue_drops: Vec<Vec<Instant>>,
    routes: Vec<Route>,
    /// Datagrams on routes without links: delivered at the next step, at the
    /// same instant, so that two nodes bouncing datagrams over such a route
    /// never recurse into each other.
    direct: VecDeque<(NodeId, Datagram)>,
}

impl<N> fmt::Debug for Network<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Network")
            .field("epoch", &self.epoch)
            .field("now", &self.now)
            .field("seed", &self.seed)
            .field("nodes", &self.nodes.len())
            .field("links", &self.links.len())
            .field("routes", &self.routes)
            .finish_non_exhaustive()
    }
}

impl<N: Node> Network<N> {
    /// An empty network whose virtual time starts at `epoch`, with every
    /// random choice drawn from `seed`.
    pub fn new(epoch: Instant, seed: u64) -> Network<N> {
        Network {
            epoch,
            now: epoch,
            seed,
            rng: SmallRng::seed_from_u64(seed),
            nodes: Vec::new(),
            links: Vec::new(),
            queue_drops: Vec::new(),
            routes: Vec::new(),
            direct: VecDeque::new(),
        }
    }

    /// The time the network started at; link outages are timed from it.
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// The current virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The seed the network was built with, to print when a test fails.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// A fresh seed from the master generator, for a node's own randomness,
    /// so that the whole simulation still replays from one seed. It moves
    /// the generator: links added afterwards get different seeds.
    pub fn draw_seed(&mut self) -> u64 {
        self.rng.random()
    }

    /// Adds a node, not yet connected to anything.
    pub fn add_node(&mut self, node: N) -> NodeId {
        self.nodes.push(Slot {
            node,
            route: None,
            timeout: None,
            touched: false,
            stats: NodeStats::default(),
        });
        NodeId(self.nodes.len() - 1)
    }

    /// Adds a link, seeded from the master generator. Routes refer to it by
    /// the returned id; several routes may share it (a shared bottleneck).
    pub fn add_link(&mut self, config: LinkConfig) -> Result<LinkId, LinkConfigError> {
        let seed = self.rng.random();
        self.links.push(Link::new(config, self.epoch, seed)?);
        self.queue_drops.push(Vec::new());
        Ok(LinkId(self.links.len() - 1))
    }

    /// Makes `a` and `b` peers: what `a` sends crosses the links of `a_to_b`
    /// in order and is delivered to `b`, and what `b` sends crosses `b_to_a`
    /// to `a`. An empty list delivers at the same instant.
    pub fn connect(
        &mut self,
        a: NodeId,
        b: NodeId,
        a_to_b: Vec<LinkId>,
        b_to_a: Vec<LinkId>,
    ) -> Result<(), ConnectError> {
        for node in [a, b] {
            match self.nodes.get(node.0) {
                None => return Err(ConnectError::UnknownNode(node)),
                Some(slot) if slot.route.is_some() => {
                    return Err(ConnectError::AlreadyConnected(node))
                }
                Some(_) => {}
            }
        }
        if a == b {
            return Err(ConnectError::SelfLoop(a));
        }
        if let Some(&link) = a_to_b
            .iter()
            .chain(&b_to_a)
            .find(|l| l.0 >= self.links.len())
        {
            return Err(ConnectError::UnknownLink(link));
        }
        self.routes.push(Route {
            links: a_to_b,
            to: b,
        });
        self.nodes[a.0].route = Some(self.routes.len() - 1);
        self.routes.push(Route {
            links: b_to_a,
            to: a,
        });
        self.nodes[b.0].route = Some(self.routes.len() - 1);
        Ok(())
    }

    /// The node `id`.
    ///
    /// # Panics
    /// If `id` comes from another network with more nodes.
    pub fn node(&self, id: NodeId) -> &N {
        &self.nodes[id.0].node
    }

    /// The node `id`, to change it between runs (for example to give it
    /// data to send); the next [`run`](Network::run) polls it.
    ///
    /// # Panics
    /// If `id` comes from another network with more nodes.
    pub fn node_mut(&mut self, id: NodeId) -> &mut N {
        &mut self.nodes[id.0].node
    }

    /// The ids of all nodes, in index order.
    pub fn node_ids(&self) -> impl Iterator<Item = NodeId> + use<N> {
        (0..self.nodes.len()).map(NodeId)
    }

    /// What node `id` sent and received so far.
    ///
    /// # Panics
    /// If `id` comes from another network with more nodes.
    pub fn node_stats(&self, id: NodeId) -> &NodeStats {
        &self.nodes[id.0].stats
    }

    /// The configuration of link `id`.
    ///
    /// # Panics
    /// If `id` comes from another network with more links.
    pub fn link_config(&self, id: LinkId) -> &LinkConfig {
        self.links[id.0].config()
    }

    /// The counters of link `id` so far.
    ///
    /// # Panics
    /// If `id` comes from another network with more links.
    pub fn link_stats(&self, id: LinkId) -> &LinkStats {
        self.links[id.0].stats()
    }

    /// When link `id`'s queue dropped a packet, full or by its AQM, oldest
    /// first: when an overflow began and how long it lasted, which the
    /// counters of [`link_stats`](Network::link_stats) do not say. Copies
    /// the link made itself (its duplication) are counted there only.
    ///
    /// # Panics
    /// If `id` comes from another network with more links.
    pub fn queue_drops(&self, id: LinkId) -> &[Instant] {
        &self.queue_drops[id.0]
    }

    /// The ids of all links, in index order.
    pub fn link_ids(&self) -> impl Iterator<Item = LinkId> + use<N> {
        (0..self.links.len()).map(LinkId)
    }

    /// Runs the network from event to event until `stop` returns true, the
    /// next event lies beyond `deadline`, or nothing is pending anywhere.
    /// Each step moves virtual time to the earliest link delivery or node
    /// timeout, delivers and fires what is due, polls the nodes that got
    /// input, then checks `stop`. On [`StopReason::Deadline`] time stands at
    /// `deadline`, so a later run carries on seamlessly.
    pub fn run(
        &mut self,
        deadline: Instant,
        mut stop: impl FnMut(&Network<N>) -> bool,
    ) -> RunOutcome {
        // Every node is polled first: it may have been given work since the
        // last run.
        for slot in &mut self.nodes {
            slot.touched = true;
        }
        self.poll_touched();
        if stop(self) {
            return self.outcome(StopReason::Stopped);
        }
        loop {
            let Some(next) = self.next_event() else {
                return self.outcome(StopReason::Idle);
            };
            if next > deadline {
                self.now = self.now.max(deadline);
                return self.outcome(StopReason::Deadline);
            }
            self.now = self.now.max(next);
            self.step();
            if stop(self) {
                return self.outcome(StopReason::Stopped);
            }
        }
    }

    fn outcome(&self, reason: StopReason) -> RunOutcome {
        RunOutcome {
            now: self.now,
            reason,
        }
    }

    /// The earliest pending event, O(links + nodes).
    fn next_event(&self) -> Option<Instant> {
        let direct = (!self.direct.is_empty()).then_some(self.now);
        let links = self.links.iter().filter_map(Link::next_event);
        let timeouts = self.nodes.iter().filter_map(|slot| slot.timeout);
        direct.into_iter().chain(links).chain(timeouts).min()
    }

    /// Handles every event due at `self.now`.
    fn step(&mut self) {
        let now = self.now;
        for index in 0..self.links.len() {
            while let Some(packet) = self.links[index].dequeue_ready(now) {
                self.forward(packet);
            }
        }
        // Only what was sent before this step: what the deliveries below
        // cause waits for the next one.
        let direct = std::mem::take(&mut self.direct);
        for (to, datagram) in direct {
            self.deliver(to, datagram);
        }
        for slot in &mut self.nodes {
            if slot.timeout.is_some_and(|at| at <= now) {
                slot.node.handle_timeout(now);
                slot.touched = true;
            }
        }
        self.poll_touched();
    }

    /// Moves a packet that reached the end of its current link onwards.
    fn forward(&mut self, mut packet: Packet) {
        let route = &self.routes[packet.route];
        packet.hop += 1;
        match route.links.get(packet.hop) {
            Some(&link) => self.offer(link, packet),
            None => {
                let to = route.to;
                self.deliver(to, packet.datagram);
            }
        }
    }

    fn deliver(&mut self, to: NodeId, datagram: Datagram) {
        let slot = &mut self.nodes[to.0];
        slot.stats.received_datagrams += 1;
        slot.stats.received_bytes += datagram.payload.len() as u64;
        slot.node.handle_datagram(self.now, datagram);
        slot.touched = true;
    }

    /// Drains the output of every node that got input, in index order, and
    /// refreshes its timeout.
    fn poll_touched(&mut self) {
        let now = self.now;
        for index in 0..self.nodes.len() {
            if !std::mem::take(&mut self.nodes[index].touched) {
                continue;
            }
            while let Some(datagram) = self.nodes[index].node.poll_transmit(now) {
                self.send(index, datagram);
            }
            let slot = &mut self.nodes[index];
            slot.timeout = slot.node.poll_timeout();
        }
    }

    /// Puts a datagram from node `from` on the first link of its route.
    fn send(&mut self, from: usize, datagram: Datagram) {
        let slot = &mut self.nodes[from];
        let Some(route_index) = slot.route else {
            slot.stats.unrouted_datagrams += 1;
            return;
        };
        slot.stats.sent_datagrams += 1;
        slot.stats.sent_bytes += datagram.payload.len() as u64;
        let route = &self.routes[route_index];
        match route.links.first() {
            Some(&link) => {
                let packet = Packet {
                    datagram,
                    route: route_index,
                    hop: 0,
                };
                self.offer(link, packet);
            }
            None => self.direct.push_back((route.to, datagram)),
        }
    }

    /// Offers a packet to `link` now. The link counts its drops; the times
    /// of its queue's drops are kept here.
    fn offer(&mut self, link: LinkId, packet: Packet) {
        if let Admission::Dropped(DropCause::QueueFull | DropCause::Aqm) =
            self.links[link.0].enqueue(self.now, packet)
        {
            self.queue_drops[link.0].push(self.now);
        }
    }
}
