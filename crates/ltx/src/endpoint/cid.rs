//! Connection ids: a new connection takes one no other connection of the
//! endpoint routes.

use std::collections::HashMap;

use ltx_proto::wire::ConnectionId;
use rand::rngs::SmallRng;
use rand::Rng;

use super::ConnectionKey;

/// How many seeds a new connection tries before giving up on a connection
/// id that no other connection of the endpoint uses: ids have 32 bits, so
/// a clash is rare and a run of them means the space is nearly full.
pub(super) const CID_ATTEMPTS: usize = 16;

/// Builds a connection with `build`, from fresh seeds of `rng`, until its
/// local connection id is one that `taken` does not route yet: at most
/// [`CID_ATTEMPTS`] times, then `Ok(None)`. An error of `build` ends the
/// search.
pub(crate) fn with_unused_cid<E>(
    rng: &mut SmallRng,
    taken: &HashMap<ConnectionId, ConnectionKey>,
    mut build: impl FnMut(u64) -> Result<ltx_proto::Connection, E>,
) -> Result<Option<ltx_proto::Connection>, E> {
    for _ in 0..CID_ATTEMPTS {
        let proto = build(rng.random())?;
        if !taken.contains_key(&proto.local_cid()) {
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
        let built = with_unused_cid(&mut rng, &taken, |seed| Ok::<_, ()>(client(seed)));
        let proto = built.expect("no error").expect("a free id");
        assert_eq!(proto.local_cid(), client(seeds[2]).local_cid());
        assert!(!taken.contains_key(&proto.local_cid()));
    }

    #[test]
    fn a_search_that_finds_every_id_taken_gives_up() {
        let taken: HashMap<_, _> = [(client(1).local_cid(), ConnectionKey(0))].into();
        let mut rng = SmallRng::seed_from_u64(7);
        let mut tries = 0;
        let built = with_unused_cid(&mut rng, &taken, |_| {
            tries += 1;
            Ok::<_, ()>(client(1))
        });
        assert!(matches!(built, Ok(None)));
        assert_eq!(tries, CID_ATTEMPTS);
        // An error ends the search at once.
        let built = with_unused_cid(&mut rng, &taken, |_| Err::<ltx_proto::Connection, _>("no"));
        assert!(matches!(built, Err("no")));
    }
}
