//! The daemon's own log records, kept for clients (`logs/query`,
//! `logs/subscribe`): a `tracing_subscriber::Layer` that turns each event
//! into a [`Record`], keeps the newest [`RING_RECORDS`] in a ring and hands
//! each to the subscribers that may see it.
//!
//! Nothing here waits: the layer takes two short mutexes per event and never
//! touches a connection. Each subscriber has its own bounded queue; when it
//! is full the oldest record goes and is counted, and the subscriber's
//! delivery task tells its client how many before the next record.

use std::collections::{HashSet, VecDeque};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value};
use tokio::sync::Notify;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::Layer;

/// Records kept for `logs/query`.
pub const RING_RECORDS: usize = 2048;
/// Records one subscriber may have waiting for delivery.
pub const SUBSCRIBER_QUEUE: usize = 256;
/// A record's message and string fields are cut to this many bytes.
const MAX_TEXT: usize = 2048;

/// One captured log event.
#[derive(Debug, Clone)]
pub struct Record {
    /// Daemon-unique, increasing from 1.
    pub seq: u64,
    /// RFC 3339 UTC.
    pub timestamp: String,
    pub level: Level,
    /// The module path (`zeroclaw::session::lifecycle`).
    pub target: String,
    /// The `event` field (`session_created`), or empty.
    pub action: String,
    /// The free-text message, or empty.
    pub message: String,
    /// The `conn` field: the connection it is about.
    pub conn: Option<u64>,
    pub session_id: Option<String>,
    pub principal_id: Option<String>,
    /// Every other field.
    pub attributes: Map<String, Value>,
}

impl Record {
    /// The OpenTelemetry severity number (TRACE 1, DEBUG 5, INFO 9, WARN 13, ERROR 17).
    pub fn severity_number(&self) -> u8 {
        match self.level {
            Level::TRACE => 1,
            Level::DEBUG => 5,
            Level::INFO => 9,
            Level::WARN => 13,
            Level::ERROR => 17,
        }
    }

    /// `session` for `zeroclaw::session::lifecycle`, `initialize` for
    /// `zeroclaw::services::initialize`: the daemon's subsystem.
    pub fn category(&self) -> &str {
        let mut parts = self.target.split("::").skip(1);
        match parts.next() {
            Some("services" | "layers") => parts.next().unwrap_or(&self.target),
            Some(p) => p,
            None => &self.target,
        }
    }
}

/// Who a subscription or query may see (§6: admins see everything).
#[derive(Debug, Clone)]
pub enum Scope {
    All,
    /// The caller's connection, principal and sessions.
    Own {
        conn: u64,
        principal_id: String,
    },
}

/// One `logs/subscribe`.
#[derive(Debug)]
pub struct Subscription {
    scope: Scope,
    /// Sessions whose records this subscriber sees (learnt as they appear).
    sessions: Mutex<HashSet<String>>,
    queue: Mutex<VecDeque<Arc<Record>>>,
    lost: AtomicU64,
    /// Woken when a record is queued.
    pub ready: Notify,
}

impl Subscription {
    /// Whether the subscriber may see `r`; learns `r`'s session if it is the caller's.
    fn admits(&self, r: &Record) -> bool {
        match &self.scope {
            Scope::All => true,
            Scope::Own { conn, principal_id } => {
                let mine = r.conn == Some(*conn) || r.principal_id.as_deref() == Some(principal_id);
                let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
                match &r.session_id {
                    Some(s) if mine => {
                        sessions.insert(s.clone());
                        true
                    }
                    Some(s) => sessions.contains(s),
                    None => mine,
                }
            }
        }
    }

    fn push(&self, r: &Arc<Record>) {
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        if q.len() >= SUBSCRIBER_QUEUE {
            q.pop_front();
            self.lost.fetch_add(1, Ordering::Relaxed);
        }
        q.push_back(r.clone());
        drop(q);
        self.ready.notify_one();
    }

    /// What is waiting: the records lost since the last take, and the queued records.
    pub fn take(&self) -> (u64, Vec<Arc<Record>>) {
        let records: Vec<_> = self
            .queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect();
        (self.lost.swap(0, Ordering::Relaxed), records)
    }
}

/// The ring and the subscribers.
#[derive(Debug, Default)]
pub struct Capture {
    seq: AtomicU64,
    ring: Mutex<VecDeque<Arc<Record>>>,
    subscribers: Mutex<Vec<Arc<Subscription>>>,
}

impl Capture {
    /// The process-wide capture the layer feeds (empty where no layer is installed).
    pub fn global() -> &'static Capture {
        static CAPTURE: OnceLock<Capture> = OnceLock::new();
        CAPTURE.get_or_init(Capture::default)
    }

    /// Keeps and distributes one record (its `seq` is assigned here).
    pub fn record(&self, mut r: Record) {
        r.seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let r = Arc::new(r);
        {
            let mut ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
            if ring.len() >= RING_RECORDS {
                ring.pop_front();
            }
            ring.push_back(r.clone());
        }
        let subs = self.subscribers.lock().unwrap_or_else(|p| p.into_inner());
        for s in subs.iter().filter(|s| s.admits(&r)) {
            s.push(&r);
        }
    }

    /// A new subscription for `scope`, seeded with the caller's sessions.
    pub fn subscribe(&self, scope: Scope, sessions: Vec<String>) -> Arc<Subscription> {
        let sub = Arc::new(Subscription {
            scope,
            sessions: Mutex::new(sessions.into_iter().collect()),
            queue: Mutex::new(VecDeque::new()),
            lost: AtomicU64::new(0),
            ready: Notify::new(),
        });
        self.subscribers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(sub.clone());
        sub
    }

    /// Ends a subscription.
    pub fn unsubscribe(&self, sub: &Arc<Subscription>) {
        self.subscribers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|s| !Arc::ptr_eq(s, sub));
    }

    /// The kept records, newest first, that `scope` (with `sessions`) may see and `keep` accepts.
    pub fn query(
        &self,
        scope: &Scope,
        sessions: &HashSet<String>,
        mut keep: impl FnMut(&Record) -> bool,
    ) -> Vec<Arc<Record>> {
        let ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        ring.iter()
            .rev()
            .filter(|r| match scope {
                Scope::All => true,
                Scope::Own { conn, principal_id } => {
                    r.conn == Some(*conn)
                        || r.principal_id.as_deref() == Some(principal_id)
                        || r.session_id.as_ref().is_some_and(|s| sessions.contains(s))
                }
            })
            .filter(|r| keep(r))
            .cloned()
            .collect()
    }
}

/// The layer that feeds [`Capture::global`].
#[derive(Debug, Default)]
pub struct CaptureLayer;

impl<S: Subscriber> Layer<S> for CaptureLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let meta = event.metadata();
        let mut r = Record {
            seq: 0,
            timestamp: crate::store::utc_now(),
            level: *meta.level(),
            target: meta.target().to_owned(),
            action: String::new(),
            message: String::new(),
            conn: None,
            session_id: None,
            principal_id: None,
            attributes: Map::new(),
        };
        event.record(&mut Fields(&mut r));
        Capture::global().record(r);
    }
}

struct Fields<'a>(&'a mut Record);

impl Fields<'_> {
    fn text(&mut self, field: &Field, mut s: String) {
        // Masked before it is kept (and before it is cut, which could split a secret).
        if let std::borrow::Cow::Owned(masked) = super::secrets::mask_str(&s) {
            s = masked;
        }
        if s.len() > MAX_TEXT {
            let cut = crate::bounded::bound_text(&s, MAX_TEXT).into_owned();
            s = cut;
        }
        let r = &mut *self.0;
        match field.name() {
            "event" => r.action = s,
            "message" => r.message = s,
            "session_id" => r.session_id = Some(s),
            "principal_id" => r.principal_id = Some(s),
            name => {
                r.attributes.insert(name.to_owned(), Value::String(s));
            }
        }
    }
}

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.text(field, value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let mut s = String::new();
        let _ = write!(s, "{value:?}");
        self.text(field, s);
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "conn" {
            self.0.conn = Some(value);
        } else {
            self.0
                .attributes
                .insert(field.name().to_owned(), Value::from(value));
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0
            .attributes
            .insert(field.name().to_owned(), Value::from(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0
            .attributes
            .insert(field.name().to_owned(), Value::from(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(conn: Option<u64>, session: Option<&str>, principal: Option<&str>) -> Record {
        Record {
            seq: 0,
            timestamp: "2026-01-01T00:00:00Z".into(),
            level: Level::INFO,
            target: "zeroclaw::session::lifecycle".into(),
            action: "x".into(),
            message: String::new(),
            conn,
            session_id: session.map(str::to_owned),
            principal_id: principal.map(str::to_owned),
            attributes: Map::new(),
        }
    }

    #[test]
    fn the_ring_keeps_the_newest_and_numbers_from_one() {
        let c = Capture::default();
        for _ in 0..RING_RECORDS + 5 {
            c.record(rec(None, None, None));
        }
        let all = c.query(&Scope::All, &HashSet::new(), |_| true);
        assert_eq!(all.len(), RING_RECORDS);
        assert_eq!(all[0].seq, RING_RECORDS as u64 + 5);
        assert_eq!(all.last().unwrap().seq, 6);
        assert_eq!(all[0].category(), "session");
    }

    #[test]
    fn a_slow_subscriber_loses_the_oldest_and_counts_them() {
        let c = Capture::default();
        let s = c.subscribe(Scope::All, vec![]);
        for _ in 0..SUBSCRIBER_QUEUE + 7 {
            c.record(rec(None, None, None));
        }
        let (lost, records) = s.take();
        assert_eq!(lost, 7);
        assert_eq!(records.len(), SUBSCRIBER_QUEUE);
        assert_eq!(records[0].seq, 8);
        assert_eq!(s.take().0, 0);
        c.unsubscribe(&s);
        c.record(rec(None, None, None));
        assert!(s.take().1.is_empty());
    }

    #[test]
    fn a_non_admin_sees_its_connection_principal_and_sessions_only() {
        let c = Capture::default();
        let s = c.subscribe(
            Scope::Own {
                conn: 7,
                principal_id: "user:ann".into(),
            },
            vec!["old".into()],
        );
        c.record(rec(Some(7), None, None)); // own connection
        c.record(rec(Some(8), None, None)); // another connection
        c.record(rec(Some(8), Some("s1"), Some("user:ann"))); // own principal: learns s1
        c.record(rec(None, Some("s1"), None)); // s1 again, no principal
        c.record(rec(None, Some("s2"), None)); // someone else's session
        c.record(rec(None, Some("old"), None)); // seeded session
        let (_, got) = s.take();
        let seqs: Vec<u64> = got.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, vec![1, 3, 4, 6]);
    }
}
