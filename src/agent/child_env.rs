//! The environment of every process the daemon starts (docs/decisions.md,
//! "Children of the daemon"): a child gets exactly its agent's `env` on top
//! of a documented minimal base taken from the daemon's environment, so no
//! agent ever sees another agent's credentials (an openai agent's
//! `api_key_env` variable, an ACP agent's `env`).
//!
//! The one exception is the version-1 `command` agent, whose program
//! §10.4 promises "the daemon's environment plus `env`": it keeps the
//! daemon's environment minus every name a credential is configured under
//! ([`secret_names`]).

use std::collections::BTreeSet;
use std::ffi::OsStr;

use tokio::process::Command;

use crate::config::{is_child_base_var, Config};

/// What a child's environment starts from, before its agent's `env`.
#[derive(Debug, Clone, Copy)]
pub enum EnvBase<'a> {
    /// [`crate::config::CHILD_BASE_VARS`] and `LC_*` of the daemon's environment, nothing else.
    Minimal,
    /// The daemon's environment without these names (`command` agents).
    DaemonWithout(&'a BTreeSet<String>),
}

/// Sets `command`'s environment to `base` (the caller adds the agent's `env`).
pub fn apply(command: &mut Command, base: EnvBase<'_>) {
    match base {
        EnvBase::Minimal => {
            command.env_clear();
            for (name, value) in std::env::vars_os() {
                if name.to_str().is_some_and(is_child_base_var) {
                    command.env(&name, &value);
                }
            }
        }
        EnvBase::DaemonWithout(names) => {
            for name in names {
                command.env_remove(OsStr::new(name));
            }
        }
    }
}

/// Every name a credential is configured under: each `acp` and `openai`
/// agent's `env` names, and every `api_key_env`.
pub fn secret_names(config: &Config) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (alias, agent) in &config.agents {
        let spec = config.agent_spec(alias);
        if spec.is_some_and(|s| s.backend().is_addition()) {
            names.extend(agent.env.keys().cloned());
        }
        names.extend(agent.api_key_env.iter().cloned());
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_is_the_documented_list() {
        for name in [
            "PATH",
            "HOME",
            "LC_ALL",
            "LC_CTYPE",
            "XDG_RUNTIME_DIR",
            "TZ",
        ] {
            assert!(is_child_base_var(name), "{name}");
        }
        for name in [
            "OPENAI_API_KEY",
            "LD_PRELOAD",
            "SSH_AUTH_SOCK",
            "ZEROCLAW_SOCKET",
        ] {
            assert!(!is_child_base_var(name), "{name}");
        }
    }

    #[test]
    fn secrets_are_acp_and_openai_env_names_and_key_variables() {
        let config = Config::from_toml_str(
            "schema_version = 1\n\
             [agents.a]\nbackend = \"acp\"\ncommand = [\"x\"]\nenv = { A_KEY = \"1\" }\n\
             [agents.m]\nbackend = \"openai\"\nmodel = \"m\"\napi_key_env = \"M_KEY\"\n\
             env = { M_OTHER = \"2\" }\n\
             [agents.c]\nbackend = \"command\"\ncommand = [\"x\"]\nenv = { C_PLAIN = \"3\" }\n",
        )
        .unwrap();
        let names: Vec<String> = secret_names(&config).into_iter().collect();
        assert_eq!(names, ["A_KEY", "M_KEY", "M_OTHER"]);
    }
}
