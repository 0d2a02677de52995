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
