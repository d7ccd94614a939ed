//! `zeroclaw doctor`: checks, as the user who runs it, what a person would
//! otherwise debug by hand, and prints one line per check: `ok` or `FAIL`,
//! what was found and, for a failure, what to do. Exit status 0 only when
//! every check passes. Nothing is created, repaired or written: the config
//! is parsed from its text, the session database is opened read-only.
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | the order of the checks and the report |
//! | `files.rs` | directories, file modes, the endpoint, disk space |
//! | `store.rs` | the SQLite integrity check |
//! | `backend.rs` | whether each agent's backend is reachable |

mod backend;
mod files;
mod store;

use std::ffi::OsStr;
use std::io::Write;

use serde_json::{json, Value};

use super::conn::Conn;
use crate::config::Config;
use crate::endpoint::{self, EndpointName};

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: String,
    pub ok: bool,
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
            detail: detail.into(),
            fix: String::new(),
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
            detail: detail.into(),
            fix: fix.into(),
        }
    }

    /// `ok    NAME: DETAIL` or `FAIL  NAME: DETAIL; fix: FIX`.
    pub fn line(&self) -> String {
        if self.ok {
            format!("ok    {}: {}", self.name, self.detail)
        } else {
            format!("FAIL  {}: {}; fix: {}", self.name, self.detail, self.fix)
        }
    }
}

/// Runs every check; the exit status.
pub async fn run(config_dir: Option<&OsStr>) -> i32 {
    let checks = checks(config_dir).await;
    let mut out = std::io::stdout().lock();
    for c in &checks {
        // A check may quote an agent's reply or a file name: sanitized.
        let _ = writeln!(out, "{}", crate::shown::Shown::line(&c.line()));
    }
    let failed = checks.iter().filter(|c| !c.ok).count();
    let _ = if failed == 0 {
        writeln!(out, "all {} checks passed", checks.len())
    } else {
        writeln!(out, "{failed} of {} checks failed", checks.len())
    };
    i32::from(failed > 0)
}

async fn checks(config_dir: Option<&OsStr>) -> Vec<Check> {
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
    let (config_check, config) = read_config(&dirs.config_file);
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
    out.push(config_check);
    let name = endpoint::resolve_endpoint(&dirs.data_dir, |k| std::env::var_os(k));
    #[cfg(unix)]
    {
        let EndpointName::Path(socket) = &name;
        out.push(files::endpoint(socket, group.is_some()));
    }
    out.push(daemon(config_dir, &name).await);
    out.push(store::quick_check(&crate::store::Store::path_in(&dirs.data_dir)).await);
    if let Some(config) = &config {
        for (alias, agent) in &config.agents {
            out.push(backend::reachable(alias, agent).await);
        }
    }
    out.push(files::disk_space(&dirs.data_dir));
    out
}

/// Parses `config.toml` as the daemon would, without touching it.
fn read_config(path: &std::path::Path) -> (Check, Option<Config>) {
    const NAME: &str = "config.toml";
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let detail = format!(
                "{} does not exist yet (the daemon writes a default one)",
                path.display()
            );
            return (
                Check::pass(NAME, detail),
                Config::from_toml_str(Config::default_file_text()).ok(),
            );
        }
        Err(e) => {
            let detail = format!("cannot read {}: {e}", path.display());
            return (
                Check::fail(NAME, detail, "make it readable by this user"),
                None,
            );
        }
    };
    match Config::from_toml_str(&text) {
        Ok(c) => {
            let detail = format!("{} is valid ({} agents)", path.display(), c.agents.len());
            (Check::pass(NAME, detail), Some(c))
        }
        Err(e) => (
            Check::fail(
                NAME,
                format!("{} is invalid: {e}", path.display()),
                "correct it (the daemon will not start with it)",
            ),
            None,
        ),
    }
}

/// Whether a daemon answers, and its version.
async fn daemon(config_dir: Option<&OsStr>, name: &EndpointName) -> Check {
    const NAME: &str = "daemon";
    let mut conn =
        match Conn::open(config_dir).await {
            Ok(c) => c,
            Err(_) => return Check::fail(
                NAME,
                format!("no daemon answers at {name}"),
                "start one with `zeroclaw daemon` (or `systemctl --user start zeroclaw.socket`)",
            ),
        };
    match conn.call("status", json!({})).await {
        Ok(s) => {
            let f = |k: &str| crate::client::field_text(&s, k);
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
