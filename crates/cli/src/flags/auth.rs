//! `--token SECRET` (or `NPT_TOKEN`): the secret of `npt serve --token`, as every client
//! subcommand takes it. One group, one validation ([`TokenArgs::get`]); where a token does not
//! apply (a raw echo, a plain TCP connect) each subcommand says so.

use clap::Args;

use crate::usage;

#[derive(Args, Debug, Default, Clone)]
pub struct TokenArgs {
    /// The secret `npt serve --token` was started with: a keyed handshake, then every packet
    /// carries a MAC (the secret never travels). A hop agent's (`--from`, trace) is its own.
    #[arg(long, value_name = "SECRET", env = "NPT_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

impl TokenArgs {
    /// The token, if given; an empty one is exit 2.
    pub fn get(&self) -> anyhow::Result<Option<&str>> {
        match self.token.as_deref() {
            Some("") => Err(usage!("--token must not be empty")),
            t => Ok(t),
        }
    }

    /// The token where the test cannot go without one (a hop agent); `why` ends the message.
    pub fn required(&self, why: &str) -> anyhow::Result<String> {
        match self.get()? {
            Some(t) => Ok(t.to_string()),
            None => Err(usage!("{why}")),
        }
    }

    pub fn is_some(&self) -> bool {
        self.token.is_some()
    }

    pub fn cloned(&self) -> Option<String> {
        self.token.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_token_is_refused_and_a_missing_one_where_needed() {
        let t = TokenArgs {
            token: Some(String::new()),
        };
        assert_eq!(
            t.get().unwrap_err().to_string(),
            "--token must not be empty"
        );
        let t = TokenArgs::default();
        assert_eq!(t.get().unwrap(), None);
        let e = t.required("--hop needs --token").unwrap_err();
        assert!(e.downcast_ref::<crate::UsageError>().is_some());
        let t = TokenArgs {
            token: Some("s".into()),
        };
        assert_eq!(t.required("x").unwrap(), "s");
    }
}
