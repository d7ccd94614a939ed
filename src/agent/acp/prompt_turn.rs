//! One turn of an ACP agent: `session/prompt`, then every message of the
//! agent until its answer, in the order the agent sent them.
//!
//! Updates go to the sink (which commits then notifies: each await is the
//! backpressure that reaches the agent's pipe); permission, `fs/*` and (when
//! enabled) `terminal/*` requests are answered in line; every other request
//! gets a JSON-RPC error. The turn's terminals are killed and released when
//! it ends, whatever its outcome.
//! Our cancel sends `session/cancel` once and keeps reading until the agent
//! answers (the runtime aborts the turn after its grace if it never does,
//! which stops the process). A connection that broke is never reused.

use std::time::Instant;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::host::Host;
use super::incoming::{FromAgent, WireError};
use super::mapping::{self, Tools};
use super::permission::{self, Ask};
use super::ready::ready_host;
use super::schema::PromptResponse;
use super::terminal::{self, Terminals};
use super::wire;
use super::{fs, hosts::AcpHosts, prompt};
use crate::agent::coalesce::Coalesce;
use crate::agent::sink::{EventSink, SinkClosed};
use crate::agent::{TurnInput, TurnOutcome, SINK_CLOSED_MESSAGE};
use crate::config::agent_spec::FsAccess;

/// Most messages read without waiting in a row (see `prompt`).
const MAX_BURST: u32 = 256;

/// JSON-RPC "method not found".
const METHOD_NOT_FOUND: i64 = -32601;

/// Runs one turn on the session's agent process (started if needed).
pub async fn run<S: EventSink>(
    hosts: &std::sync::Arc<AcpHosts>,
    input: &TurnInput<'_>,
    sink: &mut S,
    cancel: &CancellationToken,
) -> TurnOutcome {
    let deadline = input.deadline;
    let ready = tokio::select! {
        r = ready_host(hosts, input, deadline) => r,
        () = cancel.cancelled() => return TurnOutcome::Cancelled,
    };
    let mut host = match ready {
        Ok(host) => host,
        Err(why) => {
            tracing::warn!(event = "acp_agent_unavailable", session_id = %input.session_id, reason = %why);
            return TurnOutcome::Failed(why);
        }
    };
    let mut terminals = Terminals::default();
    let outcome = prompt(&mut host, input, sink, cancel, deadline, &mut terminals).await;
    terminals.close_all().await;
    if let TurnOutcome::Failed(why) = &outcome {
        tracing::warn!(event = "acp_turn_failed", session_id = %input.session_id, pid = ?host.pid, reason = %why);
    }
    hosts.put_back(input.session_id, host);
    outcome
}

async fn prompt<S: EventSink>(
    host: &mut Host,
    input: &TurnInput<'_>,
    sink: &mut S,
    cancel: &CancellationToken,
    deadline: Instant,
    terminals: &mut Terminals,
) -> TurnOutcome {
    let session = host.agent_session.clone().unwrap_or_default();
    let params = json!({"sessionId": session, "prompt": prompt::blocks(input.prompt)});
    let id = match host
        .start_request("session/prompt", &params, deadline)
        .await
    {
        Ok(id) => id,
        Err(why) => return TurnOutcome::Failed(why),
    };
    let mut tools = Tools::default();
    let mut always = input.always_allowed.clone();
    let mut cancel_sent = false;
    let mut pending = Coalesce::default();
    // Messages taken without waiting since the last wait: bounded so a
    // flood still lets cancel and the deadline be seen.
    let mut burst = 0;
    loop {
        let ready = if burst < MAX_BURST && !pending.full() {
            host.ready()
        } else {
            None
        };
        if ready.is_some() {
            burst += 1;
        } else {
            burst = 0;
            if let Err(end) = flush(&mut pending, sink, host).await {
                return end;
            }
        }
        let next = if let Some(m) = ready {
            Ok(m)
        } else {
            tokio::select! {
            biased;
            () = cancel.cancelled(), if !cancel_sent => {
                cancel_sent = true;
                let line = wire::notification("session/cancel", &json!({"sessionId": session}));
                if !host.try_send(line) {
                    host.mark_broken("the ACP agent does not read its stdin");
                    return TurnOutcome::Cancelled;
                }
                continue;
            }
            () = tokio::time::sleep_until(deadline.into()) => return timed_out(host, input),
            m = host.recv() => m,
            }
        };
        let message = match next {
            Ok(m) => m,
            Err(_) if cancel_sent => return TurnOutcome::Cancelled,
            Err(why) => return TurnOutcome::Failed(why),
        };
        match message {
            FromAgent::Response { id: got, result } if got == id => {
                if let Err(end) = flush(&mut pending, sink, host).await {
                    return end;
                }
                let refused = result.is_err();
                return match stop_outcome(result, cancel_sent) {
                    // Its reason may be on stderr only.
                    TurnOutcome::Failed(m) if refused => {
                        TurnOutcome::Failed(super::reason::with_stderr(host, m).await)
                    }
                    outcome => outcome,
                };
            }
            FromAgent::Response { .. } => {}
            FromAgent::Chunk(chunk) => {
                let added = mapping::chunk(&chunk, &session, &mut pending, sink).await;
                if added.is_err() {
                    return sink_closed(host);
                }
            }
            FromAgent::Notification { method, params } if method == "session/update" => {
                let applied =
                    mapping::apply(params, &session, &mut tools, &mut pending, sink).await;
                if applied.is_err() {
                    return sink_closed(host);
                }
            }
            FromAgent::Notification { .. } => {}
            FromAgent::Request {
                id: rid,
                method,
                params,
            } => {
                if let Err(end) = flush(&mut pending, sink, host).await {
                    return end;
                }
                // Served within the turn's deadline, whatever it waits on
                // (an unanswered approval, a slow disk): at the deadline the
                // turn ends as a timeout, and no late answer goes out.
                let serving = async {
                    Ok(match method.as_str() {
                        "session/request_permission" => {
                            let ask = Ask {
                                tools: &tools,
                                always: &mut always,
                                default: input.settings.acp.permission_default,
                                cancel,
                            };
                            match permission::answer(params, ask, sink).await? {
                                Ok(result) => wire::response(&rid, &result),
                                Err(text) => wire::error_response(&rid, -32602, &text),
                            }
                        }
                        "fs/read_text_file" | "fs/write_text_file"
                            if input.settings.acp.fs == FsAccess::Workspace =>
                        {
                            match fs::serve(&method, &params, input.cwd).await {
                                Ok(result) => wire::response(&rid, &result),
                                Err((code, text)) => wire::error_response(&rid, code, &text),
                            }
                        }
                        m if m.starts_with("terminal/") && input.settings.acp.terminal => {
                            let turn = terminal::Turn {
                                cwd: input.cwd,
                                env: &input.settings.env,
                                cancel,
                                deadline,
                            };
                            match terminals.serve(m, &params, turn).await {
                                Ok(result) => wire::response(&rid, &result),
                                Err((code, text)) => wire::error_response(&rid, code, &text),
                            }
                        }
                        other => {
                            let text = format!("{other} is not served by this client");
                            wire::error_response(&rid, METHOD_NOT_FOUND, &text)
                        }
                    })
                };
                let reply = tokio::select! {
                    biased;
                    () = tokio::time::sleep_until(deadline.into()) => return timed_out(host, input),
                    served = serving => match served {
                        Ok(reply) => reply,
                        Err(SinkClosed) => return sink_closed(host),
                    },
                };
                if let Err(why) = host.send(reply, deadline).await {
                    return TurnOutcome::Failed(why);
                }
            }
        }
    }
}

/// The end of a turn past its deadline (the agent is stopped: its turn is
/// still running).
fn timed_out(host: &mut Host, input: &TurnInput<'_>) -> TurnOutcome {
    host.mark_broken("turn timed out");
    TurnOutcome::Failed(format!(
        "the ACP agent did not finish the turn within {} s",
        input.settings.timeout_secs
    ))
}

/// Sends the coalesced chunks; a closed sink ends the turn.
async fn flush<S: EventSink>(
    pending: &mut Coalesce,
    sink: &mut S,
    host: &mut Host,
) -> Result<(), TurnOutcome> {
    if pending.flush(sink).await.is_err() {
        return Err(sink_closed(host));
    }
    Ok(())
}

/// The end of a turn whose events can no longer be delivered (the agent's
/// connection is not reused: its turn is still running).
fn sink_closed(host: &mut Host) -> TurnOutcome {
    host.mark_broken(SINK_CLOSED_MESSAGE);
    TurnOutcome::Failed(SINK_CLOSED_MESSAGE.to_owned())
}

/// The answer to `session/prompt` as our outcome (docs/agents.md).
fn stop_outcome(result: Result<Value, WireError>, cancel_sent: bool) -> TurnOutcome {
    if cancel_sent {
        return TurnOutcome::Cancelled;
    }
    let answer = match result {
        Ok(v) => v,
        Err(e) => {
            return TurnOutcome::Failed(format!(
                "the ACP agent answered session/prompt with error {}: {}",
                e.code, e.message
            ))
        }
    };
    match serde_json::from_value::<PromptResponse>(answer) {
        Ok(r) => match r.stop_reason.as_str() {
            "cancelled" => TurnOutcome::Cancelled,
            "refusal" => {
                TurnOutcome::Failed("the ACP agent refused the prompt (stop reason refusal)".into())
            }
            // The turn's output stands.
            "end_turn" | "max_tokens" | "max_turn_requests" => TurnOutcome::Completed,
            other => TurnOutcome::Failed(format!(
                "the ACP agent stopped with unknown stop reason {other:?}"
            )),
        },
        Err(e) => TurnOutcome::Failed(format!(
            "the ACP agent's session/prompt answer is invalid: {e}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reasons_map_onto_outcomes() {
        let of = |r: &str| stop_outcome(Ok(json!({"stopReason": r})), false);
        assert_eq!(of("end_turn"), TurnOutcome::Completed);
        assert_eq!(of("max_tokens"), TurnOutcome::Completed);
        assert_eq!(of("max_turn_requests"), TurnOutcome::Completed);
        assert_eq!(of("cancelled"), TurnOutcome::Cancelled);
        assert!(matches!(of("refusal"), TurnOutcome::Failed(_)));
        assert!(matches!(of("bogus"), TurnOutcome::Failed(_)));
        assert_eq!(
            stop_outcome(Ok(json!({"stopReason": "end_turn"})), true),
            TurnOutcome::Cancelled
        );
        let e = WireError {
            code: -32000,
            message: "boom".into(),
        };
        assert_eq!(
            stop_outcome(Err(e), false),
            TurnOutcome::Failed(
                "the ACP agent answered session/prompt with error -32000: boom".into()
            )
        );
    }
}
