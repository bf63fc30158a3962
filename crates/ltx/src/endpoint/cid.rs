//! Connection ids: a new connection takes one no other connection of the
//! endpoint routes, and, when the endpoint has several drivers, one that
//! names its driver (so that any datagram for it, from any address, is
//! handed to that driver without a table).

use std::collections::HashMap;

use ltx_proto::wire::ConnectionId;
use rand::rngs::SmallRng;
use rand::Rng;

use super::ConnectionKey;

/// One of an endpoint's drivers: which, and of how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shard {
    /// Its place, below `count`.
    pub(crate) index: usize,
    /// How many drivers the endpoint has (at least 1).
    pub(crate) count: usize,
}

impl Shard {
    /// The only driver of an endpoint that has one.
    #[cfg(test)]
    pub(crate) const ALONE: Shard = Shard { index: 0, count: 1 };

    /// The driver that holds the connection whose local id is `cid`.
    pub(crate) fn of(cid: ConnectionId, count: usize) -> usize {
        cid.0 as usize % count.max(1)
    }

    /// Whether a connection whose local id is `cid` belongs to this driver.
    pub(crate) fn owns(self, cid: ConnectionId) -> bool {
        Shard::of(cid, self.count) == self.index
    }
}

/// How many seeds a new connection tries before giving up on a connection
/// id that no other connection of the endpoint uses: ids have 32 bits, so
/// a clash is rare and a run of them means the space is nearly full.
pub(super) const CID_ATTEMPTS: usize = 16;

/// Builds a connection with `build`, from fresh seeds of `rng`, until its
/// local connection id is one that `taken` does not route yet and that
/// `shard` owns: at most [`CID_ATTEMPTS`] times per driver, then
/// `Ok(None)`. An error of `build` ends the search.
pub(crate) fn with_unused_cid<E>(
    rng: &mut SmallRng,
    taken: &HashMap<ConnectionId, ConnectionKey>,
    shard: Shard,
    mut build: impl FnMut(u64) -> Result<ltx_proto::Connection, E>,
) -> Result<Option<ltx_proto::Connection>, E> {
    for _ in 0..CID_ATTEMPTS * shard.count.max(1) {
        let proto = build(rng.random())?;
        let cid = proto.local_cid();
        if !taken.contains_key(&cid) && shard.owns(cid) {
            return Ok(Some(proto));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use ltx_proto::TransportConfig;
    use rand::SeedableRng;

    fn client(seed: u64) -> ltx_proto::Connection {
        ltx_proto::Connection::client(TransportConfig::default(), Instant::now(), seed)
            .expect("the default transport settings are valid")
    }

    #[test]
    fn a_new_connection_takes_no_connection_id_in_use() {
        // The seeds the generator will give, and the ids they make: the
        // first two are taken, so the third seed's connection is the one.
        let mut ahead = SmallRng::seed_from_u64(7);
        let seeds: Vec<u64> = (0..3).map(|_| ahead.random()).collect();
        let taken: HashMap<_, _> = seeds[..2]
            .iter()
            .zip(0..)
            .map(|(&seed, key)| (client(seed).local_cid(), ConnectionKey(key)))
            .collect();
        assert_eq!(taken.len(), 2, "two seeds gave one id");
        let mut rng = SmallRng::seed_from_u64(7);
        let built = with_unused_cid(&mut rng, &taken, Shard::ALONE, |seed| {
            Ok::<_, ()>(client(seed))
        });
        let proto = built.expect("no error").expect("a free id");
        assert_eq!(proto.local_cid(), client(seeds[2]).local_cid());
        assert!(!taken.contains_key(&proto.local_cid()));
    }

    #[test]
    fn a_search_that_finds_every_id_taken_gives_up() {
        let taken: HashMap<_, _> = [(client(1).local_cid(), ConnectionKey(0))].into();
        let mut rng = SmallRng::seed_from_u64(7);
        let mut tries = 0;
        let built = with_unused_cid(&mut rng, &taken, Shard::ALONE, |_| {
            tries += 1;
            Ok::<_, ()>(client(1))
        });
        assert!(matches!(built, Ok(None)));
        assert_eq!(tries, CID_ATTEMPTS);
        // An error ends the search at once.
        let built = with_unused_cid(&mut rng, &taken, Shard::ALONE, |_| {
            Err::<ltx_proto::Connection, _>("no")
        });
        assert!(matches!(built, Err("no")));
    }

    #[test]
    fn a_driver_of_several_takes_only_ids_that_name_it() {
        let taken = HashMap::new();
        let mut rng = SmallRng::seed_from_u64(11);
        for index in 0..3 {
            let shard = Shard { index, count: 3 };
            for _ in 0..20 {
                let built =
                    with_unused_cid(&mut rng, &taken, shard, |seed| Ok::<_, ()>(client(seed)));
                let cid = built.expect("no error").expect("a free id").local_cid();
                assert_eq!(Shard::of(cid, 3), index, "{cid} is not driver {index}'s");
                assert!(shard.owns(cid));
            }
        }
    }
}
