//! The log writer: formatted lines go into a bounded queue and one thread
//! writes them to stderr. A caller (any tokio worker) never waits on the
//! pipe: a full queue drops the line, a failed write drops it, and both are
//! counted. After a drop, the next line that does get through is preceded
//! by a `log_lines_dropped` line with the running total, so whoever reads
//! the log learns of the gap where it is. The thread also passes every line
//! through the terminal sanitizer (`crate::shown`): an agent's stderr lines
//! are logged, and stderr is often a person's terminal.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing_subscriber::fmt::MakeWriter;

/// Lines that may wait for the pipe (at ~200 bytes a line, ~200 KiB).
pub const QUEUE_LINES: usize = 1024;

/// What the writer has done, shared with `health` and the exit flush.
#[derive(Debug, Default)]
pub struct Stats {
    /// Lines dropped because the queue was full (the reader is slow or gone).
    overflowed: AtomicU64,
    /// Lines whose write failed (EPIPE, EBADF, …).
    failed: AtomicU64,
    /// Lines accepted but not yet written or dropped.
    pending: AtomicU64,
    /// Set once a write failed with an error that will not heal (broken pipe):
    /// later lines are counted without a write attempt.
    broken: AtomicBool,
}

impl Stats {
    /// Every line lost so far (overflowed + failed).
    pub fn dropped(&self) -> u64 {
        self.overflowed.load(Ordering::Relaxed) + self.failed.load(Ordering::Relaxed)
    }

    /// Lines still queued.
    pub fn pending(&self) -> u64 {
        self.pending.load(Ordering::Relaxed)
    }
}

/// How the drop notice is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    Json,
    Text,
}

/// The `MakeWriter` handed to the fmt layer: cheap to clone, never blocks.
#[derive(Debug, Clone)]
pub struct QueueWriter {
    tx: SyncSender<Vec<u8>>,
    stats: Arc<Stats>,
    /// The lines' format: JSON lines are masked inside their strings only.
    format: Notice,
}

impl QueueWriter {
    /// A queue drained by a new thread into `sink`.
    pub fn spawn<W: Write + Send + 'static>(
        sink: W,
        notice: Notice,
    ) -> io::Result<(Self, Arc<Stats>)> {
        let (tx, rx) = sync_channel(QUEUE_LINES);
        let stats = Arc::new(Stats::default());
        let thread_stats = stats.clone();
        std::thread::Builder::new()
            .name("zeroclaw-log".into())
            .spawn(move || drain(rx, sink, &thread_stats, notice))?;
        Ok((
            Self {
                tx,
                stats: stats.clone(),
                format: notice,
            },
            stats,
        ))
    }

    fn push(&self, line: &[u8]) {
        // Masked before it is queued: no configured secret reaches the log.
        let line = match self.format {
            Notice::Json => super::secrets::mask_json(line),
            Notice::Text => super::secrets::mask_plain(line),
        };
        self.stats.pending.fetch_add(1, Ordering::Relaxed);
        match self.tx.try_send(line.to_vec()) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.stats.pending.fetch_sub(1, Ordering::Relaxed);
                self.stats.overflowed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl Write for QueueWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // The fmt layer writes one whole line per event.
        self.push(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for QueueWriter {
    type Writer = QueueWriter;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

fn drain<W: Write>(rx: Receiver<Vec<u8>>, mut sink: W, stats: &Stats, notice: Notice) {
    let mut reported = 0u64;
    while let Ok(line) = rx.recv() {
        if !stats.broken.load(Ordering::Relaxed) {
            let dropped = stats.dropped();
            if dropped > reported && write_line(&mut sink, &notice_line(notice, dropped), stats) {
                reported = dropped;
            }
        }
        let line = shown(notice, line);
        if stats.broken.load(Ordering::Relaxed) || !write_line(&mut sink, &line, stats) {
            stats.failed.fetch_add(1, Ordering::Relaxed);
        }
        stats.pending.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A line with nothing a terminal would act on: text as `crate::shown`
/// shows it, a JSON line with those characters `\u`-escaped (the same
/// value). Unchanged (not copied) in the common case.
fn shown(notice: Notice, line: Vec<u8>) -> Vec<u8> {
    let text = String::from_utf8_lossy(&line);
    let (body, end) = match text.strip_suffix('\n') {
        Some(body) => (body, "\n"),
        None => (&*text, ""),
    };
    let text_shown;
    let clean = match notice {
        Notice::Text => {
            text_shown = crate::shown::Shown::text(body);
            std::borrow::Cow::Borrowed(text_shown.as_str())
        }
        Notice::Json => crate::shown::json(body),
    };
    if clean == body && matches!(text, std::borrow::Cow::Borrowed(_)) {
        return line;
    }
    format!("{clean}{end}").into_bytes()
}

/// Writes one line; `false` if it was lost.
fn write_line<W: Write>(sink: &mut W, line: &[u8], stats: &Stats) -> bool {
    match sink.write_all(line).and_then(|()| sink.flush()) {
        Ok(()) => true,
        Err(e) => {
            if matches!(
                e.kind(),
                io::ErrorKind::BrokenPipe | io::ErrorKind::NotConnected
            ) || e.raw_os_error() == Some(9)
            {
                stats.broken.store(true, Ordering::Relaxed);
            }
            false
        }
    }
}

fn notice_line(notice: Notice, dropped: u64) -> Vec<u8> {
    match notice {
        Notice::Json => format!(
            "{{\"level\":\"WARN\",\"event\":\"log_lines_dropped\",\"total\":{dropped},\"target\":\"zeroclaw::logging\"}}\n"
        ),
        Notice::Text => format!(" WARN zeroclaw::logging: event=\"log_lines_dropped\" total={dropped}\n"),
    }
    .into_bytes()
}

/// Waits (at most `limit`) for the queued lines to be written or dropped,
/// so the last lines before exit (`shutdown`) reach a live reader.
pub fn flush(stats: &Stats, limit: Duration) {
    let deadline = Instant::now() + limit;
    while stats.pending() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A sink that records lines, or blocks, or fails, as told.
    #[derive(Clone, Default)]
    struct Sink {
        lines: Arc<Mutex<Vec<String>>>,
        fail: Arc<AtomicBool>,
        gate: Arc<Mutex<()>>,
        /// Writes begun (counted before the gate).
        entered: Arc<AtomicU64>,
    }

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.entered.fetch_add(1, Ordering::SeqCst);
            let _open = self.gate.lock().unwrap_or_else(|p| p.into_inner());
            if self.fail.load(Ordering::SeqCst) {
                return Err(io::Error::from(io::ErrorKind::BrokenPipe));
            }
            self.lines
                .lock()
                .unwrap()
                .push(String::from_utf8_lossy(buf).into_owned());
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_blocked_sink_drops_and_counts_and_then_reports_the_gap() {
        let sink = Sink::default();
        let gate = sink.gate.lock().unwrap();
        let (mut w, stats) = QueueWriter::spawn(sink.clone(), Notice::Json).unwrap();
        // The thread holds a first line, blocked on the gate, before the
        // flood (a thread that started late would otherwise report a first
        // drop count before the flood ends, and a second after it).
        w.write_all(b"first\n").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while sink.entered.load(Ordering::SeqCst) == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the thread never wrote"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        for i in 0..QUEUE_LINES + 100 {
            w.write_all(format!("line {i}\n").as_bytes()).unwrap();
        }
        // The queue takes QUEUE_LINES; the rest is dropped.
        let dropped = stats.dropped();
        assert_eq!(dropped, 100);
        drop(gate);
        flush(&stats, Duration::from_secs(5));
        assert_eq!(stats.pending(), 0);
        w.write_all(b"after\n").unwrap();
        flush(&stats, Duration::from_secs(5));
        let lines = sink.lines.lock().unwrap().clone();
        // first, the notice, the queued lines, after.
        assert_eq!(lines.len() as u64, QUEUE_LINES as u64 + 3);
        assert_eq!(lines[0], "first\n");
        let notice = lines
            .iter()
            .find(|l| l.contains("log_lines_dropped"))
            .expect("a drop notice");
        let v: serde_json::Value = serde_json::from_str(notice).unwrap();
        assert_eq!(v["total"], dropped);
        assert_eq!(lines.last().unwrap(), "after\n");
    }

    #[test]
    fn lines_are_written_as_a_terminal_may_show_them() {
        let hostile = "ok \x1b]0;t\x07\x1b[2K\r\u{9b}\u{202e}\0";
        assert_eq!(
            shown(Notice::Text, format!("a {hostile}\n").into_bytes()),
            "a ok ␛]0;t␇␛[2K␍<U+009B><U+202E>␀\n".as_bytes()
        );
        let json = serde_json::json!({"line": hostile}).to_string();
        let out = String::from_utf8(shown(Notice::Json, format!("{json}\n").into_bytes())).unwrap();
        assert_eq!(
            out,
            "{\"line\":\"ok \\u001b]0;t\\u0007\\u001b[2K\\r\\u009b\\u202e\\u0000\"}\n"
        );
        assert_eq!(shown(Notice::Text, b"plain\n".to_vec()), b"plain\n");
    }

    #[test]
    fn a_broken_sink_counts_every_line_and_never_errors_the_caller() {
        let sink = Sink::default();
        sink.fail.store(true, Ordering::SeqCst);
        let (mut w, stats) = QueueWriter::spawn(sink, Notice::Text).unwrap();
        for _ in 0..10 {
            w.write_all(b"x\n").unwrap();
        }
        flush(&stats, Duration::from_secs(5));
        assert_eq!(stats.dropped(), 10);
        assert!(stats.broken.load(Ordering::Relaxed));
    }
}
