//! Every connection being served, so that a policy change can reach the
//! ones it revokes at once (`revocation`) instead of at their next request.
//!
//! Connections register for as long as the connection driver runs them;
//! the table holds weak references, so it never keeps one alive.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::conn_state::{Conn, ConnCtx};

/// The table of connections being served.
#[derive(Debug, Default)]
pub struct LiveConns {
    table: Mutex<HashMap<u64, Weak<ConnCtx>>>,
}

impl LiveConns {
    fn table(&self) -> MutexGuard<'_, HashMap<u64, Weak<ConnCtx>>> {
        // Each mutation is one call: a poisoned table is still consistent.
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Lists `conn` until the returned registration is dropped.
    pub fn register<'a>(&'a self, conn: &Conn) -> Registration<'a> {
        self.table().insert(conn.id, Arc::downgrade(conn));
        Registration {
            conns: self,
            id: conn.id,
        }
    }

    /// The connections being served now.
    pub fn snapshot(&self) -> Vec<Conn> {
        self.table().values().filter_map(Weak::upgrade).collect()
    }
}

/// A connection's place in [`LiveConns`].
#[derive(Debug)]
pub struct Registration<'a> {
    conns: &'a LiveConns,
    id: u64,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.conns.table().remove(&self.id);
    }
}
