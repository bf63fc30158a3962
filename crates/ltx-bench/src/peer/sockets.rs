//! Socket options the peers set through libc: buffer sizes past the
//! unprivileged limit, and TCP's congestion controller.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Asks for `bytes` of send and receive buffer on `socket`: on a long-delay
/// path a window is only as large as the buffers behind it (50 Mbit/s ×
/// 600 ms is 3.75 MB). The `…FORCE` options, open to root, pass the
/// machine's `net.core.wmem_max` / `rmem_max`, so they are tried first. For
/// TCP this also replaces autotuning, whose per-namespace ceiling
/// (`tcp_wmem`, 4 MiB by default) is too small for the longest paths.
pub(crate) fn set_buffers(socket: BorrowedFd<'_>, bytes: u64) -> io::Result<()> {
    let value = libc::c_int::try_from(bytes / 2)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "socket buffer too large"))?;
    // The kernel doubles the value it is given, to leave room for its own
    // bookkeeping; halving it makes `bytes` what the socket ends up with.
    for (forced, plain) in [
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
    ] {
        if set_int(socket, libc::SOL_SOCKET, forced, value).is_err() {
            set_int(socket, libc::SOL_SOCKET, plain, value)?;
        }
    }
    Ok(())
}

/// Sets TCP's congestion controller of `socket`, such as `cubic` or `bbr`;
/// fails when the kernel does not have it (see
/// `/proc/sys/net/ipv4/tcp_available_congestion_control`).
pub(crate) fn set_congestion_control(socket: BorrowedFd<'_>, name: &str) -> io::Result<()> {
    // SAFETY: the pointer and length describe `name`'s bytes, which stay
    // alive for the call; the kernel only reads them.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn set_int(socket: BorrowedFd<'_>, level: i32, option: i32, value: libc::c_int) -> io::Result<()> {
    // SAFETY: the pointer and length describe `value`, alive for the call.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            option,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use super::*;

    /// The size asked for is what the socket reports (the kernel's doubling
    /// undone), when the process may pass the unprivileged limit; below that
    /// limit it holds for everyone.
    #[test]
    fn a_buffer_set_is_the_size_the_socket_reports() {
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        set_buffers(socket.as_fd(), 100_000).unwrap();
        let mut value: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: value and len are valid for writes of their sizes.
        let rc = unsafe {
            libc::getsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&mut value as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        assert_eq!(rc, 0);
        assert_eq!(value, 100_000);
    }

    #[test]
    fn an_unknown_congestion_controller_is_refused() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        assert!(set_congestion_control(listener.as_fd(), "no-such-controller").is_err());
        set_congestion_control(listener.as_fd(), "cubic").unwrap();
    }
}
