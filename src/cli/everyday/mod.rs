//! The everyday commands (docs/operations.md): `zeroclaw stop`,
//! `sessions`, `agents`, `config get|set|edit` and `run`. Each is one or a few
//! requests over a [`ClientPeer`]; by default a person reads the answer (a table,
//! a transcript), with `--json` a script gets the result as one JSON
//! document on stdout. Exit statuses are those of every client command
//! ([`exit`]). This file holds what they share: connecting, reporting an
//! outcome, tables and colour.

pub mod admin;
pub mod config_edit;
pub mod run;
pub mod sessions;

use std::ffi::OsStr;
use std::io::{IsTerminal, Write};

use serde_json::Value;

use super::conn::{CallError, ClientPeer};
use crate::cli::exit;
use crate::cli::field::field_text;
use crate::shown::{self, Shown};

/// Whether to colour what goes to stdout ([`crate::cli::colour::on`]).
pub fn colour() -> bool {
    crate::cli::colour::on(std::io::stdout().is_terminal())
}

/// `s` in bold when `on` (`s` is already shown text: a header we wrote).
pub fn bold(s: &str, on: bool) -> String {
    if on {
        format!("\x1b[1m{s}\x1b[0m")
    } else {
        s.to_owned()
    }
}

/// Prints a failure line on stderr (`zeroclaw: …`, sanitized); its status.
pub fn fail(message: &str, status: i32) -> i32 {
    let _ = writeln!(std::io::stderr(), "zeroclaw: {}", Shown::line(message));
    status
}

/// Connects and initializes, or the failure's status (3: no daemon).
pub async fn connect(config_dir: Option<&OsStr>) -> Result<ClientPeer, i32> {
    ClientPeer::open(config_dir)
        .await
        .map_err(|e| fail(&e.message, e.status))
}

/// Reports a call's outcome: with `json` the result as one JSON document on
/// stdout (an error object as one JSON line on stderr), else `human`'s text
/// (already sanitized by it) or the error's one-line message; the status.
pub fn finish(
    json: bool,
    outcome: Result<Value, CallError>,
    human: impl FnOnce(&Value) -> String,
) -> i32 {
    match (outcome, json) {
        (Ok(v), true) => {
            let _ = writeln!(std::io::stdout(), "{}", shown::json(&v.to_string()));
            exit::OK
        }
        (Ok(v), false) => {
            let _ = write!(std::io::stdout(), "{}", human(&v));
            exit::OK
        }
        (Err(CallError::Rpc(e)), true) => {
            let _ = writeln!(std::io::stderr(), "{}", shown::json(&e.to_string()));
            exit::RPC_ERROR
        }
        (Err(e), _) => fail(&e.message(), exit::RPC_ERROR),
    }
}

/// Connects, calls `method` once and reports it ([`finish`]).
pub async fn call_and_finish(
    config_dir: Option<&OsStr>,
    json: bool,
    method: &str,
    params: Value,
    human: impl FnOnce(&Value) -> String,
) -> i32 {
    let mut conn = match connect(config_dir).await {
        Ok(c) => c,
        Err(status) => return status,
    };
    let outcome = conn.call(method, params).await;
    finish(json, outcome, human)
}

/// A table: a bold header line when `colour`, columns padded to their
/// widest cell (in characters), two spaces apart; each cell is shown on
/// one line. Ends with a newline per row.
pub fn table(header: &[&str], rows: &[Vec<String>], colour: bool) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| Shown::line(c).to_string()).collect())
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |row: &[String]| {
        let mut s = String::new();
        for (i, (c, w)) in row.iter().zip(&widths).enumerate() {
            s.push_str(c);
            if i + 1 < row.len() {
                s.push_str(&" ".repeat(w - c.chars().count() + 2));
            }
        }
        s
    };
    let head: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    let mut out = bold(&line(&head), colour);
    out.push('\n');
    for row in &cells {
        out.push_str(&line(row));
        out.push('\n');
    }
    out
}

/// The array `v[key]` as a table of `columns` (header, member of each
/// entry; a member as [`field_text`] shows it), or `none` when it is empty.
pub fn listing(v: &Value, key: &str, columns: &[(&str, &str)], none: &str) -> String {
    let rows: Vec<Vec<String>> = entries(v, key)
        .iter()
        .map(|e| columns.iter().map(|(_, m)| field_text(e, m)).collect())
        .collect();
    if rows.is_empty() {
        return format!(
            "{none}
"
        );
    }
    let header: Vec<&str> = columns.iter().map(|(h, _)| *h).collect();
    table(&header, &rows, colour())
}

/// The entries of `v[key]` as an array (empty when missing).
pub fn entries<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_pad_and_sanitize() {
        let t = table(
            &["ID", "N"],
            &[
                vec!["a\x1b[31m".into(), "1".into()],
                vec!["bb".into(), "22".into()],
            ],
            false,
        );
        assert_eq!(t, "ID      N\na␛[31m  1\nbb      22\n");
        assert!(table(&["X"], &[], true).starts_with("\x1b[1mX\x1b[0m\n"));
    }
}
