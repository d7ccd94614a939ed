//! One streamed chat completion: the HTTP exchange (with retries of 429/5xx
//! answers, `retry.rs`), the body (read by its own task, `body.rs`) split
//! into SSE events as it arrives (`sse.rs`), each event's chunk decoded once (`chunk.rs`), and every
//! failure classified (docs/agents.md).
//!
//! Timeouts are ours, not the client's: `request_timeout` bounds connecting
//! plus the response head, then every silence of the stream, so a long
//! answer that keeps streaming is never cut by a total deadline.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::body::{Body, Piece};
use super::chunk::{ChunkError, Decoded};
use super::retry;
use super::shape::Decoder;
use super::sse::{EventRef, Splitter, SseError};
use crate::agent::{ProviderFailure, ProviderReason};
use crate::bounded::bound_text;
use crate::config::agent_spec::OpenAiSettings;

/// Bytes of a failed answer's body read for its error message.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
/// Bytes of a server's error message kept in the failure.
const MAX_ERROR_MESSAGE_BYTES: usize = 1024;

/// Why a stream read stopped without a chunk.
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

/// An open streamed answer.
pub struct Answer {
    body: Body,
    events: Splitter,
    /// Decodes each event (reusing the stream's shape, `shape.rs`).
    decoder: Decoder,
    timeout: Duration,
    /// A `finish_reason` was seen: the body may end without `[DONE]`.
    finished: bool,
    /// `[DONE]`, or the end of the body after a `finish_reason`.
    done: bool,
}

/// The daemon's one HTTP client (rustls with ring; connection reuse across
/// turns). No proxy from the environment: a daemon's environment is not the
/// user's shell, and a loopback model server must never go through one. No
/// redirects (`redirect.rs`).
fn client() -> Result<&'static reqwest::Client, ProviderFailure> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            reqwest::Client::builder()
                .use_rustls_tls()
                .no_proxy()
                .redirect(super::redirect::policy())
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
    let mut backoff = settings.retry_backoff;
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
                body: Body::spawn(response),
                events: Splitter::default(),
                decoder: Decoder::default(),
                timeout: settings.request_timeout,
                finished: false,
                done: false,
            });
        }
        if let Some(message) = super::redirect::refused(status, response.headers()) {
            let code = Some(status.as_u16());
            return Err(failure(ProviderReason::Protocol, code, message).into());
        }
        let delay = retry::delay(response.headers(), backoff);
        let message = error_message(response, settings.request_timeout, cancel).await?;
        let code = status.as_u16();
        let delay = match delay {
            _ if !retry::retryable(status) || attempt >= settings.max_retries => {
                let message = format!("HTTP {code}: {message}");
                return Err(failure(ProviderReason::Error, Some(code), message).into());
            }
            Err(asked) => {
                let message = format!(
                    "HTTP {code}: {message} (the server asks to retry after {} s, more than the {} s bound)",
                    asked.as_secs(),
                    retry::MAX_RETRY_DELAY.as_secs()
                );
                return Err(failure(ProviderReason::Error, Some(code), message).into());
            }
            Ok(delay) => delay,
        };
        attempt += 1;
        tracing::warn!(event = "provider_retry", status = code, attempt);
        tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(Halt::Cancelled),
            () = tokio::time::sleep(delay) => {}
        }
        backoff = backoff.saturating_mul(2);
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

impl Answer {
    /// The next chunk, waiting for the body (but not past `due`: then an
    /// empty chunk); `Ok(None)` once the answer is complete. A body that
    /// ends before `[DONE]` or a `finish_reason` was cut. A chunk may carry
    /// nothing (the usage chunk, an empty delta).
    pub async fn next(
        &mut self,
        cancel: &CancellationToken,
        due: Option<Instant>,
    ) -> Result<Option<Decoded<'_>>, Halt> {
        loop {
            if self.done {
                return Ok(None);
            }
            if let Some(event) = self.events.next_event().map_err(malformed)? {
                return self.decode(event);
            }
            let until_due = async {
                match due {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            let item = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(Halt::Cancelled),
                r = tokio::time::timeout(self.timeout, self.body.next()) => r,
                () = until_due => return Ok(Some(Decoded::default())),
            };
            let item = item.map_err(|_| timed_out("stream", self.timeout))?;
            self.feed(item)?;
        }
    }

    /// The next chunk if it is already received, without waiting; `Ok(None)`
    /// when none is (or the answer is complete).
    pub fn ready(&mut self) -> Result<Option<Decoded<'_>>, Halt> {
        loop {
            if self.done {
                return Ok(None);
            }
            if let Some(event) = self.events.next_event().map_err(malformed)? {
                return self.decode(event);
            }
            let Some(item) = self.body.ready() else {
                return Ok(None);
            };
            self.feed(item)?;
        }
    }

    /// Takes one read of the body: bytes to split, or its end.
    fn feed(&mut self, item: Option<Piece>) -> Result<(), Halt> {
        match item {
            Some(Ok(bytes)) => {
                self.events.push(&bytes);
                Ok(())
            }
            Some(Err(e)) => Err(transport(&e, "stream cut").into()),
            None if self.finished => {
                self.done = true;
                Ok(())
            }
            None => {
                let m = "stream cut: the server closed it before [DONE]".to_owned();
                Err(failure(ProviderReason::Protocol, None, m).into())
            }
        }
    }

    /// Decodes one event: `[DONE]` ends the answer (`None`).
    fn decode(&mut self, event: EventRef) -> Result<Option<Decoded<'_>>, Halt> {
        let data = self.events.data(event).map_err(malformed)?;
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(None);
        }
        if data.is_empty() {
            return Ok(Some(Decoded::default()));
        }
        let decoded = self.decoder.decode(data).map_err(|e| {
            let m = match e {
                ChunkError::Malformed(e) => format!(
                    "malformed chunk ({e}): {}",
                    bound_text(data, MAX_ERROR_MESSAGE_BYTES)
                ),
                ChunkError::InStream(message) => {
                    let m = bound_text(&message, MAX_ERROR_MESSAGE_BYTES);
                    return failure(ProviderReason::Error, None, format!("error in stream: {m}"));
                }
            };
            failure(ProviderReason::Protocol, None, m)
        })?;
        self.finished |= decoded.finish;
        Ok(Some(decoded))
    }
}

fn malformed(e: SseError) -> Halt {
    let m = format!("malformed event stream: {e}");
    failure(ProviderReason::Protocol, None, m).into()
}
