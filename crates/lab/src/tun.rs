//! TUN devices: the two ends of an emulated link. Each end is a TUN interface in its node's
//! namespace; the lab holds both descriptors and moves IP packets between them.
//!
//! Hand-written because it is two ioctls (`TUNSETIFF`, then `O_NONBLOCK`): the `tun` crates
//! wrap the same calls behind async runtimes and device-configuration layers the lab does not
//! want (addresses and MTU are set with `ip`, in [`crate::netns`]). Without `IFF_VNET_HDR` a
//! TUN device offers no segmentation offload, so the kernel hands it MTU-sized packets and a
//! configured loss hits real packets — the "offloads off" rule holds by construction.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// One TUN device (removed by the kernel when this closes: it is not persistent).
pub struct Tun {
    file: File,
}

impl Tun {
    /// Creates TUN device `name` in the calling thread's namespace, non-blocking.
    pub fn create(name: &str) -> io::Result<Tun> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("interface name {name:?} must be 1 to 15 bytes"),
            ));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/net/tun")
            .map_err(|e| io::Error::new(e.kind(), format!("/dev/net/tun: {e}")))?;
        let mut req = IfReq {
            name: [0; libc::IFNAMSIZ],
            flags: IFF_TUN | IFF_NO_PI,
            _pad: [0; 22],
        };
        // NO-PANIC: `name` is 1 to IFNAMSIZ - 1 bytes (checked above), `req.name` IFNAMSIZ.
        #[allow(clippy::indexing_slicing)]
        req.name[..name.len()].copy_from_slice(name.as_bytes());
        // SAFETY: TUNSETIFF reads and writes an ifreq, which IfReq lays out (name, flags, pad
        // to 40 bytes); the descriptor is a fresh /dev/net/tun.
        if unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF, &mut req) } < 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = file.as_raw_fd();
        // SAFETY: fcntl on our own descriptor.
        unsafe {
            let fl = libc::fcntl(fd, libc::F_GETFL);
            if fl < 0 || libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK) < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(Tun { file })
    }

    pub fn fd(&self) -> i32 {
        self.file.as_raw_fd()
    }

    /// One packet, or `WouldBlock`.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: read into a buffer we own, bounded by its length.
        let n = unsafe { libc::read(self.fd(), buf.as_mut_ptr().cast(), buf.len()) };
        // A negative count is the error return (-1).
        usize::try_from(n).map_err(|_| io::Error::last_os_error())
    }

    /// One packet out (the other end's kernel receives it as if from a wire).
    pub fn send(&self, pkt: &[u8]) -> io::Result<usize> {
        // SAFETY: write from a buffer we own, bounded by its length.
        let n = unsafe { libc::write(self.fd(), pkt.as_ptr().cast(), pkt.len()) };
        // A negative count is the error return (-1).
        usize::try_from(n).map_err(|_| io::Error::last_os_error())
    }
}
