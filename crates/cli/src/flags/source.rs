//! Where a test's packets come from and how they are marked: the addressing group (`-4`,
//! `-6`, `--bind ADDR`) and the marking group (`--dscp N`, `--tos N`), flattened into every
//! subcommand that sends, each validated once here into the engines' [`Source`]. An engine
//! that cannot honour one of them refuses it by name ([`SourceArgs::unsupported`]): a flag
//! that is silently ignored would make a test measure something other than what was asked.

use std::net::IpAddr;

use clap::Args;
use npt_client::source::{Family, Source};

use crate::usage;

/// `-4`, `-6`, `--bind ADDR`.
#[derive(Args, Debug, Default, Clone)]
pub struct AddressingArgs {
    /// IPv4 only: names resolve to IPv4 addresses, sockets are IPv4.
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// IPv6 only: names resolve to IPv6 addresses, sockets are IPv6.
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
    /// Send from this source address (one of this host's), bound before connecting or
    /// sending.
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<String>,
}

/// `--dscp N`, `--tos N`, `--ecn ect0|ect1`.
#[derive(Args, Debug, Default, Clone)]
pub struct MarkingArgs {
    /// Mark every packet sent with this DSCP (0-63, or a name: EF, AF11…AF43, CS0…CS7);
    /// the ECN bits stay 0 unless --ecn. E.g. --dscp 46 (EF, voice).
    #[arg(long, value_name = "N", conflicts_with = "tos")]
    pub dscp: Option<String>,
    /// Send every packet ECN-capable: ect0 or ect1 (ECT(0), ECT(1); not-ect is the default),
    /// with --dscp or alone. A hop that marks congestion sets CE on them instead of dropping.
    #[arg(long, value_name = "ect0|ect1", conflicts_with = "tos")]
    pub ecn: Option<String>,
    /// Set the whole TOS / traffic class byte of every packet sent (0-255 or 0x00-0xff: DSCP
    /// and ECN), e.g. --tos 0xb8 (EF).
    #[arg(long, value_name = "N")]
    pub tos: Option<String>,
}

/// Both groups, as a subcommand flattens them.
#[derive(Args, Debug, Default, Clone)]
pub struct SourceArgs {
    #[command(flatten)]
    pub addressing: AddressingArgs,
    #[command(flatten)]
    pub marking: MarkingArgs,
}

impl AddressingArgs {
    fn family(&self) -> Option<Family> {
        match (self.ipv4, self.ipv6) {
            (true, _) => Some(Family::V4),
            (_, true) => Some(Family::V6),
            _ => None,
        }
    }

    /// The family and the source address; exit 2 naming the flag for an address that is not
    /// one, is not this host's, or is of the other family than `-4`/`-6` asks.
    pub fn resolve(&self) -> anyhow::Result<(Option<Family>, Option<IpAddr>)> {
        let family = self.family();
        let Some(text) = &self.bind else {
            return Ok((family, None));
        };
        let bare = text.trim_start_matches('[').trim_end_matches(']');
        let ip: IpAddr = bare.parse().map_err(|_| {
            usage!("--bind {text}: not an IP address (give one of this host's addresses)")
        })?;
        if let Some(f) = family.filter(|f| *f != Family::of(ip)) {
            return Err(usage!(
                "--bind {ip}: an {} address, but {} asks for {}",
                family_name(Family::of(ip)),
                f.flag(),
                family_name(f)
            ));
        }
        if ip.is_unspecified() || ip.is_multicast() {
            return Err(usage!("--bind {ip}: give one of this host's own addresses"));
        }
        if let Err(e) = std::net::UdpSocket::bind((ip, 0)) {
            return Err(usage!("--bind {ip}: not an address of this host ({e})"));
        }
        // A source address fixes the family: its sockets reach only peers of its own.
        Ok((Some(Family::of(ip)), Some(ip)))
    }
}

fn family_name(f: Family) -> &'static str {
    match f {
        Family::V4 => "IPv4",
        Family::V6 => "IPv6",
    }
}

impl MarkingArgs {
    /// The TOS byte to send with; exit 2 naming the flag for a value out of range.
    pub fn tos(&self) -> anyhow::Result<Option<u8>> {
        let ecn = self
            .ecn
            .as_deref()
            .map(|e| ecn_codepoint("--ecn", e, false))
            .transpose()?;
        if let Some(d) = &self.dscp {
            return Ok(Some(dscp(d)? << 2 | ecn.unwrap_or(0)));
        }
        if ecn.is_some() {
            return Ok(ecn);
        }
        let Some(t) = &self.tos else {
            return Ok(None);
        };
        let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            Some(hex) => u8::from_str_radix(hex, 16).ok(),
            None => t.parse::<u8>().ok(),
        };
        v.map(Some)
            .ok_or_else(|| usage!("--tos {t}: must be 0 to 255 (or 0x00 to 0xff)"))
    }
}

/// An ECN codepoint a sender may set (RFC 3168): `ect0` (2), `ect1` (1), and with `not_ect`
/// also `not-ect` (0). Never CE: that is a hop's mark of congestion. `flag` names the flag.
pub fn ecn_codepoint(flag: &str, text: &str, not_ect: bool) -> anyhow::Result<u8> {
    match text
        .trim()
        .to_ascii_lowercase()
        .replace(['(', ')'], "")
        .as_str()
    {
        "ect0" => Ok(2),
        "ect1" => Ok(1),
        "not-ect" | "notect" | "none" if not_ect => Ok(0),
        "ce" => Err(usage!(
            "{flag} {text}: CE is what a congested hop marks, not what a sender sets: \
             give ect0 or ect1"
        )),
        _ if not_ect => Err(usage!("{flag} {text}: must be ect0, ect1 or not-ect")),
        _ => Err(usage!("{flag} {text}: must be ect0 or ect1")),
    }
}

/// A DSCP by number or name (RFC 2474 class selectors, RFC 2597 AF, RFC 3246 EF).
pub fn dscp(text: &str) -> anyhow::Result<u8> {
    let bad = || {
        usage!("--dscp {text}: must be 0 to 63 (a DSCP; the TOS byte is --tos), or EF, AFxy, CSx")
    };
    let up = text.trim().to_ascii_uppercase();
    let v = if up == "EF" {
        46
    } else if let Some(cs) = up.strip_prefix("CS") {
        let c: u8 = cs.parse().map_err(|_| bad())?;
        if c > 7 {
            return Err(bad());
        }
        c * 8
    } else if let Some(af) = up.strip_prefix("AF") {
        let mut d = af.chars().map(|c| c.to_digit(10));
        match (d.next(), d.next(), d.next()) {
            (Some(Some(x @ 1..=4)), Some(Some(y @ 1..=3)), None) => {
                u8::try_from(x * 8 + y * 2).map_err(|_| bad())?
            }
            _ => return Err(bad()),
        }
    } else {
        up.parse::<u8>().map_err(|_| bad())?
    };
    if v > 63 {
        return Err(bad());
    }
    Ok(v)
}

impl SourceArgs {
    /// The one validation of both groups: the engines' [`Source`].
    pub fn resolve(&self) -> anyhow::Result<Source> {
        let (family, bind) = self.addressing.resolve()?;
        Ok(Source {
            family,
            bind,
            tos: self.marking.tos()?,
        })
    }

    /// `host` as written on the command line: an address literal of the other family than
    /// `-4`/`-6` (or `--bind`) asks is exit 2 naming the flag.
    pub fn check_literal(src: &Source, host: &str) -> anyhow::Result<()> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let (Some(f), Ok(ip)) = (src.family, bare.parse::<IpAddr>()) else {
            return Ok(());
        };
        if Family::of(ip) != f {
            let flag = if src.bind.is_some() {
                "--bind"
            } else {
                f.flag()
            };
            return Err(usage!(
                "{flag}: {host} is an {} address and {flag} asks for {}",
                family_name(Family::of(ip)),
                family_name(f)
            ));
        }
        Ok(())
    }

    /// The one validation for a subcommand's target: [`SourceArgs::resolve`], the target's
    /// host if it is an address literal ([`SourceArgs::check_literal`]), and a refusal by
    /// name of what a QUIC endpoint (`quic`: `--bind`, `--dscp`, `--tos`) or a `--via` proxy
    /// connection (`via`: all five) cannot honour. `sub` names the subcommand.
    pub fn for_target(
        &self,
        sub: &str,
        host: &str,
        quic: bool,
        via: bool,
    ) -> anyhow::Result<Source> {
        let src = self.resolve()?;
        Self::check_literal(&src, host)?;
        if quic {
            self.unsupported(
                &format!("{sub} with QUIC"),
                &["--bind", "--dscp", "--tos", "--ecn"],
                "the QUIC endpoint is opened by the QUIC client; -4/-6 apply",
            )?;
        }
        if via {
            self.unsupported(
                &format!("{sub} --via"),
                &["-4", "-6", "--bind", "--dscp", "--tos", "--ecn"],
                "the proxy connection is opened by the proxy client",
            )?;
        }
        Ok(src)
    }

    /// Exit 2 for each flag of the groups that `npt {sub}` cannot honour (`why` says why),
    /// instead of ignoring it.
    pub fn unsupported(&self, sub: &str, flags: &[&str], why: &str) -> anyhow::Result<()> {
        let given = |f: &str| match f {
            "-4" => self.addressing.ipv4,
            "-6" => self.addressing.ipv6,
            "--bind" => self.addressing.bind.is_some(),
            "--dscp" => self.marking.dscp.is_some(),
            "--tos" => self.marking.tos.is_some(),
            "--ecn" => self.marking.ecn.is_some(),
            _ => false,
        };
        match flags.iter().find(|f| given(f)) {
            Some(f) => Err(usage!("{f}: npt {sub} cannot honour it ({why})")),
            None => Ok(()),
        }
    }
}

/// Maps the engines' "no address of that family" to exit 2.
pub fn pick(
    src: &Source,
    what: &str,
    addrs: Vec<std::net::SocketAddr>,
) -> anyhow::Result<Vec<std::net::SocketAddr>> {
    src.pick(what, addrs).map_err(|e| usage!("{e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marking(dscp: Option<&str>, tos: Option<&str>) -> MarkingArgs {
        MarkingArgs {
            dscp: dscp.map(String::from),
            tos: tos.map(String::from),
            ecn: None,
        }
    }

    #[test]
    fn ecn_combines_with_dscp_and_never_asks_for_ce() {
        let m = |d: Option<&str>, e: &str| MarkingArgs {
            dscp: d.map(String::from),
            tos: None,
            ecn: Some(e.to_string()),
        };
        assert_eq!(m(Some("46"), "ect0").tos().unwrap(), Some(0xba));
        assert_eq!(m(Some("ef"), "ECT(1)").tos().unwrap(), Some(0xb9));
        assert_eq!(m(None, "ect1").tos().unwrap(), Some(1));
        let e = usage_text(m(Some("46"), "ce").tos().unwrap_err());
        assert!(
            e.starts_with("--ecn ce: CE is what a congested hop marks"),
            "{e}"
        );
        let e = usage_text(m(None, "x").tos().unwrap_err());
        assert_eq!(e, "--ecn x: must be ect0 or ect1");
        assert_eq!(ecn_codepoint("--reply-ecn", "not-ect", true).unwrap(), 0);
    }

    fn usage_text(e: anyhow::Error) -> String {
        assert!(e.downcast_ref::<crate::UsageError>().is_some(), "{e}");
        e.to_string()
    }

    #[test]
    fn dscp_and_tos_values_and_names() {
        assert_eq!(marking(Some("46"), None).tos().unwrap(), Some(0xb8));
        assert_eq!(marking(Some("ef"), None).tos().unwrap(), Some(0xb8));
        assert_eq!(marking(Some("AF41"), None).tos().unwrap(), Some(34 << 2));
        assert_eq!(marking(Some("CS1"), None).tos().unwrap(), Some(8 << 2));
        assert_eq!(marking(None, Some("0xb8")).tos().unwrap(), Some(0xb8));
        assert_eq!(marking(None, Some("1")).tos().unwrap(), Some(1));
        assert_eq!(marking(None, None).tos().unwrap(), None);
        let e = usage_text(marking(Some("64"), None).tos().unwrap_err());
        assert!(e.starts_with("--dscp 64: must be 0 to 63"), "{e}");
        for bad in ["-1", "AF44", "CS8", "x"] {
            let e = usage_text(marking(Some(bad), None).tos().unwrap_err());
            assert!(e.starts_with(&format!("--dscp {bad}:")), "{e}");
        }
        let e = usage_text(marking(None, Some("256")).tos().unwrap_err());
        assert!(e.starts_with("--tos 256: must be 0 to 255"), "{e}");
    }

    fn addressing(v4: bool, v6: bool, bind: Option<&str>) -> SourceArgs {
        SourceArgs {
            addressing: AddressingArgs {
                ipv4: v4,
                ipv6: v6,
                bind: bind.map(String::from),
            },
            marking: MarkingArgs::default(),
        }
    }

    #[test]
    fn bind_must_be_an_address_of_this_host_of_the_family_asked() {
        let s = addressing(false, false, Some("127.0.0.1"))
            .resolve()
            .unwrap();
        assert_eq!(s.bind, Some("127.0.0.1".parse().unwrap()));
        assert_eq!(
            s.family,
            Some(Family::V4),
            "a source address fixes the family"
        );
        let e = usage_text(
            addressing(false, false, Some("192.0.2.1"))
                .resolve()
                .unwrap_err(),
        );
        assert!(
            e.starts_with("--bind 192.0.2.1: not an address of this host"),
            "{e}"
        );
        let e = usage_text(
            addressing(false, false, Some("host"))
                .resolve()
                .unwrap_err(),
        );
        assert!(e.starts_with("--bind host: not an IP address"), "{e}");
        let e = usage_text(addressing(true, false, Some("::1")).resolve().unwrap_err());
        assert_eq!(e, "--bind ::1: an IPv6 address, but -4 asks for IPv4");
        let e = usage_text(
            addressing(false, false, Some("0.0.0.0"))
                .resolve()
                .unwrap_err(),
        );
        assert!(e.starts_with("--bind 0.0.0.0:"), "{e}");
    }

    #[test]
    fn a_literal_of_the_other_family_names_the_flag() {
        let v4 = addressing(true, false, None).resolve().unwrap();
        let e = usage_text(SourceArgs::check_literal(&v4, "::1").unwrap_err());
        assert_eq!(e, "-4: ::1 is an IPv6 address and -4 asks for IPv4");
        SourceArgs::check_literal(&v4, "127.0.0.1").unwrap();
        SourceArgs::check_literal(&v4, "localhost").unwrap();
        let v6 = addressing(false, true, None).resolve().unwrap();
        let e = usage_text(SourceArgs::check_literal(&v6, "127.0.0.1").unwrap_err());
        assert!(e.starts_with("-6: 127.0.0.1 is an IPv4 address"), "{e}");
        let bound = addressing(false, false, Some("127.0.0.1"))
            .resolve()
            .unwrap();
        let e = usage_text(SourceArgs::check_literal(&bound, "[::1]").unwrap_err());
        assert!(e.starts_with("--bind: [::1] is an IPv6 address"), "{e}");
    }

    #[test]
    fn what_an_engine_cannot_honour_is_refused_by_name() {
        let mut a = addressing(false, false, None);
        a.unsupported("http", &["--dscp"], "x").unwrap();
        a.marking.dscp = Some("46".into());
        let e = usage_text(
            a.unsupported("http", &["--bind", "--dscp"], "why")
                .unwrap_err(),
        );
        assert_eq!(e, "--dscp: npt http cannot honour it (why)");
    }
}
