//! Kernel receive timestamps (SO_TIMESTAMPNS) on UDP sockets: when a datagram reached the
//! socket, as opposed to when the receiving thread got to run.

use std::net::UdpSocket;
use std::os::fd::AsRawFd;

use crate::timing::{monotonic_ns, realtime_minus_monotonic_ns};

/// Asks the kernel to stamp every datagram `socket` receives.
pub fn enable(socket: &UdpSocket) -> std::io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: the option value is a c_int that outlives the call, its size passed along.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Receives one datagram into `buffer`; returns its length and its arrival on the monotonic
/// clock (ns): the kernel's stamp when there is one (converted from the realtime clock), else
/// the time `recvmsg` returned.
pub fn recv_stamped(socket: &UdpSocket, buffer: &mut [u8]) -> std::io::Result<(usize, u64)> {
    let mut iov = libc::iovec {
        iov_base: buffer.as_mut_ptr().cast(),
        iov_len: buffer.len(),
    };
    let mut control = [0u64; 16];
    // SAFETY: msghdr is plain old data; all zeroes is a valid value.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = &mut iov;
    message.msg_iovlen = 1;
    message.msg_control = control.as_mut_ptr().cast();
    message.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: `message` points at the live iovec and control buffers above.
    let n = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut message, 0) };
    let returned = monotonic_ns();
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let arrival = kernel_stamp(&message)
        .and_then(|stamp| u64::try_from(i128::from(stamp) - realtime_minus_monotonic_ns()).ok())
        .unwrap_or(returned);
    Ok((n as usize, arrival))
}

/// The SCM_TIMESTAMPNS control message of a received message, realtime ns.
fn kernel_stamp(message: &libc::msghdr) -> Option<u64> {
    // SAFETY: `message` was filled by recvmsg; the CMSG macros stay within msg_controllen.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(message);
        while !header.is_null() {
            let h = &*header;
            if h.cmsg_level == libc::SOL_SOCKET && h.cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec =
                    std::ptr::read_unaligned(libc::CMSG_DATA(header).cast::<libc::timespec>());
                return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            header = libc::CMSG_NXTHDR(message, header);
        }
    }
    None
}
