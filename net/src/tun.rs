//! A layer-3 TUN device (`IFF_TUN | IFF_NO_PI`): each read returns one IP packet the kernel
//! routed to the device, each write injects one IP packet as if received on it.
//!
//! The device is created in the network namespace of the calling thread and is not
//! persistent: it disappears when its file descriptor closes.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::error::{NetError, Result};
use crate::preflight::TUN_DEVICE;

/// An open TUN device.
#[derive(Debug)]
pub struct TunDevice {
    fd: OwnedFd,
    name: String,
}

impl TunDevice {
    /// Creates the TUN device `name` in the calling thread's network namespace, non-blocking.
    pub fn create(name: &str) -> Result<Self> {
        let fd = open_clone_device()?;
        let mut request = interface_request(name)?;
        // SAFETY: `request` is a valid ifreq that outlives the call; TUNSETIFF reads and
        // writes only that struct.
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut request) };
        if rc < 0 {
            return Err(NetError::last_os(format!(
                "TUNSETIFF {name} on {TUN_DEVICE}"
            )));
        }
        Ok(TunDevice {
            fd,
            name: name.to_string(),
        })
    }

    /// The interface name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device's file descriptor.
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// Gives up the device, keeping its file descriptor (the device lives as long as it).
    pub fn into_fd(self) -> OwnedFd {
        self.fd
    }
}

fn open_clone_device() -> Result<OwnedFd> {
    let path = std::ffi::CString::new(TUN_DEVICE).map_err(|_| {
        NetError::io(
            format!("opening {TUN_DEVICE}"),
            std::io::Error::from(std::io::ErrorKind::InvalidInput),
        )
    })?;
    // SAFETY: `path` is a valid NUL-terminated string.
    let raw = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if raw < 0 {
        return Err(NetError::last_os(format!("opening {TUN_DEVICE}")));
    }
    // SAFETY: `raw` is a freshly opened descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

fn interface_request(name: &str) -> Result<libc::ifreq> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains('\0') {
        return Err(NetError::io(
            format!("TUN device name {name:?}"),
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("must be 1 to {} bytes without NUL", libc::IFNAMSIZ - 1),
            ),
        ));
    }
    // SAFETY: ifreq is plain old data; all zeroes is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(name.bytes()) {
        *slot = byte as libc::c_char;
    }
    request.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_names_the_kernel_would_truncate() {
        assert!(interface_request("").is_err());
        assert!(interface_request("sixteen-bytes-xx").is_err());
        assert!(interface_request("delay0").is_ok());
    }
}
