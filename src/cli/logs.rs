//! `zeroclaw logs [-n N] [-f] [--all]`: the daemon's recent log records
//! (`logs/query`), oldest first, one readable line each; with `-f` it then
//! follows new ones (`logs/subscribe`). Subscribing comes first, so nothing
//! logged between the query and the subscription is lost; records the query
//! already showed are skipped by id.
//!
//! `-f` outlives the daemon: when the connection ends it says so once on
//! stderr, reconnects with a backoff (100 ms doubling to 2 s, for as long as
//! it runs) and goes on with the records the daemon logged since, whether the
//! same daemon or a restarted one (told apart by its pid: a new daemon
//! numbers its records afresh). By default the records of every connection's
//! life (`connection/*`, `initialize/*` at INFO and below) are hidden: one
//! command a person types makes three of them. `--all` (`-v`) shows them
//! (docs/operations.md, "logs").

use std::ffi::OsStr;
use std::io::Write;
use std::time::Duration;

use serde_json::{json, Value};

use super::conn::{ClientPeer, Received};
use crate::cli::exit;
use crate::shown::Shown;

/// The most records `logs/query` returns.
const QUERY_MAX: u32 = 2048;
/// The first and the longest wait between reconnection attempts.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(2));
/// OpenTelemetry's severity number of WARN: records at it or above are never hidden.
const WARN_NUMBER: u64 = 13;

/// What `zeroclaw logs` was asked.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// How many records to show first.
    pub limit: u32,
    pub follow: bool,
    /// Show the connection and handshake records too.
    pub all: bool,
}

/// Where the output stands: the daemon it follows and the last record shown.
struct Position {
    pid: Option<u64>,
    last: u64,
}

/// Runs the command; the exit status.
pub async fn run(config_dir: Option<&OsStr>, opts: Options) -> i32 {
    let mut conn = match ClientPeer::open(config_dir).await {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "zeroclaw: {}", Shown::line(&e.message));
            return e.status;
        }
    };
    let mut at = Position { pid: None, last: 0 };
    if let Err(m) = catch_up(&mut conn, opts, &mut at, Some(opts.limit)).await {
        return fail(m);
    }
    if !opts.follow {
        return exit::OK;
    }
    loop {
        let why = match follow(&mut conn, opts, &mut at).await {
            Ok(()) => return exit::OK,
            Err(why) => why,
        };
        notice(&format!("{why}; reconnecting"));
        conn = reconnect(config_dir).await;
        let before = at.pid;
        match catch_up(&mut conn, opts, &mut at, None).await {
            Ok(()) => {
                let pid = at.pid.map_or_else(|| "?".to_owned(), |p| p.to_string());
                let again = if before == at.pid { "the same " } else { "" };
                notice(&format!("reconnected to {again}daemon (pid {pid})"));
            }
            // It went away again at once: the loop reconnects.
            Err(m) => notice(&m),
        }
    }
}

/// An error's message (the daemon's text) on stderr; the exit status.
fn fail(m: String) -> i32 {
    notice(&m);
    exit::RPC_ERROR
}

fn notice(m: &str) {
    let _ = writeln!(std::io::stderr(), "zeroclaw: {}", Shown::line(m));
}

/// Tries until a daemon answers.
async fn reconnect(config_dir: Option<&OsStr>) -> ClientPeer {
    let mut wait = BACKOFF.0;
    loop {
        tokio::time::sleep(wait).await;
        if let Ok(c) = ClientPeer::open(config_dir).await {
            return c;
        }
        wait = (wait * 2).min(BACKOFF.1);
    }
}

/// Subscribes (with `-f`), then prints what the daemon logged that was not
/// shown yet: the last `limit` records at first, after a reconnection all
/// those after `at` (all of a new daemon's).
async fn catch_up(
    conn: &mut ClientPeer,
    opts: Options,
    at: &mut Position,
    limit: Option<u32>,
) -> Result<(), String> {
    let pid = conn
        .call("status", json!({}))
        .await
        .ok()
        .and_then(|s| s.get("server_pid").and_then(Value::as_u64));
    if at.pid.is_some() && pid != at.pid {
        at.last = 0;
    }
    at.pid = pid;
    if opts.follow {
        conn.call("logs/subscribe", json!({}))
            .await
            .map_err(|e| e.message())?;
    }
    // Hidden records do not count: ask for more, show the last `limit`.
    let asked = if opts.all {
        limit.unwrap_or(QUERY_MAX)
    } else {
        QUERY_MAX
    };
    let page = conn
        .call("logs/query", json!({"limit": asked}))
        .await
        .map_err(|e| e.message())?;
    let events = page
        .get("events")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut shown: Vec<&Value> = events
        .iter()
        .rev()
        .filter(|r| record_id(r) > at.last || r.get("id").is_none())
        .filter(|r| opts.all || !is_noise(r))
        .collect();
    if let Some(n) = limit {
        let keep = shown.len().saturating_sub(n as usize);
        shown.drain(..keep);
    }
    at.last = events.iter().map(record_id).fold(at.last, u64::max);
    let mut out = std::io::stdout().lock();
    for record in shown {
        if writeln!(out, "{}", line(record)).is_err() {
            return Ok(());
        }
    }
    let _ = out.flush();
    Ok(())
}

/// Prints new records until the connection ends (`Err`: why) or stdout closes.
async fn follow(conn: &mut ClientPeer, opts: Options, at: &mut Position) -> Result<(), String> {
    loop {
        match conn.next().await {
            Some(Received::Notification { method, params }) if method == "logs/event" => {
                if params.get("id").is_some() && record_id(&params) <= at.last {
                    continue;
                }
                at.last = at.last.max(record_id(&params));
                if !opts.all && is_noise(&params) {
                    continue;
                }
                let mut out = std::io::stdout().lock();
                if writeln!(out, "{}", line(&params))
                    .and_then(|()| out.flush())
                    .is_err()
                {
                    return Ok(());
                }
            }
            Some(Received::Closed(why)) => return Err(format!("the daemon went away: {why}")),
            None => return Err("the daemon went away".into()),
            Some(_) => {}
        }
    }
}

/// A record of a connection's ordinary life: accepted, bound, closed.
fn is_noise(r: &Value) -> bool {
    let category = r.pointer("/event/category").and_then(Value::as_str);
    let severity = r.get("severity_number").and_then(Value::as_u64);
    matches!(category, Some("connection" | "initialize"))
        && severity.is_none_or(|n| n < WARN_NUMBER)
}

fn record_id(r: &Value) -> u64 {
    r.get("id")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// One record as `TIMESTAMP LEVEL category/action message key=value…`.
pub fn line(r: &Value) -> String {
    let s = |p: &str| r.pointer(p).and_then(Value::as_str).unwrap_or_default();
    let mut l = format!(
        "{} {:<5} {}/{}",
        s("/@timestamp"),
        s("/severity_text"),
        s("/event/category"),
        s("/event/action")
    );
    if !s("/message").is_empty() {
        l.push(' ');
        l.push_str(s("/message"));
    }
    for key in ["session_id", "principal_id"] {
        if let Some(v) = r.get(key).and_then(Value::as_str) {
            l.push_str(&format!(" {key}={v}"));
        }
    }
    if let Some(attrs) = r.get("attributes").and_then(Value::as_object) {
        for (k, v) in attrs {
            match v.as_str() {
                Some(text) => l.push_str(&format!(" {k}={text}")),
                None => l.push_str(&format!(" {k}={v}")),
            }
        }
    }
    // An agent's stderr lines are logged: shown like all the daemon's text.
    Shown::line(&l).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readable_line() {
        let r = json!({"id":"42","@timestamp":"2026-01-02T03:04:05Z","severity_number":9,"severity_text":"INFO","target":"t","event":{"category":"session","action":"session_created"},"message":"","session_id":"s-1","attributes":{"peer":"unix:pid=1","n":3}});
        assert_eq!(
            line(&r),
            "2026-01-02T03:04:05Z INFO  session/session_created session_id=s-1 n=3 peer=unix:pid=1"
        );
        assert_eq!(record_id(&r), 42);
        assert!(!is_noise(&r));
    }

    #[test]
    fn connection_life_is_noise_below_warn() {
        let r = |c: &str, n: u64| json!({"severity_number": n, "event": {"category": c, "action": "x"}});
        assert!(is_noise(&r("connection", 9)));
        assert!(is_noise(&r("initialize", 9)));
        assert!(!is_noise(&r("connection", 13)));
        assert!(!is_noise(&r("session", 9)));
    }
}
