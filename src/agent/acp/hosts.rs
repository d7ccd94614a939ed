//! The registry of ACP agent processes: one per live session (docs/agents.md
//! says why), parked here between turns, taken by the turn that runs.
//!
//! A process is started on demand by the first turn that finds none (or a
//! dead one), and stopped [`IDLE_GRACE`] after its session stops being live
//! (closed, reclaimed, killed, deleted) unless a new incarnation of the same
//! session takes it first.
//!
//! Only sessions that ran a turn here, and only while they are live or have
//! a process parked, are remembered: a daemon serves many sessions that
//! never start an agent process (every echo or chat turn ends as a release),
//! and each of those must leave nothing behind.

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
    /// Sessions a live incarnation holds that have taken (or asked for) a
    /// process; a process parked for any other session is stopped after
    /// the grace.
    live: HashSet<String>,
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

    /// The parked process of `session_id`, for one turn. Only a live
    /// session runs turns, so `session_id` is live until [`Self::release`].
    pub fn take(&self, session_id: &str) -> Option<Host> {
        let mut t = self.table();
        if !t.live.contains(session_id) {
            t.live.insert(session_id.to_owned());
        }
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
            !t.live.contains(session_id)
        };
        if released {
            self.stop_later(session_id);
        }
    }

    /// `session_id` has no live incarnation any more: its process stops
    /// after [`IDLE_GRACE`] unless a turn takes it again. Without a parked
    /// process nothing is kept: a turn that still holds one parks it as
    /// released, which starts the grace then.
    pub fn release(self: &Arc<Self>, session_id: &str) {
        let parked = {
            let mut t = self.table();
            t.live.remove(session_id);
            t.parked.contains_key(session_id)
        };
        if parked {
            self.stop_later(session_id);
        }
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
                if t.live.contains(&id) {
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

    /// Sessions remembered now, parked or live (tests).
    #[cfg(test)]
    fn remembered(&self) -> usize {
        let t = self.table();
        t.live.len() + t.parked.keys().filter(|k| !t.live.contains(*k)).count()
    }
}

#[cfg(test)]
mod tests {
    use futures_util::future::BoxFuture;

    use super::super::links::Link;
    use super::*;

    struct NoLinks;

    impl LinkStore for NoLinks {
        fn get<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Option<Link>, String>> {
            Box::pin(async { Ok(None) })
        }
        fn set<'a>(
            &'a self,
            _: &'a str,
            _: &'a str,
            _: &'a str,
            _: bool,
        ) -> BoxFuture<'a, Result<(), String>> {
            Box::pin(async { Ok(()) })
        }
    }

    #[tokio::test]
    async fn sessions_without_a_process_leave_nothing_behind() {
        let hosts = AcpHosts::new(Arc::new(NoLinks));
        // Every live session is released when it ends, whatever its backend.
        for i in 0..1000 {
            hosts.release(&format!("s-{i}"));
        }
        assert_eq!(hosts.remembered(), 0);
    }

    #[tokio::test]
    async fn a_session_that_asked_for_a_process_is_forgotten_when_released() {
        let hosts = AcpHosts::new(Arc::new(NoLinks));
        for i in 0..1000 {
            let id = format!("s-{i}");
            // A turn that found no process (its start failed: nothing to put back).
            assert!(hosts.take(&id).is_none());
            assert_eq!(hosts.remembered(), 1);
            hosts.release(&id);
        }
        assert_eq!(hosts.remembered(), 0);
        assert_eq!(hosts.parked(), 0);
    }
}
