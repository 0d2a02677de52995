//! `--ca FILE` / `--insecure`: how a QUIC client trusts the server's certificate. One group,
//! one validation, flattened into every subcommand that can reach a QUIC server (ping, bulk,
//! trace, run). `npt http`'s `-k/--insecure` is TLS over TCP, with the system's roots: its own.

use std::path::PathBuf;

use clap::Args;
use npt_client::QuicTrust;

use crate::usage;

#[derive(Args, Debug, Default, Clone)]
pub struct TrustArgs {
    /// QUIC: trust the certificates in this PEM file (e.g. from `npt serve --quic-cert-out`).
    #[arg(long, value_name = "FILE", conflicts_with = "insecure")]
    pub ca: Option<PathBuf>,
    /// QUIC: accept any certificate.
    #[arg(long)]
    pub insecure: bool,
}

/// Whether the test speaks QUIC, and whether it then needs a trust flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quic {
    /// No QUIC: `--ca`/`--insecure` are refused.
    No,
    /// QUIC, and one of them is required; the text says whose certificate `--ca` holds.
    Required(&'static str),
    /// QUIC maybe (run's `--quic`): without either, the built-in roots.
    Optional,
}

impl Quic {
    /// [`Quic::Required`] when `quic`, else [`Quic::No`].
    pub fn when(quic: bool, whose: &'static str) -> Quic {
        if quic {
            Quic::Required(whose)
        } else {
            Quic::No
        }
    }
}

impl TrustArgs {
    pub fn given(&self) -> bool {
        self.ca.is_some() || self.insecure
    }

    /// The one validation: the trust a QUIC client uses, or exit 2 naming the flag.
    pub fn resolve(&self, quic: Quic) -> anyhow::Result<QuicTrust> {
        if self.given() && quic == Quic::No {
            return Err(usage!("--ca and --insecure are for quic:// targets"));
        }
        Ok(match (&self.ca, self.insecure) {
            (Some(_), true) => return Err(usage!("--insecure and --ca exclude each other")),
            (Some(f), false) => QuicTrust::from_pem_file(f).map_err(|e| usage!("--ca: {e}"))?,
            (None, true) => QuicTrust::Insecure,
            (None, false) => match quic {
                Quic::Required(whose) => {
                    return Err(usage!(
                        "quic:// needs --ca FILE ({whose} certificate) or --insecure"
                    ))
                }
                Quic::No | Quic::Optional => QuicTrust::default(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_is_for_quic_and_quic_needs_it() {
        let none = TrustArgs::default();
        assert!(none.resolve(Quic::No).is_ok());
        assert!(none.resolve(Quic::Optional).is_ok());
        let e = none.resolve(Quic::Required("the server's")).unwrap_err();
        assert!(e.downcast_ref::<crate::UsageError>().is_some());
        assert_eq!(
            e.to_string(),
            "quic:// needs --ca FILE (the server's certificate) or --insecure"
        );
        let insecure = TrustArgs {
            insecure: true,
            ..TrustArgs::default()
        };
        assert!(matches!(
            insecure.resolve(Quic::Required("x")).unwrap(),
            QuicTrust::Insecure
        ));
        let e = insecure.resolve(Quic::No).unwrap_err().to_string();
        assert_eq!(e, "--ca and --insecure are for quic:// targets");
        let missing = TrustArgs {
            ca: Some("/nonexistent.pem".into()),
            insecure: false,
        };
        let e = missing.resolve(Quic::Optional).unwrap_err().to_string();
        assert!(e.starts_with("--ca: "), "{e}");
    }
}
