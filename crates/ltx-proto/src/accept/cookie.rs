//! Retry cookies: what a server gives a client's address instead of state,
//! and checks when it comes back.
//!
//! ```text
//! bytes 0-7    expiry, milliseconds since the server's epoch, big-endian
//! bytes 8-23   HMAC-SHA-256(server secret, label | address | port |
//!              Initial connection id | expiry), first 16 bytes
//! ```
//!
//! The MAC binds the cookie to the address and port it was sent to and to
//! the connection id of the Initial it answered, so a cookie seen on the
//! path is useless from any other address or for any other connection,
//! and after its expiry for any. 128 bits of tag leave forgery to luck.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use aws_lc_rs::hmac;

use crate::wire::ConnectionId;

/// Bytes of a cookie.
pub(crate) const COOKIE_LEN: usize = 8 + TAG_LEN;
/// Bytes of its tag.
const TAG_LEN: usize = 16;
/// Separates this MAC's inputs from any other use of the secret.
const LABEL: &[u8] = b"ltx retry cookie v1";

/// Why a cookie was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CookieError {
    /// Not a cookie this server made for this address and connection id:
    /// forged, corrupted, or replayed from elsewhere.
    #[error("the cookie does not authenticate")]
    Invalid,
    /// A cookie this server made, past its lifetime.
    #[error("the cookie has expired")]
    Expired,
}

/// The server's cookie secret and the instant its expiries count from.
pub(crate) struct CookieKey {
    key: hmac::Key,
    epoch: Instant,
}

impl CookieKey {
    pub(crate) fn new(secret: [u8; 32], epoch: Instant) -> CookieKey {
        CookieKey {
            key: hmac::Key::new(hmac::HMAC_SHA256, &secret),
            epoch,
        }
    }

    fn tag(&self, from: SocketAddr, dcid: ConnectionId, expiry: u64) -> hmac::Tag {
        let ip = match from.ip() {
            IpAddr::V4(v4) => v4.to_ipv6_mapped(),
            IpAddr::V6(v6) => v6,
        };
        let mut context = hmac::Context::with_key(&self.key);
        context.update(LABEL);
        context.update(&ip.octets());
        context.update(&from.port().to_be_bytes());
        context.update(&dcid.0.to_be_bytes());
        context.update(&expiry.to_be_bytes());
        context.sign()
    }

    fn millis(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.epoch).as_millis() as u64
    }

    /// A cookie for `from`'s Initial to `dcid`, valid for `lifetime`.
    pub(crate) fn mint(
        &self,
        now: Instant,
        lifetime: Duration,
        from: SocketAddr,
        dcid: ConnectionId,
    ) -> [u8; COOKIE_LEN] {
        let expiry = self.millis(now + lifetime);
        let mut cookie = [0u8; COOKIE_LEN];
        cookie[..8].copy_from_slice(&expiry.to_be_bytes());
        cookie[8..].copy_from_slice(&self.tag(from, dcid, expiry).as_ref()[..TAG_LEN]);
        cookie
    }

    /// Checks a cookie sent back from `from` with an Initial to `dcid`.
    pub(crate) fn verify(
        &self,
        now: Instant,
        from: SocketAddr,
        dcid: ConnectionId,
        cookie: &[u8],
    ) -> Result<(), CookieError> {
        let Some((expiry, tag)) = cookie.split_first_chunk::<8>() else {
            return Err(CookieError::Invalid);
        };
        if tag.len() != TAG_LEN {
            return Err(CookieError::Invalid);
        }
        let expiry = u64::from_be_bytes(*expiry);
        let expected = self.tag(from, dcid, expiry);
        // Every byte compared, so that timing does not tell how much of a
        // forged tag was right.
        let difference = expected.as_ref()[..TAG_LEN]
            .iter()
            .zip(tag)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if difference != 0 {
            return Err(CookieError::Invalid);
        }
        if self.millis(now) >= expiry {
            return Err(CookieError::Expired);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().expect("an address")
    }

    #[test]
    fn a_cookie_opens_only_for_its_address_port_connection_and_time() {
        let epoch = Instant::now();
        let key = CookieKey::new([7; 32], epoch);
        let from = addr("192.0.2.1:4000");
        let dcid = ConnectionId(42);
        let life = Duration::from_secs(10);
        let cookie = key.mint(epoch, life, from, dcid);
        assert_eq!(key.verify(epoch, from, dcid, &cookie), Ok(()));
        let just_before = epoch + life - Duration::from_millis(1);
        assert_eq!(key.verify(just_before, from, dcid, &cookie), Ok(()));
        assert_eq!(
            key.verify(epoch + life, from, dcid, &cookie),
            Err(CookieError::Expired)
        );
        for (other, other_dcid) in [
            (addr("192.0.2.2:4000"), dcid),
            (addr("192.0.2.1:4001"), dcid),
            (from, ConnectionId(43)),
        ] {
            assert_eq!(
                key.verify(epoch, other, other_dcid, &cookie),
                Err(CookieError::Invalid)
            );
        }
        let other_server = CookieKey::new([8; 32], epoch);
        assert_eq!(
            other_server.verify(epoch, from, dcid, &cookie),
            Err(CookieError::Invalid)
        );
        // A later expiry written over the first does not authenticate.
        let mut extended = cookie;
        extended[..8].copy_from_slice(&u64::MAX.to_be_bytes());
        assert_eq!(
            key.verify(epoch, from, dcid, &extended),
            Err(CookieError::Invalid)
        );
        for bit in 0..COOKIE_LEN * 8 {
            let mut flipped = cookie;
            flipped[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(
                key.verify(epoch, from, dcid, &flipped),
                Err(CookieError::Invalid),
                "bit {bit}"
            );
        }
        assert_eq!(
            key.verify(epoch, from, dcid, &cookie[..COOKIE_LEN - 1]),
            Err(CookieError::Invalid)
        );
    }
}
