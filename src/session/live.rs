//! One live session (§1.2): its identity, its FIFO prompt queue, the
//! turn it is running, its channel registration, its retained context and
//! the approvals it is waiting for.
//!
//! The queue is a one-permit FIFO semaphore: the running turn holds the
//! permit, waiting prompts queue on it in arrival order. Ending a session
//! (close, kill, delete, replacement) closes the semaphore, so every waiting
//! prompt fails at once with the reason.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, watch, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::ChatMode;
use crate::agent::{ApprovalDecision, ContextMessage};
use crate::conn_state::Conn;
use crate::error::{ErrorData, Reason, RpcError};
use crate::memory::Charge;

/// Bytes of text a context holds (what the memory budget counts).
pub fn context_bytes(context: &[ContextMessage]) -> usize {
    context.iter().map(message_bytes).sum()
}

/// Bytes of one message's text and tool input.
pub fn message_bytes(m: &ContextMessage) -> usize {
    m.content.len() + m.tool_input.as_ref().map_or(0, |i| i.get().len())
}

fn charged(context: &[ContextMessage]) -> Charge {
    let mut c = Charge::empty();
    c.set(context_bytes(context));
    c
}

/// Prompts that may wait for a running turn (§4).
pub const MAX_QUEUED_PROMPTS: usize = 32;
/// Clients attached to one live session at once.
pub const MAX_ATTACHED_CLIENTS: usize = 16;
/// How long a prompt waits for the session.
pub const QUEUE_WAIT: Duration = Duration::from_secs(30);

/// Why a live session stopped taking turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Closed,
    Killed,
    Deleted,
}

impl Ending {
    /// The `-32000` a prompt gets from a session that ended this way.
    pub fn error(self) -> RpcError {
        match self {
            Self::Closed => RpcError::session_gone("Session closed", Reason::Closed),
            Self::Killed => RpcError::session_gone("Session killed", Reason::Killed),
            Self::Deleted => RpcError::session_gone("Session deleted", Reason::Deleted),
        }
    }
}

/// The cancellation handles of the running turn.
#[derive(Debug, Clone, Default)]
pub struct TurnSignals {
    /// Soft cancel: the backend is asked to stop; progress is finalized.
    pub soft: CancellationToken,
    /// Hard cancel (kill, delete): abort at once, finalize nothing.
    pub hard: CancellationToken,
}

#[derive(Debug)]
struct State {
    /// Shared with the running turn, which borrows it instead of copying it.
    context: Arc<Vec<ContextMessage>>,
    /// The retained context's bytes, charged to the daemon's memory budget.
    context_charge: Charge,
    always_allowed: HashSet<String>,
    channel: Option<Conn>,
    /// Clients attached with `session/attach`: empty until the
    /// first attach, so a version-1 session streams to its channel only.
    attached: Vec<Conn>,
    running: Option<TurnSignals>,
    ending: Option<Ending>,
    last_activity: Instant,
    /// An earlier checkpoint append or finalization failed: recover before the next turn.
    needs_recovery: bool,
}

/// One live session.
#[derive(Debug)]
pub struct Session {
    pub id: String,
    pub incarnation: u64,
    pub mode: ChatMode,
    pub agent_alias: String,
    /// Owner principal id.
    pub owner: String,
    /// The session's working directory.
    pub workspace_dir: PathBuf,
    /// The durable row (durable sessions only).
    pub durable_row: Option<i64>,
    gate: Arc<Semaphore>,
    waiting: AtomicUsize,
    idle: watch::Sender<bool>,
    state: Mutex<State>,
    approvals: Mutex<HashMap<String, oneshot::Sender<ApprovalDecision>>>,
    /// This live session's upload index: content hash → stored path (§8.18.4).
    uploads: Mutex<HashMap<String, PathBuf>>,
}

/// What identifies a new live session.
#[derive(Debug)]
pub struct NewSession {
    pub id: String,
    pub incarnation: u64,
    pub mode: ChatMode,
    pub agent_alias: String,
    pub owner: String,
    pub workspace_dir: PathBuf,
    pub durable_row: Option<i64>,
    pub context: Vec<ContextMessage>,
    pub channel: Conn,
}

impl Session {
    /// A live session, idle, with `channel` as its channel registration.
    pub fn new(n: NewSession) -> Arc<Self> {
        Arc::new(Self {
            id: n.id,
            incarnation: n.incarnation,
            mode: n.mode,
            agent_alias: n.agent_alias,
            owner: n.owner,
            workspace_dir: n.workspace_dir,
            durable_row: n.durable_row,
            gate: Arc::new(Semaphore::new(1)),
            waiting: AtomicUsize::new(0),
            idle: watch::Sender::new(true),
            state: Mutex::new(State {
                context_charge: charged(&n.context),
                context: Arc::new(n.context),
                always_allowed: HashSet::new(),
                channel: Some(n.channel),
                attached: Vec::new(),
                running: None,
                ending: None,
                last_activity: Instant::now(),
                needs_recovery: false,
            }),
            approvals: Mutex::default(),
            uploads: Mutex::default(),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Joins the prompt queue (§8.4 step 2) and waits for the session.
    pub async fn enqueue(&self) -> Result<OwnedSemaphorePermit, RpcError> {
        if let Ok(p) = self.gate.clone().try_acquire_owned() {
            return Ok(p);
        }
        if let Some(end) = self.ending() {
            return Err(end.error());
        }
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= MAX_QUEUED_PROMPTS {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(RpcError::SessionBusy {
                detail: "queue full",
                data: ErrorData::reason(Reason::QueueFull).with("max", MAX_QUEUED_PROMPTS),
            });
        }
        let acquired = tokio::time::timeout(QUEUE_WAIT, self.gate.clone().acquire_owned()).await;
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        match acquired {
            Ok(Ok(p)) => Ok(p),
            Ok(Err(_closed)) => Err(self.ending().unwrap_or(Ending::Closed).error()),
            Err(_) => Err(RpcError::SessionBusy {
                detail: "timed out waiting for the session",
                data: ErrorData::reason(Reason::QueueTimeout)
                    .with("wait_secs", QUEUE_WAIT.as_secs()),
            }),
        }
    }

    /// Prompts waiting in the queue.
    pub fn queued(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }

    /// Marks the turn as running with `channel` as the channel registration.
    /// The caller has confirmed, under the session lock, that this
    /// incarnation is still live and not ending.
    pub fn start_turn(&self, channel: Conn) -> TurnSignals {
        let signals = TurnSignals::default();
        let mut st = self.state();
        st.channel = Some(channel);
        st.running = Some(signals.clone());
        st.last_activity = Instant::now();
        drop(st);
        self.idle.send_replace(false);
        signals
    }

    /// The running turn is over.
    pub fn end_turn(&self) {
        let mut st = self.state();
        st.running = None;
        st.last_activity = Instant::now();
        drop(st);
        self.idle.send_replace(true);
    }

    /// Waits until no turn is running.
    pub async fn wait_idle(&self) {
        let mut rx = self.idle.subscribe();
        let _ = rx.wait_for(|idle| *idle).await;
    }

    /// Whether a turn is running.
    pub fn is_running(&self) -> bool {
        self.state().running.is_some()
    }

    /// Soft-cancels the running turn; `false` if none runs.
    pub fn soft_cancel(&self) -> bool {
        match &self.state().running {
            Some(t) => {
                t.soft.cancel();
                true
            }
            None => false,
        }
    }

    /// Hard-cancels the running turn; `false` if none runs.
    pub fn hard_cancel(&self) -> bool {
        match &self.state().running {
            Some(t) => {
                t.hard.cancel();
                t.soft.cancel();
                true
            }
            None => false,
        }
    }

    /// Stops taking turns: waiting prompts fail now, later ones at once.
    pub fn end(&self, why: Ending) {
        self.state().ending.get_or_insert(why);
        self.gate.close();
        // Approvals can no longer be answered through this session.
        self.approvals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Why the session stopped taking turns, if it did.
    pub fn ending(&self) -> Option<Ending> {
        self.state().ending
    }

    /// Idle (no turn running or queued) for at least `d`.
    pub fn idle_for(&self, d: Duration) -> bool {
        let st = self.state();
        st.running.is_none()
            && st.ending.is_none()
            && self.queued() == 0
            && st.last_activity.elapsed() >= d
    }

    /// The channel registration.
    pub fn channel(&self) -> Option<Conn> {
        self.state().channel.clone()
    }

    /// Unregisters the channel and every attached client.
    pub fn clear_channel(&self) {
        let mut st = self.state();
        st.channel = None;
        st.attached.clear();
    }

    /// Attaches `conn` as a further client: the first attach also
    /// attaches the channel, so the session's clients so far keep their
    /// stream. Closed connections are dropped first. `Err(max)` when
    /// [`MAX_ATTACHED_CLIENTS`] are attached. Returns how many are attached.
    pub fn attach(&self, conn: &Conn) -> Result<usize, usize> {
        let mut st = self.state();
        let st = &mut *st;
        st.attached.retain(|c| c.hears());
        if st.attached.is_empty() {
            if let Some(ch) = st.channel.as_ref().filter(|c| c.hears()) {
                st.attached.push(ch.clone());
            }
        }
        if !st.attached.iter().any(|c| c.id == conn.id) {
            if st.attached.len() >= MAX_ATTACHED_CLIENTS {
                return Err(MAX_ATTACHED_CLIENTS);
            }
            st.attached.push(conn.clone());
        }
        Ok(st.attached.len())
    }

    /// Whether a connection other than `conn` still uses the session: its
    /// channel or an attached client, open (`session/new` on such
    /// a session joins it instead of replacing it).
    pub fn used_by_another(&self, conn: &Conn) -> bool {
        let st = self.state();
        let other = |c: &Conn| c.id != conn.id && c.hears();
        st.channel.as_ref().is_some_and(other) || st.attached.iter().any(other)
    }

    /// Forgets connection `id` as the channel and as an attached client: a
    /// revocation cut it off (`state::revocation`).
    pub fn detach(&self, id: u64) {
        let mut st = self.state();
        st.attached.retain(|c| c.id != id);
        if st.channel.as_ref().is_some_and(|c| c.id == id) {
            st.channel = None;
        }
    }

    /// Whether any client attached with `session/attach`.
    pub fn has_attached(&self) -> bool {
        !self.state().attached.is_empty()
    }

    /// Where an update of a turn prompted on `prompter` goes: `prompter`
    /// first, then [`Session::others`].
    pub fn audience(&self, prompter: &Conn) -> Vec<Conn> {
        let mut to = vec![prompter.clone()];
        to.extend(self.others(prompter));
        to
    }

    /// Every attached client still open other than `prompter`, in attach
    /// order: empty, without allocating, for a session nobody attached to
    /// (the per-update path of every turn).
    pub fn others(&self, prompter: &Conn) -> Vec<Conn> {
        self.state()
            .attached
            .iter()
            .filter(|c| c.id != prompter.id && c.hears())
            .cloned()
            .collect()
    }

    /// The retained context, shared (not copied). Drop it
    /// before [`Session::extend_context`], which copies a context still shared.
    pub fn context(&self) -> Arc<Vec<ContextMessage>> {
        self.state().context.clone()
    }

    /// Replaces the retained context.
    pub fn set_context(&self, context: Vec<ContextMessage>) {
        let mut st = self.state();
        st.context = Arc::new(context);
        let bytes = context_bytes(&st.context);
        st.context_charge.set(bytes);
    }

    /// Appends to the retained context.
    pub fn extend_context(&self, more: Vec<ContextMessage>) {
        let mut st = self.state();
        Arc::make_mut(&mut st.context).extend(more);
        let bytes = context_bytes(&st.context);
        st.context_charge.set(bytes);
    }

    /// Tools approved with `allow_always` in this live session.
    pub fn always_allowed(&self) -> HashSet<String> {
        self.state().always_allowed.clone()
    }

    /// Remembers an `allow_always` for `tool`.
    pub fn allow_always(&self, tool: &str) {
        self.state().always_allowed.insert(tool.to_owned());
    }

    /// Flags that a checkpoint is left over and must be recovered before the next turn.
    pub fn set_needs_recovery(&self, yes: bool) {
        self.state().needs_recovery = yes;
    }

    /// Whether a leftover checkpoint must be recovered first.
    pub fn needs_recovery(&self) -> bool {
        self.state().needs_recovery
    }

    /// Waits for the decision on approval `request_id`.
    pub fn await_approval(&self, request_id: &str) -> oneshot::Receiver<ApprovalDecision> {
        let (tx, rx) = oneshot::channel();
        self.approvals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(request_id.to_owned(), tx);
        rx
    }

    /// Delivers a decision; `false` when nothing with that id is pending.
    pub fn decide(&self, request_id: &str, decision: ApprovalDecision) -> bool {
        let tx = self
            .approvals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(request_id);
        tx.is_some_and(|tx| tx.send(decision).is_ok())
    }

    /// Where content `sha` was stored for this session, if it was.
    pub fn indexed_upload(&self, sha: &str) -> Option<PathBuf> {
        self.uploads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(sha)
            .cloned()
    }

    /// Indexes content `sha` at `path`.
    pub fn index_upload(&self, sha: &str, path: &std::path::Path) {
        self.uploads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(sha.to_owned(), path.to_owned());
    }

    /// Forgets approval `request_id` (timed out or abandoned).
    pub fn forget_approval(&self, request_id: &str) {
        self.approvals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(request_id);
    }
}
