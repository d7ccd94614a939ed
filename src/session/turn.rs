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

use super::journal::{Journal, SessionJournal};
use super::live::{context_bytes, message_bytes, Ending, Session, TurnSignals};
use super::turn_sink::{TurnSink, Waits, MAX_TURN_OUTPUT_BYTES};
use super::update::{notify_session, Completion, Event, Update, MAX_CONTENT_BYTES};
use super::{new_uuid, Sessions};
use crate::agent::{
    self, AcpHosts, AgentSettings, Backend, CompactionRequest, ContextMessage, Kind, Role,
    TurnInput, TurnOutcome,
};
use crate::bounded::bound_text;
use crate::config::{AgentConfig, AgentSpec, Config};
use crate::conn_state::Conn;
use crate::error::{InternalReason, RpcError};
use crate::jsonrpc::AnsweredInOrder;
use crate::limits::SHUTDOWN_GRACE;
use crate::live_config::LiveConfig;
use crate::request::Responder;
use crate::store::Store;

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
    /// The answer left through the request's responder (see [`run_prompt`]).
    pub answered: Option<AnsweredInOrder>,
    /// The text the client was sent during the turn.
    pub content: String,
}

impl Answered {
    fn early(e: RpcError) -> Self {
        Self {
            result: Err(e),
            turn_complete_sent: false,
            answered: None,
            content: String::new(),
        }
    }
}

/// Queues `prompt` on `session` and runs it. With a `responder` (a request,
/// not a notification), the turn answers before the next queued turn may
/// start, so a turn's updates, its `turn_complete` and its answer are never
/// overtaken by the next turn's (§8.4 step 4).
pub async fn run_prompt(
    sessions: &Sessions,
    config: &LiveConfig,
    session: Arc<Session>,
    conn: Conn,
    prompt: String,
    responder: Option<Responder>,
) -> Answered {
    // Over the daemon's memory budget no new turn starts.
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
            if let Some(responder) = responder {
                let result = out.result.as_ref();
                let sent = responder.answer(result, Default::default(), &signals.soft);
                match sent.await {
                    Ok(proof) => out.answered = Some(proof),
                    Err(e) => out.result = Err(e),
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

/// One turn in the order of §9.3, the same for both session kinds: what
/// differs is the session's [`Journal`].
async fn execute(
    (store, config, hosts): (&Arc<Store>, &Config, &Arc<AcpHosts>),
    session: &Arc<Session>,
    conn: &Conn,
    prompt: &str,
    signals: &TurnSignals,
) -> Answered {
    let not_sent = Answered::early;
    let (agent, spec) = match agent_of(config, &session.agent_alias) {
        Ok(agent) => agent,
        Err(e) => return not_sent(e),
    };
    let (backend, settings) = (spec.backend(), AgentSettings::of(spec, agent, config));
    let journal = SessionJournal::of(session, store);
    // 1. A checkpoint left by a failed append or finalization is recovered first.
    if let Err(e) = journal.recover(session).await {
        return not_sent(e.into());
    }
    // 2. Compaction, and its notice, before the turn begins.
    let forced = forced_compaction(backend, prompt);
    compact(&journal, session, (conn, &signals.soft), agent, forced).await;
    // 3. The begin transaction.
    let turn_id = new_uuid();
    if let Err(e) = journal.begin(&turn_id, prompt).await {
        return not_sent(e.into());
    }
    // 4. The agent.
    let waits = waits_of(config, &settings);
    let recorder = journal.record(session, conn, signals);
    let mut sink = TurnSink::new(
        session.clone(),
        conn.clone(),
        waits,
        recorder,
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
        deadline: waits.deadline,
    };
    let run = agent::run_turn(backend, input, &mut sink, &signals.soft);
    let outcome = with_cancellation(run, signals).await;
    // The turn's borrow of the context ends here, so extending it below
    // does not copy it.
    drop(context);
    let (mut content, emitted) = sink.finish().await;
    let outcome = within_output_bound(&sink, outcome);
    // Killed or deleted: no finalization, no turn_complete (§9.9).
    if signals.hard.is_cancelled() {
        let why = session.ending().unwrap_or(Ending::Killed).error();
        return Answered {
            content,
            ..not_sent(why)
        };
    }
    // 5. Persist the outcome.
    let failure = outcome.failure_message();
    let turn = (prompt, failure.as_deref());
    let persisted = journal.finalize(session, emitted, turn, &mut content).await;
    let outcome = match persisted {
        Ok(added) => {
            session.extend_context(added);
            Ok(outcome)
        }
        Err(e) => Err(RpcError::from(e)),
    };
    // 6. turn_complete, then the answer.
    answer(session, (conn, &signals.soft), outcome, content).await
}

/// The configuration of the session's agent, and its spec.
fn agent_of<'c>(
    config: &'c Config,
    alias: &str,
) -> Result<(&'c AgentConfig, &'c AgentSpec), RpcError> {
    config.agent(alias).ok_or_else(|| {
        let message = format!("agent {alias} is not configured");
        RpcError::internal(message, Some(InternalReason::AgentFailed))
    })
}

/// An agent that went past [`MAX_TURN_OUTPUT_BYTES`] failed, whatever it said.
fn within_output_bound(sink: &TurnSink, outcome: TurnOutcome) -> TurnOutcome {
    match sink.overflowed() {
        true => TurnOutcome::Failed(format!(
            "the turn's output exceeds {MAX_TURN_OUTPUT_BYTES} bytes"
        )),
        false => outcome,
    }
}

/// A compaction the prompt itself asks for (the echo agent's test directives).
fn forced_compaction(backend: Backend, prompt: &str) -> CompactionRequest {
    match backend {
        Backend::Echo => agent::echo_compaction_request(prompt),
        _ => CompactionRequest::None,
    }
}

/// The turn's waits: approvals and questions (from `[daemon]`), and one
/// deadline for the whole turn that the backend's own waits and the sink's
/// all end by.
fn waits_of(config: &Config, settings: &AgentSettings) -> Waits {
    Waits {
        approval: Duration::from_secs(u64::from(config.daemon.approval_timeout_secs)),
        ask: Duration::from_secs(u64::from(config.daemon.ask_timeout_secs)),
        deadline: std::time::Instant::now() + Duration::from_secs(settings.timeout_secs),
    }
}

/// Step 6: `turn_complete` for the turn's `outcome` (or the storage error
/// that kept it from being persisted), then the answer.
async fn answer(
    session: &Session,
    (conn, cancel): (&Conn, &CancellationToken),
    outcome: Result<TurnOutcome, RpcError>,
    content: String,
) -> Answered {
    let (result, out) = match outcome {
        Ok(TurnOutcome::Completed) => (Ok("end_turn"), Completion::Completed),
        Ok(TurnOutcome::Cancelled) => (Ok("cancelled"), Completion::Cancelled),
        Ok(TurnOutcome::Failed(m)) => (
            Err(RpcError::internal(m, Some(InternalReason::AgentFailed))),
            Completion::Failed,
        ),
        Ok(TurnOutcome::ProviderFailed(f)) => (Err(RpcError::Provider(f)), Completion::Failed),
        Err(stored) => (Err(stored), Completion::Failed),
    };
    let failure_text = result.as_ref().err().map(ToString::to_string);
    let reason = match (&failure_text, out) {
        (Some(m), _) => Some(m.as_str()),
        (_, Completion::Cancelled) => Some("cancelled"),
        _ => None,
    };
    complete(conn, session, (out, &content, reason), cancel).await;
    let result = result.map(|stop_reason| PromptResult {
        session_id: session.id.clone(),
        stop_reason,
        content: bound_text(&content, MAX_CONTENT_BYTES).into_owned(),
    });
    Answered {
        result,
        turn_complete_sent: true,
        answered: None,
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
/// message count (docs/decisions.md): with
/// [`MAX_TURN_OUTPUT_BYTES`] per turn, a session's context, its snapshot and
/// its rehydration stay under ~96 MiB.
pub const MAX_RETAINED_CONTEXT_BYTES: usize = 64 * 1024 * 1024;

/// Auto or forced compaction (§9.5). A failed snapshot write discards it silently.
async fn compact(
    journal: &SessionJournal,
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
    let boundary = match journal.snapshot(&new_context).await {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(event = "compaction_discarded", session_id = %session.id, error = %e);
            return;
        }
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
