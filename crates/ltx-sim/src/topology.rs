//! Ready-made topologies: one path, and flows sharing a bottleneck.

use std::time::{Duration, Instant};

use ltx_link::{LinkConfig, LinkConfigError, Rate};

use crate::network::{Network, NodeId};
use crate::node::Node;

/// A flow's own link to a shared bottleneck, one each way: a host's
/// interface and the path up to the bottleneck. No loss, no queue limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Access {
    /// One-way delay each access link adds.
    pub delay: Duration,
    /// Each access link's rate; `None` passes a burst on at one instant.
    /// A host's interface is faster than the bottleneck but not infinitely
    /// so: with a rate, bursts that flows send at the same moment reach the
    /// bottleneck interleaved, as they do through a real switch, instead of
    /// one flow's whole burst ahead of the next one's.
    pub rate: Option<Rate>,
}

impl Access {
    /// An access link with this delay and no rate limit.
    pub fn delay(delay: Duration) -> Access {
        Access { delay, rate: None }
    }
}

impl<N: Node> Network<N> {
    /// Two nodes joined by one link each way: `a` sends over `forward`, `b`
    /// over `reverse`. Returns the network, `a` and `b`.
    pub fn single_path(
        epoch: Instant,
        seed: u64,
        forward: LinkConfig,
        reverse: LinkConfig,
        a: N,
        b: N,
    ) -> Result<(Network<N>, NodeId, NodeId), LinkConfigError> {
        let mut net = Network::new(epoch, seed);
        let a = net.add_node(a);
        let b = net.add_node(b);
        let forward = net.add_link(forward)?;
        let reverse = net.add_link(reverse)?;
        net.connect(a, b, vec![forward], vec![reverse])
            .expect("fresh nodes and links");
        Ok((net, a, b))
    }

    /// Flows that share one bottleneck each way (a dumbbell): each flow
    /// `(a, b, access)` crosses an [`Access`] link of its own, then the
    /// bottleneck, each way, so its round trip is the bottleneck's plus twice
    /// its access delay. Returns the network and each flow's `(a, b)` in the
    /// order given; links are numbered forward bottleneck, reverse
    /// bottleneck, then each flow's forward and reverse access link.
    #[allow(clippy::type_complexity)] // the pair of ids per flow reads best spelled out
    pub fn dumbbell(
        epoch: Instant,
        seed: u64,
        bottleneck_forward: LinkConfig,
        bottleneck_reverse: LinkConfig,
        flows: Vec<(N, N, Access)>,
    ) -> Result<(Network<N>, Vec<(NodeId, NodeId)>), LinkConfigError> {
        let mut net = Network::new(epoch, seed);
        let forward = net.add_link(bottleneck_forward)?;
        let reverse = net.add_link(bottleneck_reverse)?;
        let mut ids = Vec::with_capacity(flows.len());
        for (a, b, access) in flows {
            let access = LinkConfig {
                delay: access.delay,
                rate: access.rate,
                ..LinkConfig::default()
            };
            let access_in = net.add_link(access.clone())?;
            let access_out = net.add_link(access)?;
            let a = net.add_node(a);
            let b = net.add_node(b);
            net.connect(a, b, vec![access_in, forward], vec![reverse, access_out])
                .expect("fresh nodes and links");
            ids.push((a, b));
        }
        Ok((net, ids))
    }
}
