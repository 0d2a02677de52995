//! How many client threads `npt http` runs when `--threads` is not given. One single-threaded
//! event loop per CPU is right on a dedicated load machine, wrong when the server under test
//! shares the machine: then the client's threads take the CPUs the server needs. Pure apart
//! from [`is_local`], which asks the kernel whether an address is this machine's.

/// How many client threads a run uses, and why (for `--help`, the banner and the result's
/// `config`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadChoice {
    pub threads: usize,
    pub why: String,
}

pub use npt_client::workers::is_local;

/// The default when `--threads` is not given, from the CPUs this process may use, whether
/// the server runs on the same machine, and whether every request opens a connection. A server
/// on this machine needs CPUs of its own: on the 2-core development box one runtime thread per
/// CPU gave 0.74–0.78× the req/s of h2load against nginx, one thread ~1.0–1.2×. So a local
/// target gets half the CPUs (at least one), and a remote one — a dedicated load machine —
/// gets every CPU. Except `--new-conn`: connect and close cost the client's kernel about as
/// much as the server's, and there one thread gave ~0.86× the req/s of two against nginx, so
/// it keeps one thread per CPU.
pub fn choose_threads(
    given: Option<usize>,
    cpus: usize,
    local: bool,
    new_conn: bool,
) -> ThreadChoice {
    let cpus = cpus.max(1);
    match given {
        Some(n) => ThreadChoice {
            threads: n.max(1),
            why: "--threads".into(),
        },
        None if local && new_conn => ThreadChoice {
            threads: cpus,
            why: format!(
                "target is on this machine, but --new-conn: connection setup costs the client as much as the server, one per CPU ({cpus})"
            ),
        },
        None if local => ThreadChoice {
            threads: (cpus / 2).max(1),
            why: format!(
                "target is on this machine: half of {cpus} CPUs, the rest left to the server"
            ),
        },
        None => ThreadChoice {
            threads: cpus,
            why: format!("remote target: one per CPU ({cpus})"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_leave_cpus_to_a_local_server() {
        assert_eq!(choose_threads(None, 2, true, false).threads, 1);
        assert_eq!(choose_threads(None, 8, true, false).threads, 4);
        assert_eq!(choose_threads(None, 1, true, false).threads, 1);
        assert_eq!(choose_threads(None, 8, false, false).threads, 8);
        assert_eq!(choose_threads(None, 2, true, true).threads, 2);
        let given = choose_threads(Some(3), 2, true, false);
        assert_eq!((given.threads, given.why.as_str()), (3, "--threads"));
        assert!(choose_threads(None, 2, true, false)
            .why
            .contains("this machine"));
        assert!(choose_threads(None, 2, true, true)
            .why
            .contains("--new-conn"));
        assert!(is_local("127.0.0.1:80".parse().unwrap()));
        assert!(is_local("[::1]:80".parse().unwrap()) || !ipv6_loopback_usable());
        // TEST-NET-3 is never assigned to an interface.
        assert!(!is_local("203.0.113.7:80".parse().unwrap()));
    }

    fn ipv6_loopback_usable() -> bool {
        std::net::UdpSocket::bind("[::1]:0").is_ok()
    }
}
