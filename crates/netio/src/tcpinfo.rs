//! The kernel's own view of a TCP connection (`getsockopt(TCP_INFO)`): how many segments it
//! retransmitted, the RTT and RTT variance it measured, its congestion window, the rate it
//! delivered at, and the bytes the peer acknowledged or sent. A TCP workload reads this per
//! connection because TCP hides loss from the application: a path that drops 2 % shows up
//! here as retransmissions, and nowhere else.
//!
//! The layout is the kernel's `struct tcp_info` (`include/uapi/linux/tcp.h`), declared here
//! rather than taken from `libc`, whose glibc flavour stops before `tcpi_bytes_acked`. The
//! struct only ever grew at its end, and the kernel copies `min(asked, its own)` bytes and
//! says how many: fields past what an older kernel fills come back as `None`.

use std::io;
use std::mem;
use std::os::fd::RawFd;

/// `struct tcp_info` up to `tcpi_bytes_retrans` (Linux 4.19+); all integers native-endian.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RawTcpInfo {
    state: u8,
    ca_state: u8,
    retransmits: u8,
    probes: u8,
    backoff: u8,
    options: u8,
    wscale: u8,
    app_limited: u8,
    rto: u32,
    ato: u32,
    snd_mss: u32,
    rcv_mss: u32,
    unacked: u32,
    sacked: u32,
    lost: u32,
    retrans: u32,
    fackets: u32,
    last_data_sent: u32,
    last_ack_sent: u32,
    last_data_recv: u32,
    last_ack_recv: u32,
    pmtu: u32,
    rcv_ssthresh: u32,
    rtt: u32,
    rttvar: u32,
    snd_ssthresh: u32,
    snd_cwnd: u32,
    advmss: u32,
    reordering: u32,
    rcv_rtt: u32,
    rcv_space: u32,
    total_retrans: u32,
    pacing_rate: u64,
    max_pacing_rate: u64,
    bytes_acked: u64,
    bytes_received: u64,
    segs_out: u32,
    segs_in: u32,
    notsent_bytes: u32,
    min_rtt: u32,
    data_segs_in: u32,
    data_segs_out: u32,
    delivery_rate: u64,
    busy_time: u64,
    rwnd_limited: u64,
    sndbuf_limited: u64,
    delivered: u32,
    delivered_ce: u32,
    bytes_sent: u64,
    bytes_retrans: u64,
}

/// Byte offsets in `struct tcp_info` just past a field: what the kernel must have written for
/// that field to be filled in.
const END_TOTAL_RETRANS: usize = 104;
const END_MAX_PACING_RATE: usize = 120;
const END_BYTES_RECEIVED: usize = 136;
const END_MIN_RTT: usize = 152;
const END_DATA_SEGS_OUT: usize = 160;
const END_DELIVERY_RATE: usize = 168;
const END_BYTES_RETRANS: usize = 216;

/// One reading of a connection's `TCP_INFO`. Times in µs, as the kernel keeps them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// The TCP state (1 = established).
    pub state: u8,
    /// Segments retransmitted over the connection's life (`tcpi_total_retrans`).
    pub total_retrans: u32,
    /// Smoothed RTT (`tcpi_rtt`), µs.
    pub rtt_us: u32,
    /// RTT mean deviation (`tcpi_rttvar`), µs.
    pub rttvar_us: u32,
    /// The receiver's RTT estimate (`tcpi_rcv_rtt`), µs: what a connection that only receives
    /// knows of the RTT (its `rtt_us` has no samples after the handshake). 0 = none yet.
    pub rcv_rtt_us: u32,
    /// Congestion window, segments (`tcpi_snd_cwnd`).
    pub snd_cwnd: u32,
    /// Sender MSS, bytes: `snd_cwnd × snd_mss` is the window in bytes.
    pub snd_mss: u32,
    /// Segments sent but not yet acknowledged, and of those the ones the kernel thinks lost.
    pub unacked: u32,
    pub lost: u32,
    /// The pacing cap set on the socket (`tcpi_max_pacing_rate`, bytes/s; `u64::MAX` = none).
    pub max_pacing_rate: Option<u64>,
    /// Bytes the peer acknowledged (`tcpi_bytes_acked`; None before Linux 4.1).
    pub bytes_acked: Option<u64>,
    /// Bytes received from the peer (`tcpi_bytes_received`).
    pub bytes_received: Option<u64>,
    /// The lowest RTT seen (`tcpi_min_rtt`), µs.
    pub min_rtt_us: Option<u32>,
    /// Data segments sent, retransmits included (`tcpi_data_segs_out`, Linux 4.6+).
    pub data_segs_out: Option<u32>,
    /// The kernel's estimate of the rate it is delivering at, bytes/s (`tcpi_delivery_rate`).
    pub delivery_rate: Option<u64>,
    /// Bytes sent, and of those bytes retransmitted (Linux 4.19+).
    pub bytes_sent: Option<u64>,
    pub bytes_retrans: Option<u64>,
}

impl TcpInfo {
    /// `delivery_rate` in bits/s.
    pub fn delivery_rate_bps(&self) -> Option<f64> {
        self.delivery_rate.map(|b| b as f64 * 8.0)
    }
}

/// Reads `TCP_INFO` of the TCP socket `fd`.
pub fn tcp_info(fd: RawFd) -> io::Result<TcpInfo> {
    let mut raw = RawTcpInfo::default();
    // 216 bytes: fits any `socklen_t`.
    let mut len = libc::socklen_t::try_from(mem::size_of::<RawTcpInfo>()).unwrap_or(0);
    // SAFETY: `raw` is a plain C struct of `len` bytes that outlives the call; the kernel
    // writes at most `len` bytes into it and stores how many in `len`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut raw as *mut RawTcpInfo).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(from_raw(&raw, usize::try_from(len).unwrap_or(0)))
}

/// The congestion control algorithm the kernel runs on the TCP socket `fd` (`TCP_CONGESTION`
/// read back): what a connection actually used, whether it was asked for or the system's
/// default.
pub fn congestion(fd: RawFd) -> io::Result<String> {
    // TCP_CA_NAME_MAX: the kernel's names are at most 16 bytes, NUL-padded.
    let mut name = [0u8; 16];
    let mut len = libc::socklen_t::try_from(name.len()).unwrap_or(0);
    // SAFETY: `name` is `len` writable bytes that outlive the call; the kernel writes at most
    // `len` bytes and stores how many in `len`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let got = name
        .get(..usize::try_from(len).unwrap_or(0))
        .unwrap_or_default();
    let end = got.iter().position(|&b| b == 0).unwrap_or(got.len());
    Ok(String::from_utf8_lossy(got.get(..end).unwrap_or_default()).into_owned())
}

/// Caps the rate at which the kernel sends on socket `fd` (`SO_MAX_PACING_RATE`, bytes/s of
/// packets, headers included). TCP then paces its packets by itself (since Linux 4.13; the fq
/// qdisc is not needed), whatever its congestion control.
pub fn set_max_pacing_rate(fd: RawFd, bytes_per_s: u64) -> io::Result<()> {
    // A 32-bit value where it fits: every kernel reads that; a 64-bit one needs Linux 4.20+.
    let small = u32::try_from(bytes_per_s).ok();
    let (ptr, len): (*const libc::c_void, usize) = match &small {
        Some(v) => ((v as *const u32).cast(), mem::size_of::<u32>()),
        None => ((&bytes_per_s as *const u64).cast(), mem::size_of::<u64>()),
    };
    let len = libc::socklen_t::try_from(len).unwrap_or(0);
    // SAFETY: `ptr` points at `len` readable bytes (`small` or `bytes_per_s`) that outlive the
    // call; the kernel copies them.
    let rc = unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE, ptr, len) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sets the congestion control algorithm of the TCP socket `fd` (`TCP_CONGESTION`, e.g.
/// `cubic`, `bbr`): it must be one the kernel has (`tcp_available_congestion_control`), and
/// an unprivileged process may pick only those in `tcp_allowed_congestion_control`.
pub fn set_congestion(fd: RawFd, name: &str) -> io::Result<()> {
    let len = libc::socklen_t::try_from(name.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name too long"))?;
    // SAFETY: `name` is `len` readable bytes that outlive the call; the kernel copies them.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The fields `filled` bytes of `raw` hold.
fn from_raw(raw: &RawTcpInfo, filled: usize) -> TcpInfo {
    let has = |end: usize| filled >= end;
    let legacy = has(END_TOTAL_RETRANS);
    TcpInfo {
        state: raw.state,
        total_retrans: if legacy { raw.total_retrans } else { 0 },
        rtt_us: raw.rtt,
        rttvar_us: raw.rttvar,
        rcv_rtt_us: raw.rcv_rtt,
        snd_cwnd: raw.snd_cwnd,
        snd_mss: raw.snd_mss,
        unacked: raw.unacked,
        lost: raw.lost,
        max_pacing_rate: has(END_MAX_PACING_RATE).then_some(raw.max_pacing_rate),
        bytes_acked: has(END_BYTES_RECEIVED).then_some(raw.bytes_acked),
        bytes_received: has(END_BYTES_RECEIVED).then_some(raw.bytes_received),
        min_rtt_us: has(END_MIN_RTT).then_some(raw.min_rtt),
        data_segs_out: has(END_DATA_SEGS_OUT).then_some(raw.data_segs_out),
        delivery_rate: has(END_DELIVERY_RATE).then_some(raw.delivery_rate),
        bytes_sent: has(END_BYTES_RETRANS).then_some(raw.bytes_sent),
        bytes_retrans: has(END_BYTES_RETRANS).then_some(raw.bytes_retrans),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    /// The offsets match the kernel header (a field moved here would read another's value).
    #[test]
    fn layout_is_the_kernels() {
        let r = RawTcpInfo::default();
        let base = &r as *const RawTcpInfo as usize;
        let off = |p: *const u8| p as usize - base;
        assert_eq!(off((&r.rto as *const u32).cast()), 8);
        assert_eq!(off((&r.rtt as *const u32).cast()), 68);
        assert_eq!(off((&r.snd_cwnd as *const u32).cast()), 80);
        assert_eq!(off((&r.total_retrans as *const u32).cast()), 100);
        assert_eq!(off((&r.max_pacing_rate as *const u64).cast()), 112);
        assert_eq!(off((&r.bytes_acked as *const u64).cast()), 120);
        assert_eq!(off((&r.min_rtt as *const u32).cast()), 148);
        assert_eq!(off((&r.data_segs_out as *const u32).cast()), 156);
        assert_eq!(off((&r.delivery_rate as *const u64).cast()), 160);
        assert_eq!(off((&r.bytes_retrans as *const u64).cast()), 208);
        assert_eq!(mem::size_of::<RawTcpInfo>(), END_BYTES_RETRANS);
    }

    #[test]
    fn an_older_kernel_leaves_the_newer_fields_out() {
        let raw = RawTcpInfo {
            total_retrans: 3,
            bytes_acked: 7,
            delivery_rate: 9,
            ..RawTcpInfo::default()
        };
        let old = from_raw(&raw, END_TOTAL_RETRANS);
        assert_eq!(
            (old.total_retrans, old.bytes_acked, old.delivery_rate),
            (3, None, None)
        );
        let new = from_raw(&raw, END_BYTES_RETRANS);
        assert_eq!((new.bytes_acked, new.delivery_rate), (Some(7), Some(9)));
    }

    /// A loopback connection that moved 4 MiB: the kernel saw an RTT, a window, the bytes
    /// acknowledged on the sender and received on the receiver.
    #[test]
    fn reads_a_loopback_connection() {
        const N: usize = 4 << 20;
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let sink = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = vec![0u8; 64 * 1024];
            let mut got = 0;
            while got < N {
                let n = s.read(&mut buf).unwrap();
                assert!(n > 0, "closed early");
                got += n;
            }
            let info = tcp_info(s.as_raw_fd()).unwrap();
            s.write_all(b"k").unwrap();
            // Open until the client has read its own side (then it closes: EOF).
            let _ = s.read(&mut buf);
            info
        });
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(&vec![0x5a; N]).unwrap();
        let mut k = [0u8; 1];
        c.read_exact(&mut k).unwrap(); // every byte is received, so acknowledged
        let sent = tcp_info(c.as_raw_fd()).unwrap();
        drop(c);
        let recv = sink.join().unwrap();
        assert_eq!(sent.state, 1, "established");
        assert!(
            sent.rtt_us > 0 && sent.snd_cwnd > 0 && sent.snd_mss > 0,
            "{sent:?}"
        );
        assert!(sent.bytes_acked.unwrap() >= N as u64, "{sent:?}");
        assert!(recv.bytes_received.unwrap() >= N as u64, "{recv:?}");
        // Not 0 always: on a busy box a tail-loss probe fires now and then, even on loopback.
        assert!(sent.total_retrans < 100, "{sent:?}");
        assert!(sent.delivery_rate_bps().unwrap() > 0.0, "{sent:?}");
        // 4 MiB in segments of at most 64 KiB (loopback's MSS is large; GSO sends more).
        assert!(sent.data_segs_out.unwrap() >= 64, "{sent:?}");
        assert!(tcp_info(-1).is_err(), "not a socket");
    }

    /// What is set on a socket is what the kernel reads back: the congestion control by name,
    /// the pacing cap in `TCP_INFO`.
    #[test]
    fn congestion_and_pacing_read_back() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let fd = c.as_raw_fd();
        let default = congestion(fd).unwrap();
        assert!(!default.is_empty() && default.is_ascii(), "{default:?}");
        let avail = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
            .unwrap_or_default();
        if avail.split_whitespace().any(|n| n == "cubic") {
            set_congestion(fd, "cubic").unwrap();
            assert_eq!(congestion(fd).unwrap(), "cubic");
        }
        assert!(set_congestion(fd, "no-such-cc").is_err());
        assert_eq!(
            tcp_info(fd).unwrap().max_pacing_rate,
            Some(u64::MAX),
            "no cap yet"
        );
        set_max_pacing_rate(fd, 687_500).unwrap();
        assert_eq!(tcp_info(fd).unwrap().max_pacing_rate, Some(687_500));
        set_max_pacing_rate(fd, 5 << 32).unwrap();
        assert_eq!(
            tcp_info(fd).unwrap().max_pacing_rate,
            Some(5 << 32),
            "64 bits"
        );
        assert!(congestion(-1).is_err() && set_max_pacing_rate(-1, 1).is_err());
    }
}
