//! `zeroclaw agents` (`agents/status`), `zeroclaw config get|set`
//! (`config/get`, `config/set`) and `zeroclaw stop`.
//!
//! The protocol has no stop method, and adding one would let any principal
//! the socket admits end everybody's daemon. `stop` instead signals the
//! daemon process itself, as `kill` would: the pid and uid come from the
//! kernel (the connected socket's peer credentials, not from what the
//! daemon says, which must agree with its `status`), and the signal is sent
//! only when the daemon runs as the caller's own effective uid, so stopping
//! stays the right of its owner (docs/decisions.md, "Everyday commands").

use std::ffi::OsStr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{call_and_finish, fail, listing};
use crate::cli::exit;
use crate::cli::field::field_text;
use crate::shown::Shown;

/// How long `stop` waits for the endpoint to go away.
pub const STOP_PATIENCE: Duration = Duration::from_secs(10);

/// `zeroclaw agents [--json]`.
pub async fn agents(config_dir: Option<&OsStr>, json: bool) -> i32 {
    call_and_finish(config_dir, json, "agents/status", json!({}), agents_text).await
}

fn agents_text(v: &Value) -> String {
    let columns = [
        ("ALIAS", "alias"),
        ("BACKEND", "backend"),
        ("LIVE", "live_sessions"),
        ("PERSISTED", "persisted_sessions"),
        ("DEFAULT", "default_mark"),
    ];
    // The default agent (what `chat` and `run` use without `--agent`) is marked `*`.
    let mut marked = v.clone();
    if let Some(list) = marked.get_mut("agents").and_then(Value::as_array_mut) {
        for a in list.iter_mut().filter_map(Value::as_object_mut) {
            let mark = a.get("default").and_then(Value::as_bool) == Some(true);
            a.insert("default_mark".into(), json!(if mark { "*" } else { "" }));
        }
    }
    listing(&marked, "agents", &columns, "no agents you may use")
}

/// `zeroclaw config get PROP [--json]`: the value; a string as it is,
/// anything else as JSON.
pub async fn config_get(config_dir: Option<&OsStr>, prop: &str, json: bool) -> i32 {
    call_and_finish(config_dir, json, "config/get", json!({"prop": prop}), |v| {
        format!("{}\n", Shown::text(&field_text(v, "value")))
    })
    .await
}

/// `VALUE` of `config set`: JSON when it parses as JSON, else the string
/// itself (`8` is a number, `true` a bool, `hello` and `"8"` strings).
pub fn config_value(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.to_owned()))
}

/// `zeroclaw config set PROP VALUE [--json]`.
pub async fn config_set(config_dir: Option<&OsStr>, prop: &str, value: &str, json: bool) -> i32 {
    let params = json!({"prop": prop, "value": config_value(value)});
    call_and_finish(config_dir, json, "config/set", params, |_| {
        format!("set {}\n", Shown::line(prop))
    })
    .await
}

/// `zeroclaw stop [--json]`: signals the daemon at the endpoint (SIGTERM,
/// a graceful shutdown) and waits until the endpoint is gone, at most
/// [`STOP_PATIENCE`]. `--json` prints `{"stopped":true,"pid":N}`.
pub async fn stop(config_dir: Option<&OsStr>, json: bool) -> i32 {
    let name = match crate::cli::conn::endpoint_name(config_dir) {
        Ok(n) => n,
        Err(e) => return fail(&e.message, e.status),
    };
    let stream = match crate::endpoint::connect(&name).await {
        Ok(s) => s,
        Err(e) => {
            return fail(
                &format!("no daemon answers at {name} ({e})"),
                exit::NO_DAEMON,
            )
        }
    };
    let peer = crate::endpoint::PeerInfo::of(&stream);
    drop(stream);
    // The socket's peer is whoever listened: under socket activation the
    // service manager. Only a pid the daemon also names as its own is ours
    // to signal.
    let server_pid = match super::connect(config_dir).await {
        Ok(mut conn) => match conn.call("status", json!({})).await {
            Ok(v) => v.get("server_pid").and_then(Value::as_u64),
            Err(e) => return fail(&e.message(), exit::RPC_ERROR),
        },
        Err(status) => return status,
    };
    if peer.pid.map(u64::from) != server_pid {
        let why = format!(
            "the socket at {name} was passed to the daemon (pid {}) by another process (pid {}); stop the daemon through its service manager (systemctl --user stop zeroclaw)",
            server_pid.map_or("?".to_owned(), |p| p.to_string()),
            peer.pid.map_or("?".to_owned(), |p| p.to_string()),
        );
        return fail(&why, exit::RPC_ERROR);
    }
    let pid = match signal_own(&peer) {
        Ok(pid) => pid,
        Err(why) => return fail(&why, exit::RPC_ERROR),
    };
    let deadline = Instant::now() + STOP_PATIENCE;
    while crate::endpoint::connect(&name).await.is_ok() {
        if Instant::now() >= deadline {
            let why = format!(
                "the daemon (pid {pid}) still answers at {name} after {} s",
                STOP_PATIENCE.as_secs()
            );
            return fail(&why, exit::RPC_ERROR);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if json {
        println!("{}", json!({"stopped": true, "pid": pid}));
    } else {
        println!("stopped the daemon (pid {pid})");
    }
    exit::OK
}

/// Sends SIGTERM to the peer when it runs as our effective uid; its pid.
#[cfg(unix)]
fn signal_own(peer: &crate::endpoint::PeerInfo) -> Result<u32, String> {
    let (Some(uid), Some(pid)) = (peer.uid, peer.pid) else {
        return Err("the daemon's process is unknown (no peer credentials)".to_owned());
    };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if uid != me {
        return Err(format!(
            "the daemon (pid {pid}) runs as uid {uid}, not as you (uid {me}); stop it as its owner"
        ));
    }
    let Ok(raw) = libc::pid_t::try_from(pid) else {
        return Err(format!("pid {pid} out of range"));
    };
    // SAFETY: kill with a positive pid and a valid signal number.
    if unsafe { libc::kill(raw, libc::SIGTERM) } != 0 {
        return Err(format!(
            "cannot signal the daemon (pid {pid}): {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(pid)
}

/// Windows has no SIGTERM; stop the daemon's service or press Ctrl+C in it.
#[cfg(not(unix))]
fn signal_own(_peer: &crate::endpoint::PeerInfo) -> Result<u32, String> {
    Err("zeroclaw stop is Unix-only; press Ctrl+C in the daemon's window".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_json_or_strings() {
        assert_eq!(config_value("8"), json!(8));
        assert_eq!(config_value("true"), json!(true));
        assert_eq!(config_value("[\"a\"]"), json!(["a"]));
        assert_eq!(config_value("\"8\""), json!("8"));
        assert_eq!(config_value("hello world"), json!("hello world"));
        assert_eq!(config_value(""), json!(""));
    }
}
