//! One streamed chat completion: the HTTP exchange (with retries of 429/5xx
//! answers), SSE parsed incrementally, each `data:` chunk decoded into the
//! pieces the turn acts on, and every failure classified (docs/agents.md).
//!
//! Timeouts are ours, not the client's: `request_timeout` bounds connecting
//! plus the response head, then every silence of the stream, so a long
//! answer that keeps streaming is never cut by a total deadline.

use std::pin::Pin;
use std::sync::OnceLock;
use std::time::Duration;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::{FutureExt, Stream, StreamExt};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::delta::ToolCallDelta;
use super::settings::OpenAiSettings;
use crate::agent::{ProviderFailure, ProviderReason};
use crate::bounded::bound_text;

/// Bytes of a failed answer's body read for its error message.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
/// Bytes of a server's error message kept in the failure.
const MAX_ERROR_MESSAGE_BYTES: usize = 1024;
/// Bound on one retry's delay, whatever the backoff doubled to.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);

/// What one chunk of the stream carries.
#[derive(Debug)]
pub enum Piece {
    /// `delta.content`.
    Content(String),
    /// `delta.reasoning_content` (DeepSeek, vLLM) or `delta.reasoning` (Ollama, vLLM ≥ 0.10).
    Reasoning(String),
    /// `delta.tool_calls`.
    ToolCalls(Vec<ToolCallDelta>),
    /// A `finish_reason`: the answer is complete (`[DONE]` may still follow).
    Finish,
}

/// Why a stream read stopped without a piece.
#[derive(Debug)]
pub enum Halt {
    /// The turn was cancelled (the request is dropped, which closes it).
    Cancelled,
    /// The exchange failed.
    Failed(ProviderFailure),
}

impl From<ProviderFailure> for Halt {
    fn from(f: ProviderFailure) -> Self {
        Halt::Failed(f)
    }
}

type Events = Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

/// An open streamed answer.
pub struct Answer {
    events: Events,
    timeout: Duration,
    /// `[DONE]` or a `finish_reason` was seen.
    finished: bool,
    done: bool,
}

/// The daemon's one HTTP client (rustls with ring; connection reuse across
/// turns). No proxy from the environment: a daemon's environment is not the
/// user's shell, and a loopback model server must never go through one.
fn client() -> Result<&'static reqwest::Client, ProviderFailure> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            reqwest::Client::builder()
                .use_rustls_tls()
                .no_proxy()
                .tcp_nodelay(true)
                .pool_idle_timeout(Duration::from_secs(60))
                .build()
                .map_err(|e| chain(&e))
        })
        .as_ref()
        .map_err(|e| {
            failure(
                ProviderReason::Unreachable,
                None,
                format!("HTTP client: {e}"),
            )
        })
}

fn failure(reason: ProviderReason, status: Option<u16>, message: String) -> ProviderFailure {
    ProviderFailure {
        reason,
        status,
        message,
    }
}

/// An error and its sources, `: `-separated (reqwest's own text is terse).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Classifies a transport error: timeouts, then connection failures
/// (refused, DNS, TLS), else a broken exchange.
fn transport(e: &reqwest::Error, during: &str) -> ProviderFailure {
    let reason = if e.is_timeout() {
        ProviderReason::Timeout
    } else if e.is_connect() {
        ProviderReason::Unreachable
    } else {
        ProviderReason::Protocol
    };
    failure(reason, None, format!("{during}: {}", chain(e)))
}

fn timed_out(during: &str, after: Duration) -> ProviderFailure {
    failure(
        ProviderReason::Timeout,
        None,
        format!("{during}: no answer within {} s", after.as_secs()),
    )
}

/// Sends `body`, retrying 429 and 5xx answers with doubling backoff, and
/// returns the open stream of the first 2xx answer.
pub async fn open(
    settings: &OpenAiSettings,
    body: &[u8],
    api_key: Option<&str>,
    cancel: &CancellationToken,
) -> Result<Answer, Halt> {
    let client = client()?;
    let url = settings.endpoint();
    let mut delay = settings.retry_backoff;
    let mut attempt = 0;
    loop {
        let mut request = client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body.to_vec());
        if let Some(key) = api_key {
            request = request.bearer_auth(key);
        }
        let sent = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(Halt::Cancelled),
            r = tokio::time::timeout(settings.request_timeout, request.send()) => r,
        };
        let response = match sent {
            Err(_) => return Err(timed_out("request", settings.request_timeout).into()),
            Ok(Err(e)) => return Err(transport(&e, "request").into()),
            Ok(Ok(r)) => r,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(Answer {
                events: Box::pin(response.bytes_stream().eventsource()),
                timeout: settings.request_timeout,
                finished: false,
                done: false,
            });
        }
        let retryable = status.as_u16() == 429 || status.is_server_error();
        let message = error_message(response, settings.request_timeout, cancel).await?;
        if !retryable || attempt >= settings.max_retries {
            let message = format!("HTTP {}: {message}", status.as_u16());
            return Err(failure(ProviderReason::Error, Some(status.as_u16()), message).into());
        }
        attempt += 1;
        tracing::warn!(event = "provider_retry", status = status.as_u16(), attempt);
        tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(Halt::Cancelled),
            () = tokio::time::sleep(delay.min(MAX_RETRY_DELAY)) => {}
        }
        delay = delay.saturating_mul(2);
    }
}

/// The server's message from a failed answer: OpenAI's `error.message`,
/// Ollama's `error` string, else the body text, bounded.
async fn error_message(
    mut response: reqwest::Response,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<String, Halt> {
    let mut body = Vec::new();
    let read = async {
        while body.len() < MAX_ERROR_BODY_BYTES {
            match response.chunk().await {
                Ok(Some(bytes)) => body.extend_from_slice(&bytes),
                Ok(None) | Err(_) => break,
            }
        }
    };
    tokio::select! {
        biased;
        () = cancel.cancelled() => return Err(Halt::Cancelled),
        _ = tokio::time::timeout(timeout, read) => {}
    }
    body.truncate(MAX_ERROR_BODY_BYTES);
    let text = String::from_utf8_lossy(&body);
    let from_json = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| {
            let e = v.get("error").unwrap_or(&v);
            e.get("message")
                .and_then(|m| m.as_str())
                .or_else(|| e.as_str())
                .map(str::to_owned)
        });
    let message = from_json.unwrap_or_else(|| text.trim().to_owned());
    Ok(bound_text(&message, MAX_ERROR_MESSAGE_BYTES).into_owned())
}

/// One `data:` chunk of a chat completion stream.
#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    /// Some servers report a failure inside the stream.
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

impl Answer {
    /// The pieces of the next chunk; `Ok(None)` once the answer is complete.
    /// A stream that ends before `[DONE]` or a `finish_reason` was cut.
    pub async fn next(&mut self, cancel: &CancellationToken) -> Result<Option<Vec<Piece>>, Halt> {
        loop {
            if self.done {
                return Ok(None);
            }
            let item = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(Halt::Cancelled),
                r = tokio::time::timeout(self.timeout, self.events.next()) => r,
            };
            let item = item.map_err(|_| timed_out("stream", self.timeout))?;
            if let Some(pieces) = self.take(item)? {
                return Ok(pieces);
            }
        }
    }

    /// The pieces of the next chunk if it is already received, without
    /// waiting; `Ok(None)` when none is (or the answer is complete).
    pub fn ready(&mut self) -> Result<Option<Vec<Piece>>, Halt> {
        loop {
            if self.done {
                return Ok(None);
            }
            // `next()` of a stream is cancel-safe: nothing is lost when it
            // is not ready.
            let Some(item) = self.events.next().now_or_never() else {
                return Ok(None);
            };
            if let Some(pieces) = self.take(item)? {
                return Ok(pieces);
            }
        }
    }

    /// Acts on one item of the event stream: `Some(pieces)` to hand out
    /// (`Some(None)`: the end), `None` to read on.
    #[allow(clippy::option_option)]
    fn take(
        &mut self,
        item: Option<Result<Event, EventStreamError<reqwest::Error>>>,
    ) -> Result<Option<Option<Vec<Piece>>>, Halt> {
        let event = match item {
            None if self.finished => {
                self.done = true;
                return Ok(Some(None));
            }
            None => {
                let m = "stream cut: the server closed it before [DONE]".to_owned();
                return Err(failure(ProviderReason::Protocol, None, m).into());
            }
            Some(Err(EventStreamError::Transport(e))) => {
                return Err(transport(&e, "stream cut").into())
            }
            Some(Err(e)) => {
                let m = format!("malformed event stream: {e}");
                return Err(failure(ProviderReason::Protocol, None, m).into());
            }
            Some(Ok(event)) => event,
        };
        if event.data.trim() == "[DONE]" {
            self.done = true;
            return Ok(Some(None));
        }
        if event.data.is_empty() {
            return Ok(None);
        }
        let pieces = self.decode(&event.data)?;
        Ok((!pieces.is_empty()).then_some(Some(pieces)))
    }

    fn decode(&mut self, data: &str) -> Result<Vec<Piece>, Halt> {
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            let m = format!(
                "malformed chunk ({e}): {}",
                bound_text(data, MAX_ERROR_MESSAGE_BYTES)
            );
            failure(ProviderReason::Protocol, None, m)
        })?;
        if let Some(e) = chunk.error {
            let message = e
                .get("message")
                .and_then(|m| m.as_str())
                .map(str::to_owned)
                .unwrap_or_else(|| e.to_string());
            let m = format!(
                "error in stream: {}",
                bound_text(&message, MAX_ERROR_MESSAGE_BYTES)
            );
            return Err(failure(ProviderReason::Error, None, m).into());
        }
        let mut pieces = Vec::new();
        // `n` is never sent, so only the first choice exists; the usage
        // chunk has none.
        if let Some(choice) = chunk.choices.into_iter().next() {
            if let Some(d) = choice.delta {
                for text in [d.reasoning_content, d.reasoning].into_iter().flatten() {
                    if !text.is_empty() {
                        pieces.push(Piece::Reasoning(text));
                    }
                }
                if let Some(text) = d.content.filter(|t| !t.is_empty()) {
                    pieces.push(Piece::Content(text));
                }
                if let Some(calls) = d.tool_calls.filter(|c| !c.is_empty()) {
                    pieces.push(Piece::ToolCalls(calls));
                }
            }
            if choice.finish_reason.is_some() {
                self.finished = true;
                pieces.push(Piece::Finish);
            }
        }
        Ok(pieces)
    }
}
