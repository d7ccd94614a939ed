//! The `openai` backend: one turn against an OpenAI-compatible
//! `/v1/chat/completions` server (Ollama, llama.cpp, vLLM, LM Studio,
//! OpenAI), streamed, with the built-in tools under approval.
//!
//! A turn is a loop of model requests: each answer's content and reasoning
//! deltas are forwarded as they arrive; if the answer asks for tools, each
//! call is announced (`tool_call`), approved per `approval`, run, reported
//! (`tool_result`) and sent back, and the model is asked again — at most
//! `max_tool_rounds` times. Files: [`request`] (the request body),
//! [`stream`] (HTTP, failures), [`retry`] (when to try again), [`body`] (the
//! task reading the answer), [`sse`] (events from its bytes), [`chunk`] (an
//! event's JSON), [`shape`] (a token stream's repeated event shape), [`pending`] (joining deltas), [`delta`] (tool call
//! assembly), [`tools`], [`settings`].

use std::collections::{BTreeMap, HashSet};

use serde_json::value::RawValue;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

mod body;
mod chunk;
mod delta;
mod key;
mod pending;
pub mod redirect;
mod request;
mod retry;
mod shape;
mod sse;
mod stream;
mod tools;

pub use crate::config::agent_spec::{Approval, OpenAiSettings};
pub use key::{api_key, from_file as api_key_from_file};

use super::sink::{ApprovalDecision, EventSink, SinkClosed};
use super::{ProviderFailure, TurnInput, TurnOutcome, SINK_CLOSED_MESSAGE};
use delta::{AssembledCall, Calls};
use pending::Pending;
use stream::Halt;
use tools::{Ran, Tool};

/// Bytes of a call's arguments shown in its approval request.
const APPROVAL_SUMMARY_BYTES: usize = 4096;
/// A server-chosen call id longer than this is replaced by ours.
const MAX_CALL_ID_BYTES: usize = 128;

/// Why a turn stops early.
enum End {
    Cancelled,
    SinkClosed,
    Failed(String),
    Provider(ProviderFailure),
}

impl From<SinkClosed> for End {
    fn from(_: SinkClosed) -> Self {
        End::SinkClosed
    }
}

impl From<Halt> for End {
    fn from(h: Halt) -> Self {
        match h {
            Halt::Cancelled => End::Cancelled,
            Halt::Failed(f) => End::Provider(f),
        }
    }
}

/// Runs one turn.
pub async fn run<S: EventSink>(
    input: &TurnInput<'_>,
    sink: &mut S,
    cancel: &CancellationToken,
) -> TurnOutcome {
    let settings = &input.settings.openai;
    let api_key = match key::api_key(settings) {
        Ok(key) => key,
        Err(why) => return TurnOutcome::Failed(why),
    };
    // The `shell` tool's `env`: the agent's, never its key variable.
    let tool_env = input
        .settings
        .env
        .iter()
        .filter(|(name, _)| settings.api_key_env.as_deref() != Some(name.as_str()))
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    let mut turn = Turn {
        input,
        settings,
        api_key: api_key.as_deref(),
        tool_env: &tool_env,
        cancel,
        allowed_this_turn: HashSet::new(),
        used_ids: HashSet::new(),
        next_id: 1,
    };
    match turn.run(sink).await {
        Ok(()) => TurnOutcome::Completed,
        Err(End::Cancelled) => TurnOutcome::Cancelled,
        Err(End::SinkClosed) => TurnOutcome::Failed(SINK_CLOSED_MESSAGE.to_owned()),
        Err(End::Failed(m)) => TurnOutcome::Failed(m),
        Err(End::Provider(f)) => TurnOutcome::ProviderFailed(f),
    }
}

struct Turn<'t, 'a> {
    input: &'t TurnInput<'a>,
    settings: &'t OpenAiSettings,
    api_key: Option<&'t str>,
    tool_env: &'t BTreeMap<String, String>,
    cancel: &'t CancellationToken,
    /// `allow_always` answers of this turn (`always_allowed` is a snapshot).
    allowed_this_turn: HashSet<String>,
    /// Call ids of this turn: a server repeating one gets ours instead.
    used_ids: HashSet<String>,
    next_id: u64,
}

impl Turn<'_, '_> {
    async fn run<S: EventSink>(&mut self, sink: &mut S) -> Result<(), End> {
        let i = self.input;
        let mut messages = request::messages(i.system_prompt, i.context, i.prompt);
        let mut rounds = 0;
        loop {
            let (text, calls) = self.answer(sink, &messages).await?;
            if calls.is_empty() {
                return Ok(());
            }
            if rounds >= self.settings.max_tool_rounds {
                return Err(End::Failed(format!(
                    "the model asked for tools again after {rounds} tool rounds (max_tool_rounds)"
                )));
            }
            rounds += 1;
            let calls: Vec<AssembledCall> = calls
                .into_iter()
                .map(|mut c| {
                    c.id = self.call_id(std::mem::take(&mut c.id));
                    c
                })
                .collect();
            let inputs: Vec<CallInput> =
                calls.iter().map(|c| CallInput::of(&c.arguments)).collect();
            let api_calls = calls
                .iter()
                .zip(&inputs)
                .map(|(c, input)| request::tool_call(&c.id, &c.name, input.sent(&c.arguments)))
                .collect();
            messages.push(request::assistant(&text, api_calls));
            for (call, input) in calls.iter().zip(inputs) {
                let output = self.call(sink, call, input).await?;
                messages.push(request::tool_result(&call.id, &output));
            }
        }
    }

    /// One model request: streams its text and thoughts to the sink and
    /// returns the text and the assembled tool calls.
    async fn answer<S: EventSink>(
        &mut self,
        sink: &mut S,
        messages: &[Value],
    ) -> Result<(String, Vec<AssembledCall>), End> {
        let body = request::body(self.settings, messages)
            .map_err(|e| End::Failed(format!("cannot write the request: {e}")))?;
        let mut answer = stream::open(self.settings, &body, self.api_key, self.cancel).await?;
        let mut text = String::new();
        let mut calls = Calls::default();
        let mut pending = Pending::default();
        loop {
            // With text held back (pending.rs), more is awaited only until
            // it is due; what was received before a failure is kept.
            let chunk = match answer.next(self.cancel, pending.due()).await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(halt) => {
                    pending.flush(sink).await?;
                    return Err(halt.into());
                }
            };
            pending.absorb(sink, chunk, &mut text, &mut calls).await?;
            // Deltas already received join it (up to a bound, then
            // cancellation is looked at again).
            while !pending.full() {
                match answer.ready() {
                    Ok(Some(chunk)) => {
                        pending.absorb(sink, chunk, &mut text, &mut calls).await?;
                    }
                    Ok(None) => break,
                    Err(halt) => {
                        pending.flush(sink).await?;
                        return Err(halt.into());
                    }
                }
            }
            pending.flush_if_due(sink).await?;
        }
        pending.flush(sink).await?;
        Ok((text, calls.finish()))
    }

    /// The server's id if usable, else `call_<n>`.
    fn call_id(&mut self, given: String) -> String {
        let usable = !given.is_empty()
            && given.len() <= MAX_CALL_ID_BYTES
            && !self.used_ids.contains(&given);
        let id = if usable {
            given
        } else {
            loop {
                let id = format!("call_{}", self.next_id);
                self.next_id += 1;
                if !self.used_ids.contains(&id) {
                    break id;
                }
            }
        };
        self.used_ids.insert(id.clone());
        id
    }

    /// Announces, approves, runs and reports one call; returns the output
    /// sent back to the model.
    async fn call<S: EventSink>(
        &mut self,
        sink: &mut S,
        call: &AssembledCall,
        input: CallInput,
    ) -> Result<String, End> {
        sink.tool_call(&call.id, &call.name, &input.raw).await?;
        let offered = Tool::parse(&call.name).filter(|t| self.settings.tools.contains(t));
        let output = match (offered, input.args) {
            (None, _) => {
                let names: Vec<&str> = self.settings.tools.iter().map(|t| t.name()).collect();
                format!(
                    "error: unknown tool {:?} (available: {})",
                    call.name,
                    names.join(", ")
                )
            }
            (Some(_), Err(e)) => format!("error: {e}"),
            (Some(tool), Ok(args)) => match self.approve(sink, tool, &input.raw).await? {
                Some(denied) => denied,
                None => {
                    let place = (self.input.cwd, self.tool_env);
                    match tools::run(tool, &args, place, self.cancel).await {
                        Ran::Output(out) => out,
                        Ran::Cancelled => return Err(End::Cancelled),
                    }
                }
            },
        };
        sink.tool_result(&call.id, &call.name, &output).await?;
        Ok(output)
    }

    /// `None` when the call may run, else the output telling the model why not.
    async fn approve<S: EventSink>(
        &mut self,
        sink: &mut S,
        tool: Tool,
        input: &RawValue,
    ) -> Result<Option<String>, End> {
        let name = tool.name();
        let remembered =
            self.input.always_allowed.contains(name) || self.allowed_this_turn.contains(name);
        if !self.settings.approval.needs(tool) || remembered {
            return Ok(None);
        }
        let summary = crate::bounded::bound_text(input.get(), APPROVAL_SUMMARY_BYTES);
        let decision = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Err(End::Cancelled),
            d = sink.request_approval(name, &summary) => d?,
        };
        Ok(match decision {
            ApprovalDecision::AllowOnce => None,
            ApprovalDecision::AllowAlways => {
                self.allowed_this_turn.insert(name.to_owned());
                None
            }
            ApprovalDecision::Rejected => Some("denied: rejected".into()),
            ApprovalDecision::Replaced(text) => Some(format!("denied: replaced: {text}")),
            ApprovalDecision::TimedOut => Some("denied: timed_out".into()),
            ApprovalDecision::Unreachable => Some("denied: unreachable".into()),
        })
    }
}

/// A call's arguments as every step after the stream sees them.
struct CallInput {
    /// What the transcript records: the compact object the model sent, or
    /// `{"invalid_arguments": "<its text, bounded>"}` when that is not a
    /// JSON object (a model cut off by `max_tokens` mid-call).
    raw: Box<RawValue>,
    /// The parsed object, or why the tool does not run.
    args: Result<Value, String>,
}

impl CallInput {
    fn of(text: &str) -> CallInput {
        match parse_arguments(text) {
            Ok((raw, value)) => CallInput {
                raw,
                args: Ok(value),
            },
            Err(why) => CallInput {
                raw: invalid_input(text),
                args: Err(why),
            },
        }
    }

    /// The call's `arguments` in the turn's next request: the model's own
    /// text when it is an object (byte for byte, so a server's prompt cache
    /// still matches; `{}` for none), else what the transcript records.
    /// Never broken JSON: a server that parses its calls back (llama.cpp's)
    /// answers 500 to it, failing the whole turn.
    fn sent<'a>(&'a self, text: &'a str) -> &'a str {
        match &self.args {
            Ok(_) if text.trim().is_empty() => "{}",
            Ok(_) => text,
            Err(_) => self.raw.get(),
        }
    }
}

/// The arguments as a compact raw object and as a value, or why not.
/// Empty arguments (some servers send none for a call without parameters)
/// are `{}`.
fn parse_arguments(text: &str) -> Result<(Box<RawValue>, Value), String> {
    let text = if text.trim().is_empty() { "{}" } else { text };
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("arguments are not valid JSON: {e}"))?;
    if !value.is_object() {
        return Err("arguments are not a JSON object".into());
    }
    let compact = super::compact_json(text);
    let raw = RawValue::from_string(compact.into_owned())
        .map_err(|e| format!("arguments are not valid JSON: {e}"))?;
    Ok((raw, value))
}

/// The `tool_call` input recorded for unparsable arguments (docs/agents.md).
fn invalid_input(text: &str) -> Box<RawValue> {
    let bounded = tools::bounded(text);
    let value = serde_json::json!({ "invalid_arguments": bounded });
    serde_json::value::to_raw_value(&value).unwrap_or_else(|_| RawValue::NULL.to_owned())
}
