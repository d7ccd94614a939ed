//! The one-shot client commands (§13): `zeroclaw rpc METHOD [PARAMS]`,
//! `zeroclaw status` and `zeroclaw pair` connect, send one request, stream
//! what the daemon says until its answer arrives and print that answer.

use std::ffi::OsStr;
use std::time::Duration;

use serde_json::{json, Value};

use super::answers::Answers;
use super::conn::{CallError, ClientPeer};
use super::exit::{self, CommandFailure};
use super::field::field_text;
use crate::shown::{json as shown_json, Shown};

/// What a one-shot command got: the daemon's result or error object, or
/// a failure that ends the command.
pub type OneShot = Result<Result<Value, Value>, CommandFailure>;

/// A call's outcome as a [`OneShot`]: the daemon's error is an answer, a
/// lost connection a failure.
pub fn one_shot(r: Result<Value, CallError>) -> OneShot {
    match r {
        Ok(v) => Ok(Ok(v)),
        Err(CallError::Rpc(e)) => Ok(Err(e)),
        Err(lost) => Err(CommandFailure::new(exit::RPC_ERROR, lost.message())),
    }
}

/// `zeroclaw rpc METHOD [PARAMS]`: result on stdout, everything else on stderr.
pub async fn rpc(
    config_dir: Option<&OsStr>,
    method: &str,
    params: Value,
    answers: Answers,
    timeout: Option<Duration>,
) -> i32 {
    let work = async {
        let mut conn = ClientPeer::open(config_dir).await?;
        let r = conn
            .call_answering(method, params, &answers, |line| {
                eprintln!("{}", shown_json(line));
            })
            .await;
        one_shot(r)
    };
    let outcome = match timeout {
        Some(t) => match tokio::time::timeout(t, work).await {
            Ok(r) => r,
            Err(_) => Err(CommandFailure::new(
                exit::RPC_ERROR,
                format!("timed out after {} s", t.as_secs_f64()),
            )),
        },
        None => work.await,
    };
    report(outcome)
}

/// Prints an outcome the way every client command does (§13): the
/// result on stdout, an error object or a failure on stderr; the exit status.
/// JSON goes out through [`crate::shown::json`] (the same value, no byte a
/// terminal would act on).
pub fn report(outcome: OneShot) -> i32 {
    match outcome {
        Ok(Ok(v)) => {
            println!("{}", shown_json(&v.to_string()));
            exit::OK
        }
        Ok(Err(e)) => {
            eprintln!("{}", shown_json(&e.to_string()));
            exit::RPC_ERROR
        }
        Err(f) => {
            eprintln!("zeroclaw: {}", Shown::line(&f.message));
            f.status
        }
    }
}

/// Connects and calls `method` without params (no daemon requests expected).
async fn call_once(config_dir: Option<&OsStr>, method: &str) -> OneShot {
    let mut conn = ClientPeer::open(config_dir).await?;
    one_shot(
        conn.call_answering(method, json!({}), &Answers::default(), |_| {})
            .await,
    )
}

/// `zeroclaw status [--json]`.
pub async fn status(config_dir: Option<&OsStr>, raw: bool) -> i32 {
    match call_once(config_dir, "status").await {
        Ok(Ok(v)) if !raw => {
            print!("{}", Shown::text(&render_status(&v)));
            exit::OK
        }
        other => report(other),
    }
}

/// `zeroclaw pair`: `pairing/code`, printed with how to use it.
pub async fn pair(config_dir: Option<&OsStr>) -> i32 {
    match call_once(config_dir, "pairing/code").await {
        Ok(Ok(v)) => {
            println!("{}", field_text(&v, "code"));
            if v["redeemable"] != Value::Bool(true) {
                eprintln!("zeroclaw: note: the code is not redeemable now: the gateway is disabled or gateway.require_pairing is false");
            } else {
                eprintln!("Enter it in the dashboard, or: curl -X POST -H 'X-Pairing-Code: <code>' http://<gateway>/pair (single use)");
            }
            exit::OK
        }
        other => report(other),
    }
}

/// The readable form of a `status` result.
fn render_status(v: &Value) -> String {
    let s = |k: &str| field_text(v, k);
    let ids: Vec<String> = v
        .get("session_ids")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let sessions = if ids.is_empty() {
        s("active_sessions")
    } else {
        format!("{} ({})", s("active_sessions"), ids.join(", "))
    };
    format!(
        "zeroclaw daemon {} (protocol {}), pid {}, up {} s\n\
         principal:    {}\n\
         endpoint:     {}\n\
         config file:  {}\n\
         data dir:     {}\n\
         connections:  {}\n\
         live sessions: {}\n\
         ephemeral:    {}\n",
        s("server_version"),
        s("protocol_version"),
        s("server_pid"),
        s("uptime_secs"),
        s("principal_id"),
        s("local_ipc_endpoint"),
        s("config_file"),
        s("data_dir"),
        s("connections"),
        sessions,
        if v.get("ephemeral") == Some(&Value::Bool(true)) {
            "yes"
        } else {
            "no"
        },
    )
}
