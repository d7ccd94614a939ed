//! The daemon's stderr as it arrives: every line kept, JSON lines parsed
//! into events, and a bounded wait for the event a test expects.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

#[derive(Debug, Default)]
struct LogState {
    lines: Vec<String>,
    closed: bool,
}

/// The daemon's stderr, line by line, as it arrives.
#[derive(Debug, Clone, Default)]
pub struct Log {
    inner: Arc<(Mutex<LogState>, Condvar)>,
}

impl Log {
    pub(super) fn push(&self, line: String) {
        let (m, cv) = &*self.inner;
        m.lock().unwrap().lines.push(line);
        cv.notify_all();
    }

    pub(super) fn close(&self) {
        let (m, cv) = &*self.inner;
        m.lock().unwrap().closed = true;
        cv.notify_all();
    }

    /// Every line so far.
    pub fn lines(&self) -> Vec<String> {
        self.inner.0.lock().unwrap().lines.clone()
    }

    /// Every line so far, joined.
    pub fn text(&self) -> String {
        self.lines().join("\n")
    }

    /// How many lines have arrived.
    pub fn len(&self) -> usize {
        self.inner.0.lock().unwrap().lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The lines that are JSON objects, parsed.
    pub fn events(&self) -> Vec<Value> {
        self.lines()
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(Value::is_object)
            .collect()
    }

    /// The events whose `event` member is `name`.
    pub fn events_named(&self, name: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["event"] == name)
            .collect()
    }

    /// Waits for a JSON line at index `from` or later that satisfies `pred`;
    /// returns its index and value, or `None` after `timeout` (or once the
    /// log is closed without a match).
    pub fn wait_for(
        &self,
        from: usize,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Option<(usize, Value)> {
        let deadline = Instant::now() + timeout;
        let (m, cv) = &*self.inner;
        let mut st = m.lock().unwrap();
        let mut next = from;
        loop {
            while next < st.lines.len() {
                if let Ok(v) = serde_json::from_str::<Value>(&st.lines[next]) {
                    if pred(&v) {
                        return Some((next, v));
                    }
                }
                next += 1;
            }
            let now = Instant::now();
            if st.closed || now >= deadline {
                return None;
            }
            st = cv.wait_timeout(st, deadline - now).unwrap().0;
        }
    }

    /// Waits for an event named `name`, from line `from` on.
    pub fn wait_event(&self, from: usize, name: &str, timeout: Duration) -> Option<(usize, Value)> {
        self.wait_for(from, timeout, |v| v["event"] == name)
    }
}
