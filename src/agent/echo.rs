//! The built-in `echo` agent (§10.3): executes the prompt's directive
//! language line by line and nothing else, so the same prompt, context and
//! client answers always produce the same events.
//!
//! Text items (text lines and the text of `::repeat`, `::ask`, `::context`)
//! form the reply: the first is emitted as is, each later one prefixed by
//! `"\n"`. Every wait (chunk delay, `::sleep`, approval, ask) ends the turn as
//! cancelled as soon as cancellation is signalled.

use std::borrow::Cow;
use std::collections::HashSet;
use std::time::Duration;

use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::chunker::{Chunker, Stop, Stream};
use super::context::append_context_document_bounded;
use super::directive::{parse_line, Line, ToolCall, MAX_PRODUCED_BYTES};
use super::sink::{ApprovalDecision, AskOutcome, EventSink};
use super::{TurnInput, TurnOutcome, SINK_CLOSED_MESSAGE};
use crate::bounded::TRUNCATION_SUFFIX;

/// The schema of every `::ask` (§10.3).
pub const ASK_SCHEMA: &str = r#"{"type":"object","properties":{"answer":{"type":"string","title":"Answer"}},"required":["answer"]}"#;

/// Runs one echo turn.
pub async fn run<S: EventSink>(
    input: &TurnInput<'_>,
    sink: &mut S,
    cancel: &CancellationToken,
) -> TurnOutcome {
    let mut turn = EchoTurn {
        input,
        chunker: Chunker::new(
            input.settings.chunk_chars,
            input.settings.chunk_delay_ms,
            cancel,
        ),
        any_text: false,
        next_tool: 1,
        allowed_this_turn: HashSet::new(),
    };
    match turn.run(sink).await {
        Ok(()) => TurnOutcome::Completed,
        Err(Stop::Cancelled) => TurnOutcome::Cancelled,
        Err(Stop::Failed(message)) => TurnOutcome::Failed(message),
        Err(Stop::SinkClosed) => TurnOutcome::Failed(SINK_CLOSED_MESSAGE.to_owned()),
    }
}

struct EchoTurn<'t, 'a, 'c> {
    input: &'t TurnInput<'a>,
    chunker: Chunker<'c>,
    /// Whether a text item was already seen (even an empty one).
    any_text: bool,
    /// k of the next `tc_<k>`.
    next_tool: u64,
    /// `allow_always` decisions made during this turn; the runtime records
    /// them for later turns, but `always_allowed` is a snapshot.
    allowed_this_turn: HashSet<&'a str>,
}

impl<'a> EchoTurn<'_, 'a, '_> {
    async fn run<S: EventSink>(&mut self, sink: &mut S) -> Result<(), Stop> {
        let prompt: &'a str = self.input.prompt;
        for line in prompt.lines() {
            match parse_line(line) {
                Line::Text(text) => {
                    let segment = self.segment(text);
                    self.chunker.emit(sink, Stream::Message, &segment).await?;
                }
                Line::Think(text) => self.chunker.emit(sink, Stream::Thought, text).await?,
                Line::Tool(call) => {
                    let id = self.tool_call(sink, &call).await?;
                    sink.tool_result(&id, call.name, &tool_output(&call))
                        .await?;
                }
                Line::Approve(call) => self.approve(sink, &call).await?,
                Line::Ask(message) => self.ask(sink, message).await?,
                Line::Choose { message, options } => self.choose(sink, message, &options).await?,
                Line::Sleep(ms) => self.chunker.wait(Duration::from_millis(ms)).await?,
                Line::Delay(ms) => self.chunker.set_delay_ms(ms),
                Line::Chunk(n) => self.chunker.set_chunk_chars(n),
                Line::Repeat { times, text } => {
                    let prefix = self.item_prefix();
                    let block = RepeatBlock::new(text, times);
                    let pieces: Vec<&str> = std::iter::once(prefix.as_str())
                        .chain(block.pieces())
                        .collect();
                    self.chunker
                        .emit_pieces(sink, Stream::Message, &pieces)
                        .await?;
                }
                Line::Context => {
                    // Bounded like `::repeat` (16 MiB): a context fed back
                    // into itself turn after turn cannot grow without bound.
                    let mut segment = self.item_prefix();
                    let max = segment.len() + MAX_PRODUCED_BYTES as usize;
                    let cut =
                        append_context_document_bounded(&mut segment, self.input.context, max)
                            .map_err(|e| Stop::Failed(format!("cannot write the context: {e}")))?;
                    if cut {
                        segment.push_str(TRUNCATION_SUFFIX);
                    }
                    self.chunker.emit(sink, Stream::Message, &segment).await?;
                }
                // Acted on by the runtime before the turn (§9.5).
                Line::Compact | Line::CompactEmpty => {}
                Line::Fail(message) => return Err(Stop::Failed(message.to_owned())),
            }
        }
        Ok(())
    }

    /// The segment of a text item: the item itself if it is the first of the
    /// turn, else `"\n"` followed by it.
    fn segment<'s>(&mut self, item: &'s str) -> Cow<'s, str> {
        if std::mem::replace(&mut self.any_text, true) {
            let mut segment = String::with_capacity(item.len() + 1);
            segment.push('\n');
            segment.push_str(item);
            Cow::Owned(segment)
        } else {
            Cow::Borrowed(item)
        }
    }

    /// The start of a text item's segment built in place: `""` for the
    /// turn's first item, else `"\n"`.
    fn item_prefix(&mut self) -> String {
        if std::mem::replace(&mut self.any_text, true) {
            "\n".to_owned()
        } else {
            String::new()
        }
    }

    async fn tool_call<S: EventSink>(
        &mut self,
        sink: &mut S,
        call: &ToolCall<'_>,
    ) -> Result<String, Stop> {
        let id = format!("tc_{}", self.next_tool);
        self.next_tool += 1;
        sink.tool_call(&id, call.name, &call.input).await?;
        Ok(id)
    }

    async fn approve<S: EventSink>(
        &mut self,
        sink: &mut S,
        call: &ToolCall<'a>,
    ) -> Result<(), Stop> {
        let id = self.tool_call(sink, call).await?;
        let always = self.input.always_allowed.contains(call.name)
            || self.allowed_this_turn.contains(call.name);
        let decision = if always {
            ApprovalDecision::AllowOnce
        } else {
            let summary = call.input.get();
            self.chunker
                .race(sink.request_approval(call.name, summary))
                .await?
        };
        let output: Cow<'_, str> = match decision {
            ApprovalDecision::AllowOnce => tool_output(call),
            ApprovalDecision::AllowAlways => {
                self.allowed_this_turn.insert(call.name);
                tool_output(call)
            }
            ApprovalDecision::Rejected => "denied: rejected".into(),
            ApprovalDecision::Replaced(text) => format!("denied: replaced: {text}").into(),
            ApprovalDecision::TimedOut => "denied: timed_out".into(),
            ApprovalDecision::Unreachable => "denied: unreachable".into(),
        };
        sink.tool_result(&id, call.name, &output).await?;
        Ok(())
    }

    async fn ask<S: EventSink>(&mut self, sink: &mut S, message: &str) -> Result<(), Stop> {
        let schema: Box<RawValue> = serde_json::from_str(ASK_SCHEMA)
            .map_err(|e| Stop::Failed(format!("invalid ask schema: {e}")))?;
        self.elicit(sink, message, &schema, "answer", |c| {
            accepted_answer(c).into_owned()
        })
        .await
    }

    /// Asks the user, then emits the text item `<label>: <answer>` (§10.3's
    /// `::ask` rule, which `::choose` shares).
    async fn elicit<S: EventSink>(
        &mut self,
        sink: &mut S,
        message: &str,
        schema: &RawValue,
        label: &str,
        accepted: impl FnOnce(&RawValue) -> String,
    ) -> Result<(), Stop> {
        let outcome = self.chunker.race(sink.ask_user(message, schema)).await?;
        let answer = match &outcome {
            AskOutcome::Accept(content) => accepted(content),
            AskOutcome::Decline => "declined".into(),
            AskOutcome::Cancel => "cancelled".into(),
            AskOutcome::Unavailable(_) => "unavailable".into(),
        };
        let mut segment = self.item_prefix();
        segment.push_str(label);
        segment.push_str(": ");
        segment.push_str(&answer);
        self.chunker.emit(sink, Stream::Message, &segment).await
    }
}

impl EchoTurn<'_, '_, '_> {
    /// `::choose`: a single-select elicitation (`oneOf` of `choice-<i>`
    /// consts titled by the options), then the text item `choice: <title>`.
    async fn choose<S: EventSink>(
        &mut self,
        sink: &mut S,
        message: &str,
        options: &[&str],
    ) -> Result<(), Stop> {
        let one_of: Vec<_> = options
            .iter()
            .enumerate()
            .map(|(i, o)| serde_json::json!({"const": format!("choice-{i}"), "title": o}))
            .collect();
        let schema = serde_json::json!({"type": "object", "properties": {"choice": {
            "type": "string", "title": "Choice", "oneOf": one_of}}, "required": ["choice"]});
        let schema = serde_json::value::to_raw_value(&schema)
            .map_err(|e| Stop::Failed(format!("invalid choice schema: {e}")))?;
        self.elicit(sink, message, &schema, "choice", |c| {
            chosen(c, options).into_owned()
        })
        .await
    }
}

/// The title of the option `content.choice` names, else the compact JSON of `content`.
fn chosen<'c>(content: &'c RawValue, options: &[&str]) -> Cow<'c, str> {
    let picked = serde_json::from_str::<serde_json::Value>(content.get())
        .ok()
        .and_then(|v| {
            v.get("choice")?
                .as_str()?
                .strip_prefix("choice-")?
                .parse::<usize>()
                .ok()
        })
        .and_then(|i| options.get(i));
    match picked {
        Some(title) => Cow::Owned((*title).to_owned()),
        None => super::json::compact_json(content.get()),
    }
}

/// `content.answer` if it is a string, else the compact JSON of `content`.
fn accepted_answer(content: &RawValue) -> Cow<'_, str> {
    let answer = serde_json::from_str::<serde_json::Value>(content.get())
        .ok()
        .and_then(|value| match value.get("answer") {
            Some(serde_json::Value::String(s)) => Some(s.clone()),
            _ => None,
        });
    match answer {
        Some(s) => Cow::Owned(s),
        None => super::json::compact_json(content.get()),
    }
}

/// The output of an approved or plain tool: the compact input, or for `big`
/// `::repeat N TEXT` as pieces: a block of whole copies of TEXT of about
/// [`REPEAT_BLOCK_BYTES`], repeated, then a shorter tail of it. A 16 MiB item
/// is never built whole (the echo segment's copy).
struct RepeatBlock {
    block: String,
    copies: usize,
    full_blocks: usize,
    tail_copies: usize,
    text_len: usize,
}

/// The size a `::repeat` block aims at.
const REPEAT_BLOCK_BYTES: usize = 1024 * 1024;

impl RepeatBlock {
    fn new(text: &str, times: usize) -> Self {
        let copies = (REPEAT_BLOCK_BYTES / text.len().max(1)).clamp(1, times.max(1));
        let copies = if text.is_empty() { 0 } else { copies };
        Self {
            block: text.repeat(copies),
            copies,
            full_blocks: times.checked_div(copies).unwrap_or(0),
            tail_copies: times.checked_rem(copies).unwrap_or(0),
            text_len: text.len(),
        }
    }

    fn pieces(&self) -> impl Iterator<Item = &str> {
        let tail = &self.block[..self.tail_copies * self.text_len];
        debug_assert!(self.tail_copies < self.copies.max(1));
        std::iter::repeat_n(self.block.as_str(), self.full_blocks).chain(std::iter::once(tail))
    }
}

/// `"x"` repeated `input.bytes` times.
fn tool_output<'c>(call: &'c ToolCall<'_>) -> Cow<'c, str> {
    match call.big_bytes {
        Some(bytes) => Cow::Owned("x".repeat(bytes)),
        None => Cow::Borrowed(call.input.get()),
    }
}

#[cfg(test)]
#[path = "echo_tests.rs"]
mod tests;
#[cfg(test)]
#[path = "echo_wait_tests.rs"]
mod wait_tests;
