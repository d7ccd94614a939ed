//! `zeroclaw logs [-n N] [-f]`: the daemon's recent log records
//! (`logs/query`), oldest first, one readable line each; with `-f` it then
//! follows new ones (`logs/subscribe`) until the daemon goes away.
//! Subscribing comes first, so nothing logged between the query and the
//! subscription is lost; records the query already showed are skipped by id.

use std::ffi::OsStr;
use std::io::Write;

use serde_json::{json, Value};

use super::conn::{Conn, Incoming};
use crate::client::exit;
use crate::shown::Shown;

/// Runs the command; the exit status.
pub async fn run(config_dir: Option<&OsStr>, limit: u32, follow: bool) -> i32 {
    let mut conn = match Conn::open(config_dir).await {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "zeroclaw: {}", Shown::line(&e.message));
            return e.status;
        }
    };
    let fail = |m: String| {
        // An error's message is the daemon's text.
        let _ = writeln!(std::io::stderr(), "zeroclaw: {}", Shown::line(&m));
        exit::RPC_ERROR
    };
    if follow {
        if let Err(e) = conn.call("logs/subscribe", json!({})).await {
            return fail(e.message());
        }
    }
    let page = match conn.call("logs/query", json!({"limit": limit})).await {
        Ok(p) => p,
        Err(e) => return fail(e.message()),
    };
    let mut out = std::io::stdout().lock();
    let mut last = 0u64;
    let events = page
        .get("events")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for record in events.iter().rev() {
        last = last.max(record_id(record));
        if writeln!(out, "{}", line(record)).is_err() {
            return exit::OK;
        }
    }
    let _ = out.flush();
    if !follow {
        return exit::OK;
    }
    drop(out);
    loop {
        match conn.next().await {
            Some(Incoming::Notification { method, params }) if method == "logs/event" => {
                if record_id(&params) <= last && params.get("id").is_some() {
                    continue;
                }
                let mut out = std::io::stdout().lock();
                if writeln!(out, "{}", line(&params))
                    .and_then(|()| out.flush())
                    .is_err()
                {
                    return exit::OK;
                }
            }
            Some(Incoming::Closed(why)) => return fail(format!("the daemon went away: {why}")),
            None => return fail("the daemon went away".into()),
            Some(_) => {}
        }
    }
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
    }
}
