//! The TOML text of `config.toml` and the one way into a [`Config`]: parse, check every key
//! and type on the raw table, deserialize, admit (`admit.rs`: validate, §11.3, then parse
//! each agent into its spec). The schema (`schema.rs`) is the types alone, so the arrows run
//! one way: text → admit → validate → schema.

use super::admit::{admit, admit_all};
use super::error::ConfigError;
use super::schema::Config;
use super::shape::{check_toml_shape, check_toml_shape_all};

impl Config {
    /// The file written when `config.toml` does not exist.
    pub fn default_file_text() -> &'static str {
        "schema_version = 1\n\n[agents.echo]\nbackend = \"echo\"\n"
    }

    /// Parses TOML text: syntax errors are [`ConfigError::Startup`]; unknown keys, wrong types
    /// and failed §11.3 checks are [`ConfigError::Invalid`] naming the path. The result is valid.
    pub fn from_toml_str(text: &str) -> Result<Config, ConfigError> {
        let table: toml::Table =
            toml::from_str(text).map_err(|e| ConfigError::Startup(e.to_string()))?;
        check_toml_shape(&table).map_err(|f| f.into_error(None))?;
        let config: Config = table
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Startup(e.to_string()))?;
        admit(config).map_err(|f| f.into_error(None))
    }

    /// As [`Config::from_toml_str`], but a refusal lists every error (a syntax error alone, else
    /// every unknown key and wrong type, else every failed check), each as
    /// `invalid configuration: <path>: <reason>`: what a hand edit is told, so that one round
    /// of fixes fixes everything (`zeroclaw config edit`, a refused reload).
    pub fn check_toml_text(text: &str) -> Result<Config, Vec<String>> {
        let table: toml::Table = toml::from_str(text).map_err(|e| vec![e.to_string()])?;
        let message = |f: super::validate::Failure| f.into_error(None).to_string();
        let shape = check_toml_shape_all(&table);
        if !shape.is_empty() {
            return Err(shape.into_iter().map(message).collect());
        }
        let config: Config = table
            .try_into()
            .map_err(|e: toml::de::Error| vec![e.to_string()])?;
        admit_all(config).map_err(|failures| failures.into_iter().map(message).collect())
    }

    /// Serializes to the TOML text the daemon persists.
    pub fn to_toml_string(&self) -> Result<String, ConfigError> {
        toml::to_string(self).map_err(|e| ConfigError::save_failed(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DaemonConfig;

    #[test]
    fn default_file_parses_with_defaults() {
        let c = Config::from_toml_str(Config::default_file_text()).unwrap();
        let echo = &c.agents["echo"];
        assert_eq!(echo.backend.as_deref(), Some("echo"));
        assert_eq!(echo.chunk_chars, 16);
        assert_eq!(echo.timeout_secs, 600);
        assert_eq!(echo.input, "prompt");
        assert_eq!(c.daemon, DaemonConfig::default());
        assert_eq!(c.daemon.session_idle_secs, 1800);
        assert!(c.security.trust_daemon_uid);
        assert_eq!(c.gateway.port, 42617);
        assert_eq!(c.gateway.host, "127.0.0.1");
        assert!(c.gateway.require_pairing);
    }

    #[test]
    fn spec_example_parses_and_round_trips() {
        let text = r#"
schema_version = 1
[daemon]
session_idle_secs = 0
[security]
trust_daemon_uid = true
socket_group = "zeroclaw"
[gateway]
paired_tokens = []
[agents.echo]
backend = "echo"
[agents.llm]
backend = "command"
command = ["llm", "--model", "local"]
input = "prompt"
env = { A = "1" }
[permission_profiles.operator]
allowed_agents = ["echo"]
config_write_paths = ["agents.echo.*"]
grants = { sessions = ["create", "read", "update", "delete", "execute"], files = ["create"], system = ["read"] }
[users.example]
uid = 1001
permission_profiles = ["operator"]
"#;
        let c = Config::from_toml_str(text).unwrap();
        let out = c.to_toml_string().unwrap();
        assert_eq!(Config::from_toml_str(&out).unwrap(), c);
        assert_eq!(
            c.users["example"].effective_principal_id("example"),
            "example"
        );
    }

    #[test]
    fn syntax_error_is_startup_error() {
        let e = Config::from_toml_str("schema_version = ").unwrap_err();
        assert!(matches!(e, ConfigError::Startup(_)), "{e:?}");
    }
}
