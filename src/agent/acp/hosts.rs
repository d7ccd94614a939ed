//! The registry of ACP agent processes: one per live session (docs/agents.md
//! says why), parked here between turns, taken by the turn that runs.
//!
//! A process is started on demand by the first turn that finds none (or a
//! dead one), and stopped [`IDLE_GRACE`] after its session stops being live
//! (closed, reclaimed, killed, deleted) unless a new incarnation of the same
//! session takes it first.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::host::Host;
use super::links::LinkStore;

/// How long a process outlives its session's live incarnation.
pub const IDLE_GRACE: Duration = Duration::from_secs(5);

#[derive(Default)]
struct Table {
    parked: HashMap<String, Host>,
    /// Sessions no live incarnation holds any more.
    released: HashSet<String>,
}

/// The daemon's ACP agent processes, by our session id.
pub struct AcpHosts {
    table: Mutex<Table>,
    /// Where session ↔ agent session links are kept.
    pub links: Arc<dyn LinkStore>,
}

impl std::fmt::Debug for AcpHosts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpHosts").finish_non_exhaustive()
    }
}

impl AcpHosts {
    pub fn new(links: Arc<dyn LinkStore>) -> Arc<Self> {
        Arc::new(Self {
            table: Mutex::default(),
            links,
        })
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The parked process of `session_id`, for one turn.
    pub fn take(&self, session_id: &str) -> Option<Host> {
        let mut t = self.table();
        t.released.remove(session_id);
        t.parked.remove(session_id)
    }

    /// Parks `host` after a turn; a usable one only.
    pub fn put_back(self: &Arc<Self>, session_id: &str, mut host: Host) {
        if !host.is_usable() {
            return; // dropped: the process is stopped
        }
        let released = {
            let mut t = self.table();
            t.parked.insert(session_id.to_owned(), host);
            t.released.contains(session_id)
        };
        if released {
            self.stop_later(session_id);
        }
    }

    /// `session_id` has no live incarnation any more: its process stops
    /// after [`IDLE_GRACE`] unless a turn takes it again.
    pub fn release(self: &Arc<Self>, session_id: &str) {
        self.table().released.insert(session_id.to_owned());
        self.stop_later(session_id);
    }

    fn stop_later(self: &Arc<Self>, session_id: &str) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (hosts, id) = (Arc::downgrade(self), session_id.to_owned());
        rt.spawn(async move {
            tokio::time::sleep(IDLE_GRACE).await;
            let Some(hosts) = hosts.upgrade() else { return };
            let host = {
                let mut t = hosts.table();
                if !t.released.contains(&id) {
                    return;
                }
                t.parked.remove(&id)
            };
            if let Some(host) = host {
                tracing::info!(event = "acp_agent_stopped", session_id = %id, pid = ?host.pid, reason = "idle");
                host.kill().await;
            }
        });
    }

    /// Processes parked now (tests, status).
    pub fn parked(&self) -> usize {
        self.table().parked.len()
    }
}
