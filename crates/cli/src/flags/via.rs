//! `--via`: the one proxy flag every client subcommand shares (curl's grammar: `socks5://`,
//! `socks5h://`, `http://`, credentials in the URL or from `--via-user`), validated into an
//! [`npt_proxy::Via`] with errors that name the flag.

use clap::Args;
use npt_proxy::{Via, ViaKind};

use crate::usage;

#[derive(Args, Debug, Default, Clone)]
pub struct ViaArgs {
    /// Go through a proxy: socks5://[user:pass@]HOST:PORT (SOCKS5; UDP via UDP ASSOCIATE),
    /// socks5h://… (the proxy resolves the target's name), http://HOST:PORT (HTTP CONNECT).
    #[arg(long, value_name = "URL")]
    pub via: Option<String>,
    /// Proxy credentials USER:PASS, instead of putting them in the --via URL.
    #[arg(long, value_name = "USER:PASS", requires = "via")]
    pub via_user: Option<String>,
}

impl ViaArgs {
    /// The validated proxy, if any. `udp`: the workload sends datagrams (needs SOCKS5).
    pub fn resolve(&self, udp: bool) -> anyhow::Result<Option<Via>> {
        let Some(url) = &self.via else {
            return Ok(None);
        };
        let mut via = Via::parse(url).map_err(|e| usage!("{e}"))?;
        if let Some(up) = &self.via_user {
            via = via.with_user(up).map_err(|e| usage!("{e}"))?;
        }
        if udp && via.kind == ViaKind::Http {
            return Err(usage!(
                "--via {via}: an HTTP proxy cannot carry UDP; use socks5:// (UDP ASSOCIATE)"
            ));
        }
        Ok(Some(via))
    }

    /// Whether the proxy resolves target names (`socks5h://`): the target need not resolve here.
    pub fn remote_dns(&self) -> bool {
        self.via
            .as_deref()
            .is_some_and(|v| v.to_ascii_lowercase().starts_with("socks5h://"))
    }
}

/// The notice when `size`-byte datagrams (`flag`) through `via`'s SOCKS5 UDP relay to `addr`
/// (`host` as written) would not fit a 1,500-byte packet, the usual MTU: the relay's header
/// makes each one leave as two IP fragments, and a queue of packets then holds about half the
/// bytes it would (measured in the lab: +81 ms read for a 120 ms queue).
pub fn fragment_notice(
    flag: &str,
    via: &Via,
    addr: std::net::SocketAddr,
    host: &str,
    size: usize,
) -> Option<String> {
    const MTU: usize = 1500;
    if via.kind == ViaKind::Http {
        return None;
    }
    let header = npt_proxy::udp_flow::header_len(addr, host);
    // IP and UDP headers to the relay.
    let ip_udp = if via.host.parse::<std::net::Ipv6Addr>().is_ok() {
        48
    } else {
        28
    };
    let packet = size + header + ip_udp;
    (packet > MTU).then(|| {
        format!(
            "{flag} {size} + the SOCKS5 relay's {header}-byte header + {ip_udp} bytes of IP/UDP \
             = {packet} bytes, more than a {MTU}-byte MTU: each datagram leaves as two \
             fragments ({flag} {} fits)",
            MTU - header - ip_udp
        )
    })
}

/// [`fragment_notice`] for a UDP bulk (`npt bulk`'s flow, `flag` `--size`; a UDP load,
/// `--load-size`) through a SOCKS5 relay; `None` for streams or without `--via`. Bulk resolves
/// a name before the relay sees it, so the header carries an address: IPv4 unless the target
/// is written as an IPv6 one.
pub fn bulk_fragment_notice(flag: &str, cfg: &npt_bulk::Config) -> Option<String> {
    let (via, udp) = (cfg.via.as_ref()?, cfg.udp?);
    let host = &cfg.target.host;
    let ip = host
        .parse::<std::net::IpAddr>()
        .unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::BROADCAST));
    fragment_notice(flag, via, (ip, 0).into(), host, udp.size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(via: &str, user: Option<&str>) -> ViaArgs {
        ViaArgs {
            via: Some(via.into()),
            via_user: user.map(Into::into),
        }
    }

    #[test]
    fn a_datagram_that_outgrows_the_mtu_through_the_relay_is_noticed() {
        let via = Via::parse("socks5://127.0.0.1:1080").unwrap();
        let v4: std::net::SocketAddr = "10.0.2.2:7777".parse().unwrap();
        assert_eq!(fragment_notice("--size", &via, v4, "10.0.2.2", 1462), None);
        let n = fragment_notice("--load-size", &via, v4, "10.0.2.2", 1472).unwrap();
        assert!(
            n.starts_with("--load-size 1472 + the SOCKS5 relay's 10-byte header + 28 bytes"),
            "{n}"
        );
        assert!(n.ends_with("(--load-size 1462 fits)"), "{n}");
        let v6: std::net::SocketAddr = "[2001:db8::1]:7777".parse().unwrap();
        assert!(fragment_notice("--size", &via, v6, "2001:db8::1", 1462).is_some());
        let http = Via::parse("http://127.0.0.1:3128").unwrap();
        assert_eq!(fragment_notice("--size", &http, v4, "x", 9000), None);
    }

    #[test]
    fn via_flags_validate_and_name_the_flag() {
        assert!(ViaArgs::default().resolve(true).unwrap().is_none());
        let v = args("socks5://127.0.0.1:1080", Some("u:p"))
            .resolve(true)
            .unwrap();
        assert_eq!(v.unwrap().credentials(), Some(("u", "p")));
        let e = args("http://p:3128", None)
            .resolve(true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot carry UDP"), "{e}");
        assert!(args("http://p:3128", None).resolve(false).is_ok());
        let e = args("ftp://p:1", None)
            .resolve(false)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--via"), "{e}");
        assert!(args("socks5h://p:1", None).remote_dns());
    }
}
