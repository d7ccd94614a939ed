//! `zeroclaw doctor [--agent A]`: checks, as the user who runs it, what a
//! person would otherwise debug by hand, and prints one line per check: `ok`,
//! `warn` or `FAIL`, what was found and, for a failure, what to do. Exit
//! status 0 only when no check fails (a warning does not). Nothing is created, repaired or written: the config
//! is parsed from its text, the session database is opened read-only.
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | the order of the checks and the report |
//! | `config.rs` | `config.toml`, every fault at once |
//! | `files.rs` | directories, file modes, the endpoint, disk space |
//! | `store.rs` | the SQLite integrity check |
//! | `backend.rs` | whether each agent's backend is reachable, its model served |
//! | `acp.rs` | whether an ACP agent opens a session |

mod acp;
mod backend;
mod config;
mod files;
mod store;

use std::ffi::OsStr;
use std::io::Write;

use serde_json::{json, Value};

use super::conn::ClientPeer;
use crate::endpoint::{self, EndpointName};

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: String,
    pub ok: bool,
    /// Passed, with something the user should know (not counted as a failure).
    pub warning: bool,
    /// What was found.
    pub detail: String,
    /// What to do about a failure.
    pub fix: String,
}

impl Check {
    pub fn pass(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            ok: true,
            warning: false,
            detail: detail.into(),
            fix: String::new(),
        }
    }

    /// Passed, but the user should know `detail` (`warn  NAME: DETAIL`).
    pub fn warn(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            warning: true,
            ..Check::pass(name, detail)
        }
    }

    pub fn fail(
        name: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        Check {
            name: name.into(),
            ok: false,
            warning: false,
            detail: detail.into(),
            fix: fix.into(),
        }
    }

    /// `ok    NAME: DETAIL`, `warn  NAME: DETAIL` or `FAIL  NAME: DETAIL; fix: FIX`.
    pub fn line(&self) -> String {
        if self.warning {
            format!("warn  {}: {}", self.name, self.detail)
        } else if self.ok {
            format!("ok    {}: {}", self.name, self.detail)
        } else {
            format!("FAIL  {}: {}; fix: {}", self.name, self.detail, self.fix)
        }
    }
}

/// Runs every check; the exit status.
pub async fn run(config_dir: Option<&OsStr>, agent: Option<&str>) -> i32 {
    let checks = checks(config_dir, agent).await;
    let mut out = std::io::stdout().lock();
    for c in &checks {
        // A check may quote an agent's reply or a file name: sanitized.
        let _ = writeln!(out, "{}", crate::shown::Shown::line(&c.line()));
    }
    let failed = checks.iter().filter(|c| !c.ok).count();
    let warned = checks.iter().filter(|c| c.warning).count();
    let warnings = match warned {
        0 => String::new(),
        1 => ", 1 warning".to_owned(),
        n => format!(", {n} warnings"),
    };
    let _ = if failed == 0 {
        writeln!(out, "all {} checks passed{warnings}", checks.len())
    } else {
        writeln!(out, "{failed} of {} checks failed{warnings}", checks.len())
    };
    i32::from(failed > 0)
}

async fn checks(config_dir: Option<&OsStr>, only: Option<&str>) -> Vec<Check> {
    let dirs = match endpoint::resolve_dirs_from_env(config_dir) {
        Ok(d) => d,
        Err(e) => {
            return vec![Check::fail(
                "directories",
                e.to_string(),
                "set HOME, or pass --config-dir",
            )]
        }
    };
    let mut out = Vec::new();
    let (config_checks, config) = config::read(&dirs.config_file);
    let group = config
        .as_ref()
        .and_then(|c| c.security.socket_group.clone());
    out.push(files::private_dir(
        "config dir",
        &dirs.config_dir,
        group.is_some(),
    ));
    out.push(files::private_dir(
        "data dir",
        &dirs.data_dir,
        group.is_some(),
    ));
    out.push(files::private_file("config.toml mode", &dirs.config_file));
    out.extend(config_checks);
    let name = endpoint::resolve_endpoint(&dirs.data_dir, |k| std::env::var_os(k));
    #[cfg(unix)]
    {
        let EndpointName::Path(socket) = &name;
        out.push(files::endpoint(socket, group.is_some()));
    }
    out.push(daemon(config_dir, &name).await);
    out.push(store::quick_check(&crate::store::Store::path_in(&dirs.data_dir)).await);
    if let Some(config) = &config {
        if let Some(alias) = only.filter(|a| !config.agents.contains_key(*a)) {
            let known: Vec<&str> = config.agents.keys().map(String::as_str).collect();
            out.push(Check::fail(
                format!("agent {alias}"),
                format!(
                    "no agent {alias} is configured (there are: {})",
                    known.join(", ")
                ),
                "name one of them, or add it to config.toml",
            ));
        }
        for (alias, agent) in &config.agents {
            let spec = config.agent_spec(alias);
            if let Some(spec) = spec.filter(|_| only.is_none_or(|a| a == alias)) {
                out.push(backend::reachable(alias, agent, spec).await);
            }
        }
    }
    out.push(files::disk_space(&dirs.data_dir));
    out
}

/// Whether a daemon answers, and its version.
async fn daemon(config_dir: Option<&OsStr>, name: &EndpointName) -> Check {
    const NAME: &str = "daemon";
    let mut conn =
        match ClientPeer::open(config_dir).await {
            Ok(c) => c,
            Err(_) => return Check::fail(
                NAME,
                format!("no daemon answers at {name}"),
                "start one with `zeroclaw daemon` (or `systemctl --user start zeroclaw.socket`)",
            ),
        };
    match conn.call("status", json!({})).await {
        Ok(s) => {
            let f = |k: &str| crate::cli::field::field_text(&s, k);
            let version = f("server_version");
            let mut detail = format!(
                "version {version} answers at {name} (pid {})",
                f("server_pid")
            );
            if version != env!("CARGO_PKG_VERSION")
                && s.get("server_version").is_some_and(Value::is_string)
            {
                detail.push_str(&format!("; this client is {}", env!("CARGO_PKG_VERSION")));
            }
            Check::pass(NAME, detail)
        }
        Err(e) => Check::fail(
            NAME,
            format!("status failed: {}", e.message()),
            "read `zeroclaw logs`",
        ),
    }
}
