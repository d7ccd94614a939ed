//! Staged chunked uploads (§8.18.1–§8.18.3, §4): who owns them, what
//! they are bound to, and the daemon-wide budget.
//!
//! Every upload is registered daemon-wide, so the 256 MiB budget and the
//! reclaiming of idle uploads can see all connections, but it is visible
//! only to the connection that began it: another connection naming its id
//! gets `unknown_upload`, exactly as for an id that never existed. Each
//! upload has its own lock, which serializes its chunks and its commit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Mutex as AsyncMutex;

use super::upload::{unknown, Appended, Upload};
use super::FileToStore;
use crate::error::{LimitName, RpcError};
use crate::limits::MAX_STAGED_UPLOADS;
use crate::memory::{budget, Charge};
use crate::session::Session;

/// Bytes of staged data (payload + retained metadata) daemon-wide.
pub const STAGED_BYTES_MAX: usize = 256 * 1024 * 1024;
/// Fixed cost charged per upload on top of its size and metadata.
pub const UPLOAD_OVERHEAD: usize = 256;

/// What an upload or attachment is bound to at begin (§8.18.1): one
/// incarnation of one session. Not `authz::Binding` (who the caller is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadTarget {
    pub session_id: String,
    pub incarnation: u64,
    pub owner: String,
    pub agent_alias: String,
}

impl UploadTarget {
    /// This incarnation of `session`: what an upload or attachment is bound to.
    pub fn of(session: &Session) -> Self {
        Self {
            session_id: session.id.clone(),
            incarnation: session.incarnation,
            owner: session.owner.clone(),
            agent_alias: session.agent_alias.clone(),
        }
    }
}

#[derive(Debug)]
struct Entry {
    conn: u64,
    charge: usize,
    /// The metadata's share of the memory budget (the upload charges its bytes).
    _memory: Charge,
    last_active: Instant,
    upload: Arc<AsyncMutex<Upload>>,
}

#[derive(Debug, Default)]
struct State {
    entries: HashMap<String, Entry>,
    charged: usize,
}

/// The registry of staged uploads.
#[derive(Debug, Default)]
pub struct Staging {
    state: Mutex<State>,
}

impl Staging {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a new upload of connection `conn` (§8.18.1: count,
    /// then budget, then the daemon-wide memory budget); its id.
    pub fn begin(
        &self,
        conn: u64,
        upload: Upload,
        idle_limit: Duration,
    ) -> Result<String, RpcError> {
        let metadata = upload.metadata_bytes() + UPLOAD_OVERHEAD;
        let charge = upload.size() + metadata;
        let mut st = self.state();
        if st.entries.values().filter(|e| e.conn == conn).count() >= MAX_STAGED_UPLOADS {
            return Err(RpcError::LimitExceeded {
                limit: LimitName::UploadsPerConnection,
                max: MAX_STAGED_UPLOADS as u64,
            });
        }
        if st.charged + charge > STAGED_BYTES_MAX {
            // Idle uploads are reclaimed first, even if their connection is open.
            Self::drop_where(&mut st, |e| e.last_active.elapsed() > idle_limit);
        }
        if st.charged + charge > STAGED_BYTES_MAX {
            return Err(RpcError::LimitExceeded {
                limit: LimitName::StagedBytes,
                max: STAGED_BYTES_MAX as u64,
            });
        }
        let memory = budget().try_charge(metadata)?;
        let id = new_upload_id();
        st.charged += charge;
        st.entries.insert(
            id.clone(),
            Entry {
                conn,
                charge,
                _memory: memory,
                last_active: Instant::now(),
                upload: Arc::new(AsyncMutex::new(upload)),
            },
        );
        Ok(id)
    }

    /// Appends a chunk to upload `id` of connection `conn` (§8.18.2). An
    /// accepted or duplicate chunk is activity; a refused one is not.
    pub async fn append(
        &self,
        conn: u64,
        id: &str,
        offset: u64,
        bytes: &[u8],
    ) -> Result<Appended, RpcError> {
        let upload = self.get(conn, id)?;
        let appended = upload.lock().await.append(offset, bytes)?;
        self.touch(id);
        Ok(appended)
    }

    /// Commits upload `id` of connection `conn` (§8.18.3): once complete it
    /// leaves the registry whatever follows; what it is bound to and the file
    /// to store, if its hash matches.
    pub async fn commit(
        &self,
        conn: u64,
        id: &str,
    ) -> Result<(UploadTarget, FileToStore), RpcError> {
        let upload = self.get(conn, id)?;
        let taken = upload.lock().await.take()?;
        self.release(id);
        taken.verify()
    }

    /// The upload `id` of connection `conn`. Looking it up is not activity:
    /// only begin and accepted (or duplicate) chunks are (§8.18.1).
    fn get(&self, conn: u64, id: &str) -> Result<Arc<AsyncMutex<Upload>>, RpcError> {
        match self.state().entries.get(id) {
            Some(e) if e.conn == conn => Ok(e.upload.clone()),
            _ => Err(unknown()),
        }
    }

    fn touch(&self, id: &str) {
        if let Some(e) = self.state().entries.get_mut(id) {
            e.last_active = Instant::now();
        }
    }

    fn release(&self, id: &str) {
        let mut st = self.state();
        if let Some(e) = st.entries.remove(id) {
            st.charged -= e.charge;
        }
    }

    /// Drops every upload of a closed connection.
    pub fn drop_connection(&self, conn: u64) {
        Self::drop_where(&mut self.state(), |e| e.conn == conn);
    }

    /// Drops every upload idle for more than `idle_limit` (the periodic sweep).
    pub fn sweep(&self, idle_limit: Duration) -> usize {
        Self::drop_where(&mut self.state(), |e| e.last_active.elapsed() > idle_limit)
    }

    /// Bytes charged now.
    pub fn charged(&self) -> usize {
        self.state().charged
    }

    fn drop_where(st: &mut State, pred: impl Fn(&Entry) -> bool) -> usize {
        let gone: Vec<String> = st
            .entries
            .iter()
            .filter(|(_, e)| pred(e))
            .map(|(k, _)| k.clone())
            .collect();
        for id in &gone {
            if let Some(e) = st.entries.remove(id) {
                st.charged -= e.charge;
                // A chunk or commit holding the upload's lock sees it released.
                if let Ok(mut u) = e.upload.try_lock() {
                    u.release();
                }
            }
        }
        gone.len()
    }
}

/// `upl_` + 32 lowercase hex digits.
fn new_upload_id() -> String {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        b = crate::session::new_uuid().into_bytes()[..16]
            .try_into()
            .unwrap_or([7; 16]);
    }
    format!("upl_{}", crate::hex::lower(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upload(size: usize) -> Upload {
        super::super::upload::tests::upload(size as u64)
    }

    #[test]
    fn per_connection_count_budget_and_visibility() {
        let s = Staging::default();
        let idle = Duration::from_secs(300);
        let ids: Vec<String> = (0..4)
            .map(|_| s.begin(1, upload(10), idle).unwrap())
            .collect();
        assert!(ids[0].starts_with("upl_") && ids[0].len() == 36);
        assert_eq!(
            s.begin(1, upload(10), idle).unwrap_err(),
            RpcError::LimitExceeded {
                limit: LimitName::UploadsPerConnection,
                max: 4
            }
        );
        assert!(s.get(1, &ids[0]).is_ok());
        assert_eq!(
            s.get(2, &ids[0]).unwrap_err(),
            unknown(),
            "another connection cannot see it"
        );
        // Charge: size + metadata ("s", "o", "echo", "upload") + overhead.
        assert_eq!(s.charged(), 4 * (10 + 1 + 1 + 4 + 6 + UPLOAD_OVERHEAD));
        s.drop_connection(1);
        assert_eq!(s.charged(), 0);
        assert_eq!(s.get(1, &ids[1]).unwrap_err(), unknown());
    }

    #[test]
    fn over_budget_reclaims_idle_uploads_first() {
        let s = Staging::default();
        let big = crate::limits::UPLOAD_MAX_BYTES;
        // One 10 MiB upload on each of 25 connections: 250 MiB and metadata.
        for conn in 0..25 {
            s.begin(conn, upload(big), Duration::from_secs(300))
                .unwrap();
        }
        assert_eq!(
            s.begin(30, upload(big), Duration::from_secs(300))
                .unwrap_err(),
            RpcError::LimitExceeded {
                limit: LimitName::StagedBytes,
                max: STAGED_BYTES_MAX as u64
            }
        );
        // With a zero idle limit every existing upload is idle: they are reclaimed.
        std::thread::sleep(Duration::from_millis(5));
        s.begin(30, upload(big), Duration::ZERO).unwrap();
        assert_eq!(s.sweep(Duration::from_secs(300)), 0);
    }
}
