//! A UDP flow's socket, direct or through a SOCKS5 relay (`--via socks5://`): the flows in
//! [`crate::udp`] and [`crate::udp_down`] send frames and read payloads without knowing which.
//! Through the relay every datagram is copied behind the association's header (one copy of at
//! most a datagram; the relay, a user-space process, is far slower than that), and each reply's
//! header is checked and skipped.

use std::io;
use std::net::UdpSocket;
use std::ops::Range;
use std::os::fd::{AsRawFd, RawFd};

use npt_proxy::udp_flow::SocksUdp;

/// The flow's socket: connected to the target, or to the relay of `socks`.
pub struct FlowSocket {
    sock: UdpSocket,
    socks: Option<SocksUdp>,
    out: Vec<u8>,
}

impl FlowSocket {
    pub fn direct(sock: UdpSocket) -> Self {
        FlowSocket {
            sock,
            socks: None,
            out: Vec::new(),
        }
    }

    /// `sock` connected to `socks`'s relay.
    pub fn relayed(sock: UdpSocket, socks: SocksUdp) -> Self {
        FlowSocket {
            sock,
            socks: Some(socks),
            out: Vec::new(),
        }
    }

    /// Sends one frame (a full socket buffer drops it, as a NIC queue would).
    pub fn send(&mut self, frame: &[u8]) -> io::Result<usize> {
        match &self.socks {
            None => self.sock.send(frame),
            Some(s) => {
                self.out.clear();
                self.out.extend_from_slice(s.header());
                self.out.extend_from_slice(frame);
                self.sock.send(&self.out)
            }
        }
    }

    /// Receives one datagram into `buf`: where its payload lies in `buf` (empty for a relay
    /// datagram with a bad header, which the caller's frame check then skips), and when the
    /// kernel received it (ns since the Unix epoch, [`npt_netio::rxtime::recv_stamped`]; the socket asked for
    /// stamps in [`crate::udp::open`]). `Err` when nothing is waiting (non-blocking) or the
    /// socket failed.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<(Range<usize>, Option<u64>)> {
        let (n, stamp) = npt_netio::rxtime::recv_stamped(self.sock.as_raw_fd(), buf)?;
        let Some(s) = &self.socks else {
            return Ok((0..n, stamp));
        };
        let d = buf.get(..n).unwrap_or_default();
        let r = match s.payload(d) {
            Ok(p) => n - p.len()..n,
            Err(_) => 0..0,
        };
        Ok((r, stamp))
    }
}

impl AsRawFd for FlowSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_direct_flow_reads_whole_datagrams() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        b.connect(a.local_addr().unwrap()).unwrap();
        let mut fa = FlowSocket::direct(a);
        let fb = FlowSocket::direct(b);
        assert_eq!(fa.send(b"frame").unwrap(), 5);
        let mut buf = [0u8; 64];
        let (r, _) = fb.recv(&mut buf).unwrap();
        assert_eq!(&buf[r], b"frame");
    }
}
