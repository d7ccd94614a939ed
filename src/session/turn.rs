//! One prompt, from the queue to its answer (§8.4, §9.3, §9.5, §9.8).
//!
//! The turn runs in a task of its own, so it completes and is persisted
//! even when the prompting connection goes away. Its order is fixed:
//! recovery of a leftover checkpoint, compaction (and its notice), the
//! begin transaction, the agent, finalization, `turn_complete`, the answer.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::emitter::keep_answer_prefix;
use super::live::{context_bytes, message_bytes, Ending, Session, TurnSignals};
use super::sink::{TurnSink, Waits, MAX_TURN_OUTPUT_BYTES};
use super::update::{bounded, notify_session, Completion, Event, Update, MAX_CONTENT_BYTES};
use super::{new_uuid, ChatMode, Sessions};
use crate::agent::{
    self, AcpHosts, AcpSettings, AgentSettings, Backend, CompactionRequest, ContextMessage,
    InputMode, Kind, OpenAiSettings, PermissionDefault, Role, TurnInput, TurnOutcome,
};
use crate::config::{AgentConfig, Config};
use crate::context::Conn;
use crate::error::{InternalReason, RpcError};
use crate::jsonrpc::{error_frame, Payload};
use crate::limits::SHUTDOWN_GRACE;
use crate::live_config::LiveConfig;
use crate::request::ReplyTo;
use crate::store::{provider_safe, Store};

/// After a soft cancel, how long the backend may take to stop.
pub const CANCEL_GRACE: Duration = SHUTDOWN_GRACE;

/// The result of `session/prompt`.
#[derive(Debug, Serialize)]
pub struct PromptResult {
    pub session_id: String,
    pub stop_reason: &'static str,
    pub content: String,
}

/// How a prompt ended, for the handler.
#[derive(Debug)]
pub struct Answered {
    pub result: Result<PromptResult, RpcError>,
    /// `turn_complete` was sent.
    pub turn_complete_sent: bool,
    /// The answer frame was already written by the turn (see [`run_prompt`]).
    pub answer_sent: bool,
    /// The text the client was sent during the turn.
    pub content: String,
}

impl Answered {
    fn early(e: RpcError) -> Self {
        Self {
            result: Err(e),
            turn_complete_sent: false,
            answer_sent: false,
            content: String::new(),
        }
    }
}

/// Queues `prompt` on `session` and runs it. With `reply_to` (the request's
/// id), the turn writes its own answer before the next queued turn may
/// start, so a turn's updates, its `turn_complete` and its answer are never
/// overtaken by the next turn's (§8.4 step 4).
pub async fn run_prompt(
    sessions: &Sessions,
    config: &LiveConfig,
    session: Arc<Session>,
    conn: Conn,
    prompt: String,
    reply_to: Option<ReplyTo>,
) -> Answered {
    // Over the daemon's memory budget no new turn starts (issue 13).
    if let Err(e) = crate::memory::budget().check() {
        return Answered::early(e.into());
    }
    let permit = match session.enqueue().await {
        Ok(p) => p,
        Err(e) => return Answered::early(e),
    };
    // A turn starts only if this incarnation is still live and not ending.
    let signals = {
        let _lock = sessions.locks.lock(&session.id).await;
        let live = sessions
            .get(&session.id)
            .is_some_and(|s| Arc::ptr_eq(&s, &session));
        match session.ending() {
            None if live => session.start_turn(conn.clone()),
            ending => return Answered::early(ending.unwrap_or(Ending::Closed).error()),
        }
    };
    // The configuration in effect when the turn starts (after the turns
    // queued before it), and the store: all the turn's task needs.
    let (config, store) = (config.current(), sessions.store.clone());
    let hosts = sessions.acp_hosts.clone();
    let task = tokio::spawn({
        let session = session.clone();
        async move {
            let runtime = (&store, &*config, &hosts);
            let mut out = execute(runtime, &session, &conn, &prompt, &signals).await;
            if let Some(ReplyTo { id, hold }) = reply_to {
                let frame = match &out.result {
                    Ok(r) => Payload::new(r, Default::default()).map(|p| p.into_frame(id.as_str())),
                    Err(e) => Ok(error_frame(e, Some(id.as_str()))),
                };
                if let Ok(frame) = frame {
                    // The request is answered: its in-flight slot is free
                    // before the client can read the answer and send again.
                    hold.release();
                    let _ = conn.outbound.send_or_cancelled(frame, &signals.soft).await;
                    out.answer_sent = true;
                }
            }
            session.end_turn();
            drop(permit);
            if out.content.len() > RELEASE_AFTER_BYTES {
                crate::memory::release_freed();
            }
            out
        }
    });
    match task.await {
        Ok(out) => out,
        Err(_) => Answered::early(RpcError::internal("the turn failed unexpectedly", None)),
    }
}

fn settings_of(agent: &AgentConfig, config: &Config) -> (Backend, AgentSettings) {
    let backend = match agent.backend.as_deref() {
        Some("command") => Backend::Command,
        Some("acp") => Backend::Acp,
        Some("openai") => Backend::OpenAi,
        _ => Backend::Echo,
    };
    let settings = AgentSettings {
        chunk_chars: agent.chunk_chars,
        chunk_delay_ms: u64::from(agent.chunk_delay_ms),
        command: agent.command.clone().unwrap_or_default(),
        input: if agent.input == "context_json" {
            InputMode::ContextJson
        } else {
            InputMode::Prompt
        },
        env: agent.env.clone(),
        withheld: if backend == Backend::Command {
            agent::secret_names(config)
        } else {
            Default::default()
        },
        timeout_secs: u64::from(agent.timeout_secs),
        acp: AcpSettings {
            load_session: agent.load_session != "never",
            permission_default: if agent.permission_default == "allow_once" {
                PermissionDefault::AllowOnce
            } else {
                PermissionDefault::Reject
            },
            fs: agent.fs == "workspace",
            terminal: agent.terminal,
        },
        openai: OpenAiSettings::from_config(agent),
    };
    (backend, settings)
}

async fn execute(
    (store, config, hosts): (&Arc<Store>, &Config, &Arc<AcpHosts>),
    session: &Arc<Session>,
    conn: &Conn,
    prompt: &str,
    signals: &TurnSignals,
) -> Answered {
    let not_sent = Answered::early;
    let Some(agent) = config.agents.get(&session.agent_alias) else {
        return not_sent(RpcError::internal(
            format!("agent {} is not configured", session.agent_alias),
            Some(InternalReason::AgentFailed),
        ));
    };
    let (backend, settings) = settings_of(agent, config);
    let durable_row = session.durable_row;

    // 1. A checkpoint left by a failed append or finalization is recovered first.
    if let (Some(row), true) = (durable_row, session.needs_recovery()) {
        let rebuilt = async {
            store.recover(row).await?;
            store.rebuild_context(row).await
        };
        match rebuilt.await {
            Ok(ctx) => {
                session.set_context(ctx);
                session.set_needs_recovery(false);
            }
            Err(e) => return not_sent(e.into()),
        }
    }

    // 2. Compaction, and its notice, before the turn begins.
    let forced = if backend == Backend::Echo {
        agent::echo_compaction_request(prompt)
    } else {
        CompactionRequest::None
    };
    compact(store, session, (conn, &signals.soft), agent, forced).await;

    // 3. The begin transaction.
    let turn_id = new_uuid();
    if let Some(row) = durable_row {
        if let Err(e) = store.turn_begin(row, &turn_id, prompt).await {
            return not_sent(e.into());
        }
    }

    // 4. The agent.
    // One deadline for the whole turn: the backend's own waits and the
    // approvals and questions the sink waits on all end by it.
    let deadline = std::time::Instant::now() + Duration::from_secs(settings.timeout_secs);
    let waits = Waits {
        approval: Duration::from_secs(u64::from(config.daemon.approval_timeout_secs)),
        ask: Duration::from_secs(u64::from(config.daemon.ask_timeout_secs)),
        deadline,
    };
    let mut sink = TurnSink::new(
        session.clone(),
        conn.clone(),
        waits,
        durable_row.map(|r| (store.clone(), r)),
        signals.clone(),
    );
    let context = session.context();
    let always_allowed = session.always_allowed();
    let input = TurnInput {
        session_id: &session.id,
        turn_id: &turn_id,
        agent_alias: &session.agent_alias,
        cwd: &session.workspace_dir,
        prompt,
        system_prompt: &agent.system_prompt,
        context: &context,
        settings: &settings,
        always_allowed: &always_allowed,
        acp_hosts: Some(hosts),
        deadline,
    };
    let outcome = with_cancellation(
        agent::run_turn(backend, input, &mut sink, &signals.soft),
        signals,
    )
    .await;
    // The turn's borrow of the context ends here, so extending it below
    // does not copy it.
    drop(context);
    let (mut content, emitted) = sink.finish().await;
    let outcome = if sink.overflowed() {
        TurnOutcome::Failed(format!(
            "the turn's output exceeds {MAX_TURN_OUTPUT_BYTES} bytes"
        ))
    } else {
        outcome
    };

    // Killed or deleted: no finalization, no turn_complete (§9.9).
    if signals.hard.is_cancelled() {
        return Answered {
            content,
            ..not_sent(session.ending().unwrap_or(Ending::Killed).error())
        };
    }

    // 5. Persist the outcome.
    let failure_message = outcome.failure_message();
    let failure = failure_message.as_deref();
    let persisted = match (emitted, durable_row) {
        (Err(e), _) => Err(e),
        (Ok(()), Some(row)) => store.turn_finalize(row, failure).await.map(provider_safe),
        (Ok(()), None) => {
            let reply = (!content.is_empty()).then_some(content.as_str());
            match store.chat_append_turn(&session.id, prompt, reply).await {
                Ok(()) => {
                    let mut added = vec![ContextMessage::text(Role::User, prompt)];
                    if !content.is_empty() {
                        // The reply moves into the context; the answer keeps
                        // only what it shows (as a durable turn's emitter does).
                        let mut shown = String::new();
                        keep_answer_prefix(&mut shown, &content);
                        let reply = std::mem::replace(&mut content, shown);
                        added.push(ContextMessage::text(Role::Assistant, reply));
                    }
                    Ok(added)
                }
                Err(e) => Err(e),
            }
        }
    };
    let added = match persisted {
        Ok(added) => added,
        Err(e) => {
            if durable_row.is_some() {
                session.set_needs_recovery(true);
            }
            let err = RpcError::from(e);
            complete(
                conn,
                session,
                (Completion::Failed, &content, Some(&err.to_string())),
                &signals.soft,
            )
            .await;
            return Answered {
                result: Err(err),
                turn_complete_sent: true,
                answer_sent: false,
                content,
            };
        }
    };
    session.extend_context(added);

    // 6. turn_complete, then the answer.
    let (result, out) = match outcome {
        TurnOutcome::Completed => (Ok("end_turn"), Completion::Completed),
        TurnOutcome::Cancelled => (Ok("cancelled"), Completion::Cancelled),
        TurnOutcome::Failed(m) => (
            Err(RpcError::internal(m, Some(InternalReason::AgentFailed))),
            Completion::Failed,
        ),
        TurnOutcome::ProviderFailed(f) => (Err(RpcError::Provider(f)), Completion::Failed),
    };
    let failure_text = result.as_ref().err().map(ToString::to_string);
    let reason = match (&failure_text, out) {
        (Some(m), _) => Some(m.as_str()),
        (_, Completion::Cancelled) => Some("cancelled"),
        _ => None,
    };
    complete(conn, session, (out, &content, reason), &signals.soft).await;
    let result = match result {
        Ok(stop_reason) => Ok(PromptResult {
            session_id: session.id.clone(),
            stop_reason,
            content: bounded(&content, MAX_CONTENT_BYTES).into_owned(),
        }),
        Err(e) => Err(e),
    };
    Answered {
        result,
        turn_complete_sent: true,
        answer_sent: false,
        content,
    }
}

/// Runs the agent until it ends; a hard cancel aborts it at once, a soft
/// cancel gives it [`CANCEL_GRACE`] to stop before it is aborted.
async fn with_cancellation(
    agent: impl Future<Output = TurnOutcome>,
    signals: &TurnSignals,
) -> TurnOutcome {
    tokio::select! {
        outcome = agent => outcome,
        _ = signals.hard.cancelled() => TurnOutcome::Cancelled,
        _ = async {
            signals.soft.cancelled().await;
            tokio::time::sleep(CANCEL_GRACE).await;
        } => TurnOutcome::Cancelled,
    }
}

/// Sends `turn_complete` to the turn's connection.
pub async fn complete(
    conn: &Conn,
    session: &Session,
    (outcome, content, reason): (Completion, &str, Option<&str>),
    cancel: &CancellationToken,
) {
    let event = Event::TurnComplete {
        outcome,
        content,
        reason,
    };
    send_event(conn, session, event, cancel).await;
}

/// Sends one `session/update` of `session` to `conn`.
async fn send_event(conn: &Conn, session: &Session, event: Event<'_>, cancel: &CancellationToken) {
    let update = Update {
        session_id: &session.id,
        event,
    };
    notify_session(session, conn, &update, cancel).await;
}

/// A turn that produced more text than this hands freed heap back to the
/// kernel when it ends (`crate::memory::release_freed`).
const RELEASE_AFTER_BYTES: usize = 1024 * 1024;

/// Bytes of retained context past which compaction is due whatever the
/// message count (issue 13 item 1; docs/decisions.md): with
/// [`MAX_TURN_OUTPUT_BYTES`] per turn, a session's context, its snapshot and
/// its rehydration stay under ~96 MiB.
pub const MAX_RETAINED_CONTEXT_BYTES: usize = 64 * 1024 * 1024;

/// Auto or forced compaction (§9.5). A failed snapshot write discards it silently.
async fn compact(
    store: &Store,
    session: &Session,
    (conn, cancel): (&Conn, &CancellationToken),
    agent: &AgentConfig,
    forced: CompactionRequest,
) {
    let context = session.context();
    let max = agent.context_max_messages as usize;
    let keep = agent.compact_keep_messages as usize;
    let over_bytes = context_bytes(&context) > MAX_RETAINED_CONTEXT_BYTES;
    let due = context.len() + 1 > max || over_bytes;
    // Drop the oldest messages past `keep`, and more while the rest is over
    // the byte target (the newest message always stays).
    let mut n = context.len().saturating_sub(keep);
    let mut rest: usize = context[n..].iter().map(message_bytes).sum();
    // Down to half the bound, so that a saturated session does not write a
    // full-size snapshot every turn.
    while over_bytes && rest > MAX_RETAINED_CONTEXT_BYTES / 2 && n + 1 < context.len() {
        rest -= message_bytes(&context[n]);
        n += 1;
    }
    let (new_context, compacted) = match forced {
        CompactionRequest::CompactEmpty => (Vec::new(), context.len()),
        CompactionRequest::None if !due => return,
        _ if n == 0 => (context.to_vec(), 0),
        _ => {
            let summary = ContextMessage {
                role: Role::User,
                kind: Kind::Summary,
                content: format!("[compacted {n} earlier messages]"),
                tool_call_id: None,
                tool_name: None,
                tool_input: None,
            };
            let mut c = Vec::with_capacity(keep + 1);
            c.push(summary);
            c.extend_from_slice(&context[n..]);
            (c, n)
        }
    };
    let boundary = match (session.mode, session.durable_row) {
        (ChatMode::Durable, Some(row)) => {
            let written = async {
                let boundary = store.durable_last_seq(row).await?;
                store.write_snapshot(row, boundary, &new_context).await?;
                Ok::<i64, crate::store::StoreError>(boundary)
            };
            match written.await {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!(event = "compaction_discarded", session_id = %session.id, error = %e);
                    return;
                }
            }
        }
        _ => store.chat_max_seq(&session.id).await.unwrap_or(0),
    };
    let retained = new_context.len() as u64;
    session.set_context(new_context);
    let event = Event::CompactionNotice {
        compacted: compacted as u64,
        retained,
        boundary_seq: boundary,
    };
    send_event(conn, session, event, cancel).await;
}
