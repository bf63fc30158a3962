//! Drivers for the fuzz targets under `fuzz/` (and for this crate's tests
//! on random inputs): each feeds arbitrary bytes to the parsers and checks
//! the [wire](crate::wire) contract. A parser never panics; what it asks
//! for is more than it was given and no more than the message's longest;
//! a message it reads re-emits to bytes that read back to the same
//! message, of the same length.

use crate::wire::socks5::{self, Greeting, Reply, Request, UserPass};
use crate::wire::{
    OpenRequest, OpenResult, Parsed, StreamRequest, MAX_REQUEST_LEN, MAX_RESULT_LEN,
    MAX_STREAM_REQUEST_LEN,
};

/// Checks the contract for one parser on `data`.
fn check<T, E>(
    data: &[u8],
    max: usize,
    parse: impl Fn(&[u8]) -> Result<Parsed<T>, E>,
    emit: impl Fn(&T, &mut Vec<u8>),
) where
    T: PartialEq + std::fmt::Debug,
{
    match parse(data) {
        Err(_) => {}
        Ok(Parsed::Incomplete { needed }) => {
            assert!(
                needed > data.len(),
                "asked for {needed} with {} given",
                data.len()
            );
            assert!(needed <= max, "asked for {needed}, past the longest {max}");
        }
        Ok(Parsed::Complete { value, len }) => {
            assert!(
                len <= data.len() && len <= max,
                "took {len} of {}",
                data.len()
            );
            let mut emitted = Vec::new();
            emit(&value, &mut emitted);
            match parse(&emitted) {
                Ok(Parsed::Complete {
                    value: again,
                    len: again_len,
                }) => {
                    assert_eq!(again, value, "re-emitted bytes read as another message");
                    assert_eq!(again_len, emitted.len());
                }
                other => panic!(
                    "{value:?} re-emitted as {emitted:?} reads as {:?}",
                    other.is_ok()
                ),
            }
        }
    }
}

/// The stream header: `data` as an open request, an open result and
/// either first message of a client's stream.
pub fn stream_header(data: &[u8]) {
    check(data, MAX_REQUEST_LEN, OpenRequest::parse, OpenRequest::emit);
    check(data, MAX_RESULT_LEN, OpenResult::parse, OpenResult::emit);
    check(
        data,
        MAX_STREAM_REQUEST_LEN,
        StreamRequest::parse,
        StreamRequest::emit,
    );
}

/// SOCKS5: `data` as a greeting, a request, a reply and a
/// username/password request.
pub fn socks5(data: &[u8]) {
    check(
        data,
        socks5::MAX_GREETING_LEN,
        Greeting::parse,
        Greeting::emit,
    );
    check(data, socks5::MAX_REQUEST_LEN, Request::parse, Request::emit);
    check(data, socks5::MAX_REPLY_LEN, Reply::parse, Reply::emit);
    check(
        data,
        socks5::MAX_USER_PASS_LEN,
        UserPass::parse,
        UserPass::emit,
    );
}
