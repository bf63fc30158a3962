//! The one thing the simulator asks of an endpoint.

use std::time::Instant;

use ltx_link::Datagram;

/// An endpoint attached to the network, in the sans-IO shape: given
/// datagrams and timeouts with the virtual time, asked for datagrams to send
/// and its next timeout. After every input the network calls
/// [`poll_transmit`](Node::poll_transmit) until `None`, then
/// [`poll_timeout`](Node::poll_timeout); a node that never stops sending, or
/// keeps a timeout that has fired, stops virtual time.
pub trait Node {
    /// Takes a datagram that has arrived at `now`.
    fn handle_datagram(&mut self, now: Instant, datagram: Datagram);

    /// The next datagram to send at `now`, if any. Called repeatedly after
    /// any input or timeout until it returns `None`.
    fn poll_transmit(&mut self, now: Instant) -> Option<Datagram>;

    /// When the node next wants [`handle_timeout`](Node::handle_timeout)
    /// called, if ever. A time in the past fires at once.
    fn poll_timeout(&mut self) -> Option<Instant>;

    /// Tells the node that its timeout has come, at `now`.
    fn handle_timeout(&mut self, now: Instant);
}

/// Boxed nodes are nodes, so that different kinds of endpoint (a protocol
/// under test and competing toy flows) can share one `Network<Box<dyn Node>>`.
impl<T: Node + ?Sized> Node for Box<T> {
    fn handle_datagram(&mut self, now: Instant, datagram: Datagram) {
        (**self).handle_datagram(now, datagram);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Datagram> {
        (**self).poll_transmit(now)
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        (**self).poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) {
        (**self).handle_timeout(now);
    }
}
