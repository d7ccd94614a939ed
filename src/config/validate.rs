//! Validation of a whole configuration (§11.3), at startup and in step 6 of the config pipeline.
//!
//! Every failing check reports the path of the field it is about, and among all failing checks
//! the one with the smallest path in byte order wins, so the reported error does not depend on
//! the order in which checks run. `zeroclaw doctor` asks for all of them at once
//! ([`validate_all`], `shape::check_toml_shape_all`), in the same order. "Every key is known and has the right type" is checked on the
//! raw TOML table by `shape::check_toml_shape` (the typed [`Config`] cannot hold a bad key); the
//! other rules by [`validate`].

use std::collections::BTreeMap;

use super::agent_spec::choices::{
    expected, Approval, Backend, FsAccess, InputMode, LoadSession, PermissionDefault, Tool,
};
use super::error::ConfigError;
use super::grant::{Resource, Verb};
use super::paths::{self, is_child_base_var, is_env_name, is_env_value, is_valid_name};
use super::schema::{AgentConfig, Config};

/// One failing check: the path it is about and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Dotted path of the field (`users.example.permission_profiles`).
    pub path: String,
    /// Human-readable reason.
    pub reason: String,
}

impl Failure {
    /// The pipeline error: `[sets[<i>]: ]invalid configuration: <path>: <reason>`.
    pub fn into_error(self, index: Option<usize>) -> ConfigError {
        let text = format!("invalid configuration: {}: {}", self.path, self.reason);
        let message = match index {
            Some(i) => format!("sets[{i}]: {text}"),
            None => text,
        };
        ConfigError::Invalid {
            index,
            path: self.path,
            message,
        }
    }
}

/// Every failure, in the order the checks reported them.
#[derive(Default)]
pub(super) struct Report(Vec<Failure>);

impl Report {
    pub(super) fn fail(&mut self, path: String, reason: impl Into<String>) {
        self.0.push(Failure {
            path,
            reason: reason.into(),
        });
    }

    fn at_least_one(&mut self, path: String, value: u32) {
        if value < 1 {
            self.fail(path, "must be at least 1");
        }
    }

    /// The failure with the smallest path (the first reported among equal paths).
    pub(super) fn finish(self) -> Result<(), Failure> {
        self.all().into_iter().next().map_or(Ok(()), Err)
    }

    /// Every failure, by path (stable: equal paths keep their report order).
    pub(super) fn all(mut self) -> Vec<Failure> {
        self.0.sort_by(|a, b| a.path.cmp(&b.path));
        self.0
    }
}

const NAME_RULE: &str = "invalid name (must match [A-Za-z0-9][A-Za-z0-9_-]{0,63})";

/// Checks every rule of §11.3 except key/type conformance, which the typed config guarantees.
pub fn validate(config: &Config) -> Result<(), Failure> {
    report(config).finish()
}

/// Every failing check of [`validate`], by path (`zeroclaw config edit` and a refused reload
/// show them all, so one fix-and-retry round fixes everything).
pub fn validate_all(config: &Config) -> Vec<Failure> {
    report(config).all()
}

fn report(config: &Config) -> Report {
    let mut r = Report::default();
    if config.schema_version != 1 {
        let reason = format!(
            "unsupported schema version {} (expected 1)",
            config.schema_version
        );
        r.fail("schema_version".into(), reason);
    }
    let d = &config.daemon;
    r.at_least_one(
        "daemon.approval_timeout_secs".into(),
        d.approval_timeout_secs,
    );
    r.at_least_one("daemon.ask_timeout_secs".into(), d.ask_timeout_secs);
    r.at_least_one("daemon.upload_idle_secs".into(), d.upload_idle_secs);
    if !crate::limits::BUDGET_MIB_RANGE.contains(&d.memory_budget_mib) {
        r.fail(
            "daemon.memory_budget_mib".into(),
            crate::limits::BUDGET_MIB_RULE,
        );
    }
    if let Some(v) = &d.advertised_server_version {
        if !is_version_text(v) {
            r.fail(
                "daemon.advertised_server_version".into(),
                "must be 1 to 64 characters of [0-9A-Za-z.+-]",
            );
        }
    }
    check_gateway(&mut r, config);
    check_agents(&mut r, config);
    check_profiles(&mut r, config);
    check_users(&mut r, config);
    check_default_agent(&mut r, config);
    r
}

/// `default_agent` names a configured agent.
fn check_default_agent(r: &mut Report, config: &Config) {
    if let Some(alias) = &config.default_agent {
        if !config.agents.contains_key(alias) {
            r.fail(
                "default_agent".into(),
                format!("unknown agent {alias:?} (must name a configured agent)"),
            );
        }
    }
}

/// A version string as package managers write them (`0.8.4`, `1.0.0-rc.1+abc`).
fn is_version_text(v: &str) -> bool {
    (1..=64).contains(&v.len())
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-'))
}

fn check_gateway(r: &mut Report, config: &Config) {
    let g = &config.gateway;
    if g.port == 0 {
        r.fail("gateway.port".into(), "must be 1-65535");
    }
    if let Some(i) = g.paired_tokens.iter().position(|t| !is_digest(t)) {
        // Named by position, never quoted: `config/get` masks every entry as
        // a secret, and a wrong entry may be a token pasted in by hand;
        // this message is logged and answered to clients.
        let reason = format!("entry {} (counting from 1) is not 64 hex digits", i + 1);
        r.fail("gateway.paired_tokens".into(), reason);
    }
    if let Some(bad) = g.allowed_hosts.iter().find(|h| !is_host_name(h)) {
        let reason = format!("entry {bad:?} is not a host name (no port, scheme or path)");
        r.fail("gateway.allowed_hosts".into(), reason);
    }
    if let Some(bad) = g.allowed_origins.iter().find(|o| !is_origin(o)) {
        let reason = format!("entry {bad:?} is not an origin (http(s)://host[:port])");
        r.fail("gateway.allowed_origins".into(), reason);
    }
    if g.enabled && !g.require_pairing && g.paired_tokens.is_empty() {
        let reason = "pairing is impossible: set require_pairing or pair a token";
        r.fail("gateway.enabled".into(), reason);
    }
}

/// A DNS name or IP literal as a `Host` header names it, without the port.
fn is_host_name(h: &str) -> bool {
    (1..=253).contains(&h.len())
        && h.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

/// `http://host` or `https://host:port`, as browsers send `Origin`.
fn is_origin(o: &str) -> bool {
    let Some(rest) = o
        .strip_prefix("http://")
        .or_else(|| o.strip_prefix("https://"))
    else {
        return false;
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) if !p.contains(']') => (h, Some(p)),
        _ => (rest, None),
    };
    let host_ok = is_host_name(host)
        || (host.starts_with('[')
            && host.ends_with(']')
            && host[1..host.len() - 1]
                .parse::<std::net::Ipv6Addr>()
                .is_ok());
    host_ok && port.is_none_or(|p| p.parse::<u16>().is_ok_and(|n| n > 0))
}

fn is_digest(token: &str) -> bool {
    token.len() == 64 && token.bytes().all(|b| b.is_ascii_hexdigit())
}

fn check_agents(r: &mut Report, config: &Config) {
    for (alias, a) in &config.agents {
        let p = format!("agents.{alias}");
        if !is_valid_name(alias) {
            r.fail(p.clone(), NAME_RULE);
        }
        match a.backend.as_deref().map(|b| (b, Backend::parse(b))) {
            None => r.fail(format!("{p}.backend"), "required"),
            Some((_, Some(Backend::Echo))) => {}
            Some((name, Some(Backend::Command | Backend::Acp))) => check_argv(r, &p, name, a),
            Some((_, Some(Backend::OpenAi))) => {
                if a.model.as_deref().is_none_or(str::is_empty) {
                    let reason = "required and non-empty for backend \"openai\"";
                    r.fail(format!("{p}.model"), reason);
                }
            }
            Some((other, None)) => {
                let reason = format!(
                    "unknown backend {other:?} (expected {})",
                    expected(Backend::NAMES)
                );
                r.fail(format!("{p}.backend"), reason);
            }
        }
        check_acp_keys(r, &p, a);
        check_openai_keys(r, &p, a);
        one_of(r, &p, "input", &a.input, InputMode::parse, InputMode::NAMES);
        r.at_least_one(format!("{p}.chunk_chars"), a.chunk_chars);
        r.at_least_one(format!("{p}.timeout_secs"), a.timeout_secs);
        if a.compact_keep_messages >= a.context_max_messages {
            let reason = format!(
                "must be less than context_max_messages ({})",
                a.context_max_messages
            );
            r.fail(format!("{p}.compact_keep_messages"), reason);
        }
        if let Some(k) = a.env.keys().find(|k| !is_env_name(k)) {
            r.fail(format!("{p}.env"), format!("invalid variable name {k:?}"));
        }
        if let Some((k, _)) = a.env.iter().find(|(_, v)| !is_env_value(v)) {
            r.fail(format!("{p}.env"), format!("value of {k:?} contains NUL"));
        }
    }
}

/// `command` of the backends that run a program.
fn check_argv(r: &mut Report, p: &str, backend: &str, a: &AgentConfig) {
    match a.command.as_deref() {
        None | Some([]) => {
            let reason = format!("required and non-empty for backend {backend:?}");
            r.fail(format!("{p}.command"), reason);
        }
        Some([program, ..]) if program.is_empty() => {
            r.fail(format!("{p}.command"), "the program name is empty");
        }
        Some(_) => {}
    }
}

/// The keys of `backend = "acp"`, checked whatever the backend (a value
/// staged before the backend switch must already be valid).
fn check_acp_keys(r: &mut Report, p: &str, a: &AgentConfig) {
    let load = &a.load_session;
    one_of(
        r,
        p,
        "load_session",
        load,
        LoadSession::parse,
        LoadSession::NAMES,
    );
    let default = &a.permission_default;
    let names = PermissionDefault::NAMES;
    one_of(
        r,
        p,
        "permission_default",
        default,
        PermissionDefault::parse,
        names,
    );
    one_of(r, p, "fs", &a.fs, FsAccess::parse, FsAccess::NAMES);
}

/// `<p>.<key>` is one of a choice's words.
fn one_of<T>(
    r: &mut Report,
    p: &str,
    key: &str,
    value: &str,
    parse: fn(&str) -> Option<T>,
    names: &[&str],
) {
    if parse(value).is_none() {
        let reason = format!("unknown {key} {value:?} (expected {})", expected(names));
        r.fail(format!("{p}.{key}"), reason);
    }
}

/// The `backend = "openai"` keys, checked whenever set (whatever the
/// backend), so switching an agent to `openai` cannot expose a bad value.
fn check_openai_keys(r: &mut Report, p: &str, a: &AgentConfig) {
    if let Some(url) = &a.base_url {
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"));
        if rest.is_none_or(|h| h.is_empty() || h.starts_with('/'))
            || url.contains(char::is_whitespace)
        {
            r.fail(
                format!("{p}.base_url"),
                "must be an http:// or https:// URL with a host",
            );
        }
    }
    if let Some(name) = &a.api_key_env {
        let valid = name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !valid {
            let reason = "must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)";
            r.fail(format!("{p}.api_key_env"), reason);
        } else if is_child_base_var(name) {
            // Every child gets the base: the key would reach them all.
            let reason = "must not name a variable every child process gets (PATH, HOME, LC_*, …)";
            r.fail(format!("{p}.api_key_env"), reason);
        }
    }
    if let Some(path) = &a.api_key_file {
        if !std::path::Path::new(path).is_absolute() {
            r.fail(format!("{p}.api_key_file"), "must be an absolute path");
        } else if a.api_key_env.is_some() {
            let reason = "set either api_key_env or api_key_file, not both";
            r.fail(format!("{p}.api_key_file"), reason);
        }
    }
    if let Some(t) = a.temperature {
        if !(t.0.is_finite() && (0.0..=2.0).contains(&t.0)) {
            r.fail(format!("{p}.temperature"), "must be a number in 0-2");
        }
    }
    for (key, value) in [
        ("max_tokens", a.max_tokens),
        ("request_timeout_secs", a.request_timeout_secs),
        ("max_tool_rounds", a.max_tool_rounds),
    ] {
        if let Some(v) = value {
            r.at_least_one(format!("{p}.{key}"), v);
        }
    }
    if let Some(tools) = &a.tools {
        if let Some(t) = tools.iter().find(|t| Tool::parse(t).is_none()) {
            let reason = format!(
                "unknown tool {t:?} (expected some of {})",
                Tool::NAMES.join(", ")
            );
            r.fail(format!("{p}.tools"), reason);
        } else if let Some((_, t)) = tools
            .iter()
            .enumerate()
            .find(|(i, t)| tools[..*i].contains(t))
        {
            r.fail(format!("{p}.tools"), format!("duplicate tool {t:?}"));
        }
    }
    if let Some(mode) = &a.approval {
        one_of(r, p, "approval", mode, Approval::parse, Approval::NAMES);
    }
}

fn check_profiles(r: &mut Report, config: &Config) {
    for (alias, profile) in &config.permission_profiles {
        let p = format!("permission_profiles.{alias}");
        if !is_valid_name(alias) {
            r.fail(p.clone(), NAME_RULE);
        }
        let unknown_agent = |a: &&String| *a != "*" && !config.agents.contains_key(a.as_str());
        if let Some(a) = profile.allowed_agents.iter().find(unknown_agent) {
            r.fail(
                format!("{p}.allowed_agents"),
                format!("unknown agent {a:?}"),
            );
        }
        for (resource, verbs) in &profile.grants {
            let path = format!("{p}.grants.{resource}");
            if Resource::parse(resource).is_none() {
                r.fail(path, format!("unknown resource {resource:?}"));
            } else if let Some(v) = verbs.iter().find(|v| Verb::parse(v).is_none()) {
                r.fail(path, format!("unknown verb {v:?}"));
            }
        }
        let bad = |s: &&String| !paths::is_valid_selector(s);
        if let Some(s) = profile.config_write_paths.iter().find(bad) {
            let reason = format!(
                "invalid selector {s:?} (expected \"*\", a prop, or a prop followed by \".*\")"
            );
            r.fail(format!("{p}.config_write_paths"), reason);
        }
    }
}

/// Duplicates (uids, principal ids) are reported at every entry after the first holder in
/// byte order of entry names, so the report lands on the entry that collides.
fn check_users(r: &mut Report, config: &Config) {
    let mut uids: BTreeMap<u32, &str> = BTreeMap::new();
    let mut ids: BTreeMap<&str, &str> = BTreeMap::new();
    for (name, u) in &config.users {
        let p = format!("users.{name}");
        if !is_valid_name(name) {
            r.fail(p.clone(), NAME_RULE);
        }
        match u.uid {
            None => r.fail(format!("{p}.uid"), "required"),
            Some(uid) => match uids.get(&uid) {
                Some(first) => {
                    let reason = format!("duplicate uid {uid} (also users.{first})");
                    r.fail(format!("{p}.uid"), reason);
                }
                None => {
                    uids.insert(uid, name);
                }
            },
        }
        let profiles_path = format!("{p}.permission_profiles");
        match u.permission_profiles.as_deref() {
            None => r.fail(profiles_path, "required"),
            Some([]) => r.fail(profiles_path, "must not be empty"),
            Some(list) => {
                let missing = list
                    .iter()
                    .find(|x| !config.permission_profiles.contains_key(*x));
                if let Some(x) = missing {
                    r.fail(profiles_path, format!("unknown permission profile {x:?}"));
                }
            }
        }
        let id = u.effective_principal_id(name);
        if u.principal_id.is_some() && !is_valid_name(id) {
            r.fail(format!("{p}.principal_id"), NAME_RULE);
        }
        if let Some(first) = ids.get(id) {
            let reason = format!("duplicate principal id {id:?} (also users.{first})");
            r.fail(format!("{p}.principal_id"), reason);
        } else {
            ids.insert(id, name);
        }
    }
}

#[cfg(test)]
#[path = "validate_openai_tests.rs"]
mod openai_tests;
#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
