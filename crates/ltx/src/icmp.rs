//! ICMP errors for the datagrams a socket sent: "nothing listens on that
//! port", "that host cannot be reached". An unconnected UDP socket hears
//! of them only with `IP_RECVERR` (`IPV6_RECVERR`) on, from its error
//! queue (see ip(7)); without them a client that sends to a closed port
//! waits out its handshake time-out.
//!
//! Linux only; elsewhere nothing is enabled and nothing is read.

use std::net::SocketAddr;

use ltx_proto::Unreachable;

/// An ICMP error: where the datagram that caused it was going, and why it
/// did not arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IcmpError {
    /// The destination of the datagram the error is about.
    pub(crate) destination: SocketAddr,
    /// What the error says.
    pub(crate) why: Unreachable,
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io;
    use std::mem::{size_of, zeroed};
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
    use std::os::fd::{AsRawFd, RawFd};

    use ltx_proto::Unreachable;

    use super::IcmpError;

    /// `SO_EE_ORIGIN_ICMP` and `SO_EE_ORIGIN_ICMP6` (linux/errqueue.h).
    const ORIGIN_ICMP: u8 = 2;
    const ORIGIN_ICMP6: u8 = 3;
    /// Errors read from the queue at most per call: the queue is bounded
    /// by the socket's receive buffer, and a flood of errors must not keep
    /// the driver from its datagrams.
    const MAX_ERRORS: usize = 64;

    /// `struct sock_extended_err` (linux/errqueue.h).
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct ExtendedError {
        errno: u32,
        origin: u8,
        kind: u8,
        code: u8,
        pad: u8,
        info: u32,
        data: u32,
    }

    /// Turns on the error queue for ICMP errors on `socket`, of both
    /// families (a dual-stack socket hears IPv4 errors through the IPv4
    /// option). A refusal is not an error: the socket then works as
    /// before, without the early answer.
    pub(crate) fn enable(socket: &impl AsRawFd) {
        let fd = socket.as_raw_fd();
        let on: libc::c_int = 1;
        for (level, name) in [
            (libc::IPPROTO_IP, libc::IP_RECVERR),
            (libc::IPPROTO_IPV6, libc::IPV6_RECVERR),
        ] {
            // SAFETY: `fd` is an open socket for the call's duration, and
            // the option value is a live c_int of the length given.
            unsafe {
                libc::setsockopt(
                    fd,
                    level,
                    name,
                    (&on as *const libc::c_int).cast(),
                    size_of::<libc::c_int>() as libc::socklen_t,
                );
            }
        }
    }

    /// Reads the ICMP errors queued on `socket` (without waiting).
    pub(crate) fn take(socket: &impl AsRawFd) -> Vec<IcmpError> {
        let fd = socket.as_raw_fd();
        let mut errors = Vec::new();
        for _ in 0..MAX_ERRORS {
            match read_one(fd) {
                Ok(Some(error)) => errors.push(error),
                // An error of another kind (not ICMP, or not one ltx acts
                // on): read and dropped.
                Ok(None) => {}
                Err(_) => break,
            }
        }
        errors
    }

    /// Reads one entry of the error queue.
    fn read_one(fd: RawFd) -> io::Result<Option<IcmpError>> {
        // SAFETY: all-zero is a valid value of these plain C structs.
        let mut name: libc::sockaddr_storage = unsafe { zeroed() };
        let mut control = [0u64; 64];
        let mut data = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: data.as_mut_ptr().cast(),
            iov_len: data.len(),
        };
        // SAFETY: as above.
        let mut header: libc::msghdr = unsafe { zeroed() };
        header.msg_name = (&mut name as *mut libc::sockaddr_storage).cast();
        header.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        header.msg_iov = &mut iov;
        header.msg_iovlen = 1;
        header.msg_control = control.as_mut_ptr().cast();
        header.msg_controllen = std::mem::size_of_val(&control);
        // SAFETY: every pointer in `header` points at a live buffer of the
        // length it declares, for the duration of the call.
        let read =
            unsafe { libc::recvmsg(fd, &mut header, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
        if read < 0 {
            return Err(io::Error::last_os_error());
        }
        let Some(destination) = socket_address(&name) else {
            return Ok(None);
        };
        // SAFETY: the kernel filled `control` up to `msg_controllen` with
        // well-formed control messages, which CMSG_FIRSTHDR/NXTHDR walk
        // without leaving it.
        let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(&header) };
        while !cmsg.is_null() {
            // SAFETY: `cmsg` points at a header inside `control`.
            let (level, kind) = unsafe { ((*cmsg).cmsg_level, (*cmsg).cmsg_type) };
            let ours = (level == libc::IPPROTO_IP && kind == libc::IP_RECVERR)
                || (level == libc::IPPROTO_IPV6 && kind == libc::IPV6_RECVERR);
            if ours {
                // SAFETY: a RECVERR message carries a sock_extended_err
                // (then the offender's address), possibly unaligned.
                let error: ExtendedError =
                    unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast()) };
                return Ok(classify(&error).map(|why| IcmpError { destination, why }));
            }
            // SAFETY: as for CMSG_FIRSTHDR.
            cmsg = unsafe { libc::CMSG_NXTHDR(&header, cmsg) };
        }
        Ok(None)
    }

    /// What an ICMP error means for ltx, if it is one it acts on.
    fn classify(error: &ExtendedError) -> Option<Unreachable> {
        if error.origin != ORIGIN_ICMP && error.origin != ORIGIN_ICMP6 {
            return None;
        }
        match error.errno as i32 {
            libc::ECONNREFUSED => Some(Unreachable::PortClosed),
            libc::EHOSTUNREACH | libc::ENETUNREACH | libc::EHOSTDOWN | libc::EACCES => {
                Some(Unreachable::HostUnreachable)
            }
            _ => None,
        }
    }

    /// The address the kernel wrote into a `sockaddr_storage`.
    fn socket_address(name: &libc::sockaddr_storage) -> Option<SocketAddr> {
        match i32::from(name.ss_family) {
            libc::AF_INET => {
                // SAFETY: the family says the storage holds a sockaddr_in.
                let v4: libc::sockaddr_in = unsafe {
                    std::ptr::read_unaligned((name as *const libc::sockaddr_storage).cast())
                };
                let ip = Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr));
                Some(SocketAddr::V4(SocketAddrV4::new(
                    ip,
                    u16::from_be(v4.sin_port),
                )))
            }
            libc::AF_INET6 => {
                // SAFETY: the family says the storage holds a sockaddr_in6.
                let v6: libc::sockaddr_in6 = unsafe {
                    std::ptr::read_unaligned((name as *const libc::sockaddr_storage).cast())
                };
                let ip = Ipv6Addr::from(v6.sin6_addr.s6_addr);
                Some(SocketAddr::V6(SocketAddrV6::new(
                    ip,
                    u16::from_be(v6.sin6_port),
                    v6.sin6_flowinfo,
                    v6.sin6_scope_id,
                )))
            }
            _ => None,
        }
    }
}

#[cfg(target_os = "linux")]
pub(crate) use linux::{enable, take};

/// Nothing to enable off Linux.
#[cfg(not(target_os = "linux"))]
pub(crate) fn enable<S>(_socket: &S) {}

/// Nothing to read off Linux.
#[cfg(not(target_os = "linux"))]
pub(crate) fn take<S>(_socket: &S) -> Vec<IcmpError> {
    Vec::new()
}

/// Whether an error of a socket call is an ICMP error reported through it
/// (the error queue then holds its details).
pub(crate) fn is_icmp_error(error: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::ConnectionRefused
            | ErrorKind::HostUnreachable
            | ErrorKind::NetworkUnreachable
            | ErrorKind::PermissionDenied
    )
}
