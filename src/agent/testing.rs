//! A recording [`EventSink`] for the tests of every backend.
//!
//! Events are recorded as one compact line each (`msg:…`, `thought:…`,
//! `tool_call:id:name:input`, `tool_result:id:name:output`,
//! `approval:name:summary`, `ask:message:schema`) so tests compare whole
//! sequences. Approvals and asks are answered from queues; an empty queue
//! never answers, which is how tests hold a turn in an approval or ask wait.
//! [`EchoTurn`] runs an echo turn with test settings.

use std::collections::{HashSet, VecDeque};
use std::path::Path;
use std::time::Duration;

use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::echo::ASK_SCHEMA;
use super::sink::{ApprovalDecision, AskOutcome, EventSink, SinkClosed};
use super::{run_turn, AgentSettings, Backend, ContextMessage, TurnInput, TurnOutcome};

#[derive(Default)]
pub struct RecordingSink {
    pub events: Vec<String>,
    /// Answers to approval requests, in order.
    pub approvals: VecDeque<ApprovalDecision>,
    /// Answers to asks, in order.
    pub asks: VecDeque<AskOutcome>,
    /// Refuse every event once this many were recorded.
    pub close_after: Option<usize>,
    /// Cancel this token when the first message chunk arrives.
    pub cancel_on_first_chunk: Option<CancellationToken>,
    /// Count message chunks instead of recording them.
    pub count_only: bool,
    /// Message chunks received.
    pub message_chunks: usize,
    /// Bytes of message text received.
    pub message_bytes: usize,
}

impl RecordingSink {
    pub fn lines(&self) -> Vec<String> {
        self.events.clone()
    }

    /// The concatenation of all message chunks (the turn's `content`);
    /// the command agent's tests (Unix: they run `sh`) read it.
    #[cfg(unix)]
    pub fn content(&self) -> String {
        self.events
            .iter()
            .filter_map(|e| e.strip_prefix("msg:"))
            .collect()
    }

    fn record(&mut self, line: String) -> Result<(), SinkClosed> {
        if self.close_after.is_some_and(|n| self.events.len() >= n) {
            return Err(SinkClosed);
        }
        self.events.push(line);
        Ok(())
    }
}

impl EventSink for RecordingSink {
    async fn message_chunk(&mut self, text: &str) -> Result<(), SinkClosed> {
        self.message_chunks += 1;
        self.message_bytes += text.len();
        if let Some(token) = self.cancel_on_first_chunk.take() {
            token.cancel();
        }
        if self.count_only {
            return Ok(());
        }
        self.record(format!("msg:{text}"))
    }

    async fn thought_chunk(&mut self, text: &str) -> Result<(), SinkClosed> {
        self.record(format!("thought:{text}"))
    }

    async fn tool_call(
        &mut self,
        id: &str,
        name: &str,
        input: &RawValue,
    ) -> Result<(), SinkClosed> {
        self.record(format!("tool_call:{id}:{name}:{}", input.get()))
    }

    async fn tool_result(&mut self, id: &str, name: &str, output: &str) -> Result<(), SinkClosed> {
        if output.len() > 1024 {
            let what = if output.bytes().all(|b| b == b'x') {
                "x"
            } else {
                "bytes"
            };
            return self.record(format!("tool_result:{id}:{name}:<{} {what}>", output.len()));
        }
        self.record(format!("tool_result:{id}:{name}:{output}"))
    }

    async fn extra(&mut self, update: crate::agent::Extra) -> Result<(), SinkClosed> {
        let members: Vec<String> = update
            .members
            .iter()
            .map(|(k, v)| format!("{k}={}", v.get()))
            .collect();
        self.record(format!(
            "extra:{}:{}",
            update.kind.as_str(),
            members.join(",")
        ))
    }

    async fn request_approval(
        &mut self,
        tool_name: &str,
        summary: &str,
    ) -> Result<ApprovalDecision, SinkClosed> {
        self.record(format!("approval:{tool_name}:{summary}"))?;
        match self.approvals.pop_front() {
            Some(decision) => Ok(decision),
            None => std::future::pending().await,
        }
    }

    async fn ask_user(
        &mut self,
        message: &str,
        schema: &RawValue,
    ) -> Result<AskOutcome, SinkClosed> {
        self.record(format!("ask:{message}:{}", schema.get()))?;
        match self.asks.pop_front() {
            Some(outcome) => Ok(outcome),
            None => std::future::pending().await,
        }
    }
}

/// An echo turn with its inputs.
pub struct EchoTurn<'a> {
    pub prompt: &'a str,
    pub settings: AgentSettings,
    pub context: Vec<ContextMessage>,
    pub allowed: HashSet<String>,
    pub cancel: CancellationToken,
}

impl<'a> EchoTurn<'a> {
    pub fn new(prompt: &'a str) -> Self {
        EchoTurn {
            prompt,
            settings: AgentSettings::default(),
            context: Vec::new(),
            allowed: HashSet::new(),
            cancel: CancellationToken::new(),
        }
    }

    pub fn chunk(mut self, chars: u32) -> Self {
        self.settings.chunk_chars = chars;
        self
    }

    pub async fn run(&self, sink: &mut RecordingSink) -> TurnOutcome {
        let input = TurnInput {
            session_id: "s-1",
            turn_id: "t-1",
            agent_alias: "echo",
            cwd: Path::new("."),
            prompt: self.prompt,
            system_prompt: "",
            context: &self.context,
            settings: &self.settings,
            always_allowed: &self.allowed,
            acp_hosts: None,
            deadline: std::time::Instant::now()
                + std::time::Duration::from_secs(self.settings.timeout_secs),
        };
        run_turn(Backend::Echo, input, sink, &self.cancel).await
    }

    /// Runs with `sink`, cancelling after `ms` of (paused) time.
    pub async fn run_cancelled_after(&self, sink: &mut RecordingSink, ms: u64) -> TurnOutcome {
        let cancel = self.cancel.clone();
        let canceller = async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            cancel.cancel();
        };
        tokio::join!(self.run(sink), canceller).0
    }

    pub async fn events(&self) -> (TurnOutcome, Vec<String>) {
        let mut sink = RecordingSink::default();
        let outcome = self.run(&mut sink).await;
        (outcome, sink.lines())
    }
}

/// The events of a completed echo turn with default settings.
pub async fn echo_events(prompt: &str) -> Vec<String> {
    let (outcome, lines) = EchoTurn::new(prompt).events().await;
    assert_eq!(outcome, TurnOutcome::Completed);
    lines
}

pub fn raw(json: &str) -> Box<RawValue> {
    RawValue::from_string(json.to_owned()).unwrap()
}

pub fn ask_line(message: &str) -> String {
    format!("ask:{message}:{ASK_SCHEMA}")
}
