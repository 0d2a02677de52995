//! `--hop-allow`: the targets a hop agent may measure. An agent that sends traffic on request
//! is a reflection and SSRF tool unless its operator says where it may send: nothing by
//! default, and only addresses in a listed network, a listed `ADDR:PORT`, or a listed
//! `HOST:PORT` by name. Pure: the caller resolves names and passes the address it would
//! measure, so the rules are tested without a resolver.

use std::fmt;
use std::net::{IpAddr, SocketAddr};

/// Why a `--hop-allow` entry does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("--hop-allow {entry:?}: {why}")]
pub struct AllowError {
    pub entry: String,
    pub why: &'static str,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Entry {
    /// Every address in a network (a bare address is a /32 or /128), any port.
    Net { ip: IpAddr, prefix: u8 },
    /// One address and port.
    AddrPort(SocketAddr),
    /// A name and port, as the client writes it (lower case); whatever it resolves to.
    HostPort(String, u16),
}

/// The parsed `--hop-allow` list (empty: nothing is allowed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllowList {
    entries: Vec<Entry>,
}

impl AllowList {
    /// Parses comma-separated entries: `10.0.0.0/8`, `192.0.2.7`, `fd00::/8`, `10.0.3.2:7777`,
    /// `[2001:db8::1]:443`, `target.example:7777`.
    pub fn parse(s: &str) -> Result<AllowList, AllowError> {
        let mut out = AllowList::default();
        out.extend(s)?;
        Ok(out)
    }

    /// Adds the entries of another `--hop-allow` value.
    pub fn extend(&mut self, s: &str) -> Result<(), AllowError> {
        for part in s.split(',') {
            self.entries.push(entry(part.trim())?);
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// False when no address `host:port` could resolve to is allowed: the agent refuses
    /// without resolving the name.
    pub fn may_allow(&self, host: &str, port: u16) -> bool {
        let literal = host.parse::<IpAddr>().ok();
        self.entries.iter().any(|e| match e {
            Entry::Net { .. } | Entry::AddrPort(_) if literal.is_none() => true,
            Entry::Net { .. } | Entry::AddrPort(_) => {
                literal.is_some_and(|ip| e.allows_addr(SocketAddr::new(ip, port)))
            }
            Entry::HostPort(h, p) => *p == port && h.eq_ignore_ascii_case(host),
        })
    }

    /// True when the agent may measure `addr`, which the client's `host:port` resolved to.
    pub fn allows(&self, host: &str, port: u16, addr: SocketAddr) -> bool {
        self.entries.iter().any(|e| match e {
            Entry::HostPort(h, p) => *p == port && h.eq_ignore_ascii_case(host),
            _ => e.allows_addr(addr),
        })
    }
}

impl Entry {
    fn allows_addr(&self, addr: SocketAddr) -> bool {
        let ip = addr.ip().to_canonical();
        match self {
            Entry::Net { ip: net, prefix } => in_net(ip, *net, *prefix),
            Entry::AddrPort(a) => a.ip().to_canonical() == ip && a.port() == addr.port(),
            Entry::HostPort(..) => false,
        }
    }
}

fn in_net(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

fn entry(s: &str) -> Result<Entry, AllowError> {
    let err = |why| AllowError {
        entry: s.to_string(),
        why,
    };
    if s.is_empty() {
        return Err(err("empty entry (a stray comma?)"));
    }
    if let Some((ip, prefix)) = s.split_once('/') {
        let ip: IpAddr = ip
            .parse()
            .map_err(|_| err("expected ADDRESS/PREFIX, e.g. 10.0.0.0/8"))?;
        let ip = ip.to_canonical();
        let most = if ip.is_ipv4() { 32 } else { 128 };
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|p| *p <= most)
            .ok_or_else(|| err("the prefix length must be 0..=32 (IPv4) or 0..=128 (IPv6)"))?;
        return Ok(Entry::Net { ip, prefix });
    }
    if let Ok(ip) = s.parse::<IpAddr>() {
        let ip = ip.to_canonical();
        let prefix = if ip.is_ipv4() { 32 } else { 128 };
        return Ok(Entry::Net { ip, prefix });
    }
    if let Ok(a) = s.parse::<SocketAddr>() {
        if a.port() == 0 {
            return Err(err("port 0"));
        }
        return Ok(Entry::AddrPort(a));
    }
    let (host, port) = s
        .rsplit_once(':')
        .ok_or_else(|| err("expected an address, ADDRESS/PREFIX or HOST:PORT"))?;
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| err("expected HOST:PORT with a port 1..=65535"))?;
    if host.is_empty() || host.contains(['/', ':', '[', ']', '@', ' ']) {
        return Err(err(
            "expected HOST:PORT (an IPv6 address with a port is written [ADDR]:PORT)",
        ));
    }
    Ok(Entry::HostPort(host.to_ascii_lowercase(), port))
}

impl fmt::Display for AllowList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.entries.is_empty() {
            return f.write_str("nothing");
        }
        for (i, e) in self.entries.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            match e {
                Entry::Net { ip, prefix } if u32::from(*prefix) == full(ip) => write!(f, "{ip}")?,
                Entry::Net { ip, prefix } => write!(f, "{ip}/{prefix}")?,
                Entry::AddrPort(a) => write!(f, "{a}")?,
                Entry::HostPort(h, p) => write!(f, "{h}:{p}")?,
            }
        }
        Ok(())
    }
}

fn full(ip: &IpAddr) -> u32 {
    if ip.is_ipv4() {
        32
    } else {
        128
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn empty_allows_nothing() {
        let l = AllowList::default();
        assert!(!l.may_allow("10.0.0.1", 7777));
        assert!(!l.may_allow("example.org", 80));
        assert!(!l.allows("10.0.0.1", 7777, a("10.0.0.1:7777")));
        assert_eq!(l.to_string(), "nothing");
    }

    #[test]
    fn networks_addresses_and_names() {
        let l = AllowList::parse(
            "10.0.0.0/8, 192.0.2.7,[2001:db8::1]:443,Target.Example:7777,127.0.0.1:9,fd00::/8",
        )
        .unwrap();
        assert_eq!(
            l.to_string(),
            "10.0.0.0/8, 192.0.2.7, [2001:db8::1]:443, target.example:7777, 127.0.0.1:9, fd00::/8"
        );
        // networks: any port, by address
        assert!(l.allows("10.9.8.7", 1, a("10.9.8.7:1")));
        assert!(l.allows("x", 22, a("[::ffff:10.1.1.1]:22")), "v4-mapped");
        assert!(!l.allows("11.0.0.1", 1, a("11.0.0.1:1")));
        assert!(l.allows("192.0.2.7", 5, a("192.0.2.7:5")));
        assert!(!l.allows("192.0.2.8", 5, a("192.0.2.8:5")));
        assert!(l.allows("fd12::1", 5, a("[fd12::1]:5")));
        // one address and port
        assert!(l.allows("127.0.0.1", 9, a("127.0.0.1:9")));
        assert!(!l.allows("127.0.0.1", 10, a("127.0.0.1:10")));
        assert!(l.allows("2001:db8::1", 443, a("[2001:db8::1]:443")));
        assert!(!l.allows("2001:db8::1", 80, a("[2001:db8::1]:80")));
        // a name and port: whatever it resolves to, but only that port
        assert!(l.allows("TARGET.example", 7777, a("203.0.113.5:7777")));
        assert!(!l.allows("target.example", 7778, a("203.0.113.5:7778")));
        // a name not listed: only where it resolves into an allowed network
        assert!(l.allows("other.example", 80, a("10.0.3.2:80")));
        assert!(!l.allows("other.example", 80, a("203.0.113.5:80")));
    }

    #[test]
    fn names_are_only_resolved_when_they_could_be_allowed() {
        let by_name = AllowList::parse("target.example:7777").unwrap();
        assert!(by_name.may_allow("target.example", 7777));
        assert!(
            !by_name.may_allow("evil.example", 7777),
            "not resolved at all"
        );
        assert!(!by_name.may_allow("target.example", 22));
        let by_net = AllowList::parse("10.0.0.0/8").unwrap();
        assert!(by_net.may_allow("any.example", 1), "may resolve into 10/8");
        assert!(by_net.may_allow("10.2.3.4", 1));
        assert!(
            !by_net.may_allow("169.254.169.254", 80),
            "a literal outside"
        );
    }

    #[test]
    fn edges_of_a_prefix() {
        let l = AllowList::parse("10.0.3.0/24,0.0.0.0/0").unwrap();
        assert!(l.allows("", 1, a("1.2.3.4:1")), "/0 is everything (v4)");
        assert!(!l.allows("", 1, a("[2001:db8::1]:1")), "but not IPv6");
        let l = AllowList::parse("10.0.3.0/24").unwrap();
        assert!(l.allows("", 1, a("10.0.3.255:1")));
        assert!(!l.allows("", 1, a("10.0.4.0:1")));
        assert!(!l.allows("", 1, a("10.0.2.255:1")));
        let l = AllowList::parse("10.0.3.9/24").unwrap();
        assert!(l.allows("", 1, a("10.0.3.1:1")), "host bits ignored");
    }

    #[test]
    fn bad_entries_name_themselves() {
        for (s, bad) in [
            ("", ""),
            ("10.0.0.0/8,", ""),
            ("10.0.0.0/33", "10.0.0.0/33"),
            ("fd00::/129", "fd00::/129"),
            ("10.0.0/8", "10.0.0/8"),
            ("target.example", "target.example"),
            ("target.example:0", "target.example:0"),
            ("target.example:http", "target.example:http"),
            ("[::1]:x", "[::1]:x"),
            ("1.2.3.4:0", "1.2.3.4:0"),
            ("http://x:1", "http://x:1"),
        ] {
            let e = AllowList::parse(s).expect_err(s);
            assert_eq!(e.entry, bad, "{s:?}");
            assert!(e.to_string().starts_with("--hop-allow "), "{e}");
        }
        let mut l = AllowList::parse("10.0.0.0/8").unwrap();
        l.extend("192.0.2.1").unwrap();
        assert!(l.allows("", 1, a("192.0.2.1:1")));
    }
}
