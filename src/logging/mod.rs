//! The daemon's logging: JSON lines (or text) on stderr through a writer
//! that never blocks and never fails the caller ([`writer`]), plus the
//! in-process capture that clients read with `logs/query` and
//! `logs/subscribe` ([`capture`]). Both mask the configured secrets
//! ([`secrets`]) before a line is queued or kept. Logging is best effort: a closed, broken
//! or full stderr loses log lines (counted), never a request.

pub mod capture;
pub mod filter;
pub mod secrets;
pub mod writer;

use std::io::IsTerminal;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

use writer::{Notice, QueueWriter, Stats};

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Text,
}

impl Format {
    /// Text on a terminal, JSON otherwise (a supervisor or a pipe reads it).
    pub fn for_stderr() -> Self {
        if std::io::stderr().is_terminal() {
            Self::Text
        } else {
            Self::Json
        }
    }
}

/// How long the exit flush may wait for a slow reader.
const EXIT_FLUSH: Duration = Duration::from_millis(500);

static STATS: OnceLock<Arc<Stats>> = OnceLock::new();

/// Lines lost so far (queue overflow or failed writes); 0 before [`init`].
pub fn dropped_lines() -> u64 {
    STATS.get().map_or(0, |s| s.dropped())
}

/// Installs the global subscriber: `ZEROCLAW_LOG` (default `info`) filters
/// both the stderr output and the capture.
pub fn init(format: Format) {
    let notice = match format {
        Format::Json => Notice::Json,
        Format::Text => Notice::Text,
    };
    let (filter, refused) = filter::from_env();
    let Ok((writer, stats)) = QueueWriter::spawn(std::io::stderr(), notice) else {
        // No thread for the writer: run without a stderr log rather than not at all.
        let _ = tracing_subscriber::registry()
            .with(filter)
            .with(capture::CaptureLayer)
            .try_init();
        filter::report(refused.as_ref());
        return;
    };
    let _ = STATS.set(stats);
    // `log_internal_errors(false)`: the fmt layer would report a failed write
    // with `eprintln!`, which panics when stderr is gone.
    let fmt = match format {
        Format::Json => tracing_subscriber::fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_writer(writer)
            .log_internal_errors(false)
            .boxed(),
        Format::Text => tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(writer)
            .log_internal_errors(false)
            .boxed(),
    };
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(fmt)
        .with(capture::CaptureLayer)
        .try_init();
    filter::report(refused.as_ref());
}

/// At exit: gives a live reader the last lines (bounded; a full pipe waits no longer).
pub fn flush() {
    if let Some(stats) = STATS.get() {
        writer::flush(stats, EXIT_FLUSH);
    }
}
