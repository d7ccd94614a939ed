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
        let table: toml::Table = toml::from_str(text)
            .map_err(|e: toml::de::Error| ConfigError::Startup(toml_error(text, &e)))?;
        check_toml_shape(&table).map_err(|f| f.into_error(None))?;
        let config: Config = table
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Startup(toml_error(text, &e)))?;
        admit(config).map_err(|f| f.into_error(None))
    }

    /// As [`Config::from_toml_str`], but a refusal lists every error (a syntax error alone, else
    /// every unknown key and wrong type, else every failed check), each as
    /// `invalid configuration: <path>: <reason>`: what a hand edit is told, so that one round
    /// of fixes fixes everything (`zeroclaw config edit`, a refused reload).
    pub fn check_toml_text(text: &str) -> Result<Config, Vec<String>> {
        let table: toml::Table =
            toml::from_str(text).map_err(|e: toml::de::Error| vec![toml_error(text, &e)])?;
        let message = |f: super::validate::Failure| f.into_error(None).to_string();
        let shape = check_toml_shape_all(&table);
        if !shape.is_empty() {
            return Err(shape.into_iter().map(message).collect());
        }
        let config: Config = table
            .try_into()
            .map_err(|e: toml::de::Error| vec![toml_error(text, &e)])?;
        admit_all(config).map_err(|failures| failures.into_iter().map(message).collect())
    }

    /// Serializes to the TOML text the daemon persists.
    pub fn to_toml_string(&self) -> Result<String, ConfigError> {
        toml::to_string(self).map_err(|e| ConfigError::save_failed(e.to_string()))
    }
}

/// What a TOML error of `text` is told: where (line and column, and the key when the line
/// names one plainly) and what, never the text itself. The toml crate's own `Display` quotes
/// the offending line, and that line may hold a secret (a value whose closing quote is missing)
/// or be whatever a symlinked `config.toml` points at; logs and answers must not carry it.
pub fn toml_error(text: &str, e: &toml::de::Error) -> String {
    syntax_error(text, e.span().map(|s| s.start), e.message())
}

/// [`toml_error`] for an error given as an offset into `text` and a message.
pub(crate) fn syntax_error(text: &str, offset: Option<usize>, message: &str) -> String {
    let Some(mut offset) = offset.filter(|o| *o <= text.len()) else {
        return format!("TOML parse error: {message}");
    };
    // An offset inside a character counts as that character's start.
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = text.get(..offset).unwrap_or_default();
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.matches('\n').count() + 1;
    let column = text
        .get(line_start..offset)
        .map_or(1, |s| s.chars().count() + 1);
    let key = key_at(text, line_start);
    let key = key.map(|k| format!(" (key {k})")).unwrap_or_default();
    format!("TOML parse error at line {line}, column {column}{key}: {message}")
}

/// The dotted key the line starting at `line_start` assigns, under the last table header above
/// it; `None` unless every part is a bare key (letters, digits, `_`, `-`): a quoted key or
/// anything odd is not shown, since it is not known to be a key at all.
fn key_at(text: &str, line_start: usize) -> Option<String> {
    let rest = text.get(line_start..)?;
    let line = rest.split('\n').next().unwrap_or_default().trim();
    let bare = |k: &str| {
        let parts: Vec<&str> = k.split('.').map(str::trim).collect();
        parts
            .iter()
            .all(|p| {
                !p.is_empty()
                    && p.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            })
            .then(|| parts.join("."))
    };
    if line.starts_with('[') {
        return header(line).and_then(bare);
    }
    let key = bare(line.split_once('=')?.0)?;
    let head = text.get(..line_start).unwrap_or_default();
    let table = head
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| header(l).and_then(bare));
    match table {
        None => Some(key),
        Some(Some(table)) => Some(format!("{table}.{key}")),
        Some(None) => None,
    }
}

/// The name inside a `[table]` or `[[array]]` header line.
fn header(line: &str) -> Option<&str> {
    let inner = line.trim_start_matches('[');
    let end = inner.find(']')?;
    inner.get(..end)
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
    fn a_syntax_error_names_the_place_and_key_but_never_the_text() {
        let text = "schema_version = 1\n\n[agents.x]\nbackend = \"command\"\n\
                    [agents.x.env]\nTOKEN = \"hunter2-very-secret\n";
        let e = Config::from_toml_str(text).unwrap_err().to_string();
        assert!(!e.contains("hunter2"), "{e}");
        assert!(e.starts_with("TOML parse error at line 6, column "), "{e}");
        assert!(e.contains("(key agents.x.env.TOKEN)"), "{e}");
        let all = Config::check_toml_text(text).unwrap_err();
        assert_eq!(all, vec![e]);

        // The first line of whatever a link points at (an environment block) is not quoted.
        let e = Config::from_toml_str("PATH=/usr/bin\0SECRET=s3cr3t\0").unwrap_err();
        assert!(!e.to_string().contains("s3cr3t"), "{e}");
        let e = Config::from_toml_str("[x\"s3cr3t\nb = 1\n").unwrap_err();
        assert!(!e.to_string().contains("s3cr3t"), "{e}");
    }

    #[test]
    fn a_place_inside_a_character_counts_from_its_start() {
        let text = "a = 1\nb = \"é\"\n";
        let inside = text.find('é').unwrap() + 1;
        assert_eq!(
            syntax_error(text, Some(inside), "m"),
            "TOML parse error at line 2, column 6 (key b): m"
        );
        assert_eq!(syntax_error(text, None, "m"), "TOML parse error: m");
        assert_eq!(syntax_error(text, Some(999), "m"), "TOML parse error: m");
    }

    #[test]
    fn syntax_error_is_startup_error() {
        let e = Config::from_toml_str("schema_version = ").unwrap_err();
        assert!(matches!(e, ConfigError::Startup(_)), "{e:?}");
    }
}
