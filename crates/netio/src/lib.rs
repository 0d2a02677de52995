//! Thin Linux socket helpers for npt's packet hot loops.
//!
//! Why not tokio here: a probe at 20,000 pps needs a send every 50 µs, and tokio's timer wheel
//! has millisecond granularity; an echo at 150,000 pps needs one syscall per *batch*, and
//! tokio's `UdpSocket` has no `recvmmsg`/`sendmmsg`. So the UDP hot loops run on their own
//! threads over these few wrappers: batched receive/send ([`MsgBatch`]), a wait with a
//! nanosecond timeout ([`wait`]), and a 1 ns timer slack ([`tighten_timer_slack`]); and the
//! kernel's view of a TCP connection ([`tcpinfo`]: retransmits, RTT, window, delivery rate),
//! and a bulk reader's wake-up mark ([`lowat`]); the kernel's receive time and TTL of each
//! datagram and the clock's synchronization ([`rxtime`]); segmentation offload both ways
//! ([`offload`]: GSO, GRO), and a GRO receive cut back into one datagram per slot for a
//! responder ([`spread`]). Everything unsafe in npt's socket code is in this crate.
#![deny(clippy::indexing_slicing)] // reads socket addresses and control messages from the kernel

mod batch;
pub mod clockpair;
pub mod lowat;
pub mod offload;
pub mod pmtu;
pub mod rxtime;
pub mod spread;
pub mod tcpinfo;
mod wait;

pub use batch::MsgBatch;
pub use wait::{wait, PollSet, Ready};

/// Asks the kernel to wake this thread's timers within 1 ns of their deadline instead of the
/// default 50 µs slack, so paced sends at tens of kpps leave on time.
pub fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long and affects only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Sets SO_RCVBUF/SO_SNDBUF, asking for `bytes` (the kernel may give less).
pub fn set_buffers(sock: &socket2::Socket, bytes: usize) {
    let _ = sock.set_recv_buffer_size(bytes);
    let _ = sock.set_send_buffer_size(bytes);
}

/// Raises this process's open-file limit to its hard limit (a server or a load generator with
/// thousands of connections needs more than the usual soft 1024).
pub fn raise_nofile_limit() {
    // SAFETY: getrlimit/setrlimit with a valid struct.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && r.rlim_cur < r.rlim_max {
            r.rlim_cur = r.rlim_max;
            let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
}
