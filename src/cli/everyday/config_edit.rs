//! `zeroclaw config edit [--json]`: `$VISUAL`, else `$EDITOR`, else `vi`, on a
//! private copy of `config.toml` (a fresh `0600` file in the temporary directory), and when the
//! editor exits 0 having changed the copy, one atomic commit of the whole text.
//!
//! With a daemon running the daemon checks and commits it (`config/replace`, with the SHA-256
//! of the text the copy started from, so an edit made meanwhile by anyone else is refused, never
//! overwritten); without one the same check runs here and the file is replaced under the same
//! lock and atomic write as a daemon's commit. An invalid text is refused with every error; on
//! a terminal the user is offered to edit the copy again, in a script the command exits 1.

use std::ffi::OsStr;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{bold, fail};
use crate::cli::conn::{CallError, ClientPeer};
use crate::cli::exit;
use crate::config::{Config, ConfigStore};
use crate::shown::{self, Shown};

/// Why a commit did not happen.
enum Refused {
    /// The text does not load: every error.
    Invalid(Vec<String>),
    /// Anything else: the message and the exit status.
    Other(String, i32),
}

/// How the text was committed.
#[derive(Clone, Copy)]
enum Via {
    Daemon,
    File,
}

/// `zeroclaw config edit [--json]`.
pub async fn edit(config_dir: Option<&OsStr>, json: bool) -> i32 {
    let dirs = match crate::endpoint::resolve_dirs_from_env(config_dir) {
        Ok(d) => d,
        Err(e) => return fail(&e.to_string(), exit::USAGE),
    };
    let original = match std::fs::read(&dirs.config_file) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Config::default_file_text().as_bytes().to_vec()
        }
        Err(e) => {
            let why = format!("cannot read {}: {e}", dirs.config_file.display());
            return fail(&why, exit::RPC_ERROR);
        }
    };
    let Ok(mut text) = String::from_utf8(original.clone()) else {
        let why = format!("{} is not UTF-8", dirs.config_file.display());
        return fail(&why, exit::RPC_ERROR);
    };
    let copy = match PrivateCopy::create() {
        Ok(c) => c,
        Err(e) => {
            return fail(
                &format!("cannot create a private copy: {e}"),
                exit::RPC_ERROR,
            )
        }
    };
    let interactive = !json && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    loop {
        if let Err(e) = std::fs::write(&copy.0, &text) {
            return fail(&format!("cannot write the copy: {e}"), exit::RPC_ERROR);
        }
        if let Err(why) = run_editor(&copy.0) {
            return fail(&format!("{why}; config.toml unchanged"), exit::RPC_ERROR);
        }
        let edited = match std::fs::read_to_string(&copy.0) {
            Ok(t) => t,
            Err(e) => return fail(&format!("cannot read the copy: {e}"), exit::RPC_ERROR),
        };
        if edited.as_bytes() == original.as_slice() {
            return report_unchanged(json);
        }
        match commit(config_dir, &dirs.config_dir, &original, &edited).await {
            Ok(via) => return report_saved(json, via, &edited),
            Err(Refused::Other(why, status)) => return fail(&why, status),
            Err(Refused::Invalid(errors)) => {
                report_invalid(json, &errors);
                if !interactive || !ask_again() {
                    return exit::RPC_ERROR;
                }
                text = edited;
            }
        }
    }
}

/// The editor command: `$VISUAL`, else `$EDITOR`, else `vi` (non-empty values only).
fn editor() -> String {
    ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .find(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "vi".to_owned())
}

/// Runs the editor on `path`, as a shell command line (an `EDITOR` of `code --wait` works),
/// attached to this terminal; an error unless it exits 0.
fn run_editor(path: &Path) -> Result<(), String> {
    let editor = editor();
    #[cfg(unix)]
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(path)
        .status();
    #[cfg(not(unix))]
    let status = {
        let mut words = editor.split_whitespace();
        let program = words.next().unwrap_or("notepad");
        std::process::Command::new(program)
            .args(words)
            .arg(path)
            .status()
    };
    match status {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("the editor ({editor}) exited with {s}")),
        Err(e) => Err(format!("cannot run the editor ({editor}): {e}")),
    }
}

/// Commits `edited` through the daemon when one answers, else directly.
async fn commit(
    config_dir: Option<&OsStr>,
    dir: &Path,
    original: &[u8],
    edited: &str,
) -> Result<Via, Refused> {
    let mut conn = match ClientPeer::open(config_dir).await {
        Ok(c) => c,
        Err(e) if e.status == exit::NO_DAEMON => return commit_file(dir, original, edited),
        Err(e) => return Err(Refused::Other(e.message, e.status)),
    };
    let params = json!({"text": edited, "base_sha256": crate::hex::sha256(original)});
    match conn.call("config/replace", params).await {
        Ok(_) => Ok(Via::Daemon),
        Err(CallError::Rpc(e)) => match e.pointer("/data/errors").and_then(Value::as_array) {
            Some(list) => Err(Refused::Invalid(
                list.iter()
                    .map(|v| v.as_str().unwrap_or_default().to_owned())
                    .collect(),
            )),
            None => Err(Refused::Other(CallError::Rpc(e).message(), exit::RPC_ERROR)),
        },
        Err(e) => Err(Refused::Other(e.message(), exit::RPC_ERROR)),
    }
}

/// No daemon: the daemon's own checks and atomic write, here.
fn commit_file(dir: &Path, original: &[u8], edited: &str) -> Result<Via, Refused> {
    Config::check_toml_text(edited).map_err(Refused::Invalid)?;
    let (mut store, _) = ConfigStore::open(dir)
        .map_err(|e| Refused::Other(format!("config.toml: {e}"), exit::RPC_ERROR))?;
    if store.last_bytes() != original {
        let why = "config.toml changed since the copy was made; run `zeroclaw config edit` again";
        return Err(Refused::Other(why.to_owned(), exit::RPC_ERROR));
    }
    store
        .commit_text(edited.to_owned())
        .map_err(|e| Refused::Other(e.to_string(), exit::RPC_ERROR))?;
    Ok(Via::File)
}

fn report_unchanged(json: bool) -> i32 {
    let mut out = std::io::stdout();
    let _ = if json {
        writeln!(out, "{}", json!({"changed": false}))
    } else {
        writeln!(out, "config.toml unchanged")
    };
    exit::OK
}

fn report_saved(json: bool, via: Via, edited: &str) -> i32 {
    let mut out = std::io::stdout();
    let (via_name, how) = match via {
        Via::Daemon => ("daemon", "the daemon runs it now"),
        Via::File => ("file", "no daemon is running; it is read at the next start"),
    };
    let _ = if json {
        let doc = json!({"changed": true, "via": via_name, "sha256": crate::hex::sha256(edited.as_bytes())});
        writeln!(out, "{doc}")
    } else {
        writeln!(out, "config.toml saved; {how}")
    };
    exit::OK
}

/// Every error on stderr: one JSON error object with `--json`, else a headline and one line
/// each.
fn report_invalid(json: bool, errors: &[String]) {
    let mut err = std::io::stderr();
    if json {
        let e = json!({"code": -32602, "message": errors.first().cloned().unwrap_or_default(),
                       "data": {"errors": errors}});
        let _ = writeln!(err, "{}", shown::json(&e.to_string()));
        return;
    }
    let colour = crate::cli::colour::on(err.is_terminal());
    let head = match errors.len() {
        1 => "config.toml not saved: 1 error".to_owned(),
        n => format!("config.toml not saved: {n} errors"),
    };
    let _ = writeln!(err, "zeroclaw: {}", bold(&head, colour));
    for e in errors {
        let _ = writeln!(err, "  {}", Shown::line(e));
    }
}

/// On a terminal: edit the copy again? (default yes).
fn ask_again() -> bool {
    let _ = write!(std::io::stderr(), "Edit again? [Y/n] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => false,
        Ok(_) => !matches!(line.trim(), "n" | "N" | "no" | "No"),
    }
}

/// The private copy: created new (`0600`, a name nobody can guess) in the temporary
/// directory, removed when the command ends.
struct PrivateCopy(PathBuf);

impl PrivateCopy {
    fn create() -> std::io::Result<PrivateCopy> {
        let random = crate::hex::lower(&random_suffix()?);
        let path = std::env::temp_dir().join(format!("zeroclaw-config-{random}.toml"));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        options.open(&path)?;
        Ok(PrivateCopy(path))
    }
}

impl Drop for PrivateCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn random_suffix() -> std::io::Result<[u8; 8]> {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(b)
}
