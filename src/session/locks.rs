//! Per-session-id locks (§1.2 "session lock", §6.8 lock (2)).
//!
//! Lifecycle changes of one id (create, replace, rehydrate, recovery,
//! close, kill, delete, idle reclamation) and the store step of uploads
//! serialize on it. A lock exists only while someone holds or awaits it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

/// The lock table.
#[derive(Debug, Default)]
pub struct SessionLocks {
    table: Mutex<HashMap<String, Weak<AsyncMutex<()>>>>,
}

/// A held session lock.
#[derive(Debug)]
pub struct SessionGuard(#[allow(dead_code)] OwnedMutexGuard<()>);

impl SessionLocks {
    /// Takes the lock of `id`, waiting for its holder.
    pub async fn lock(&self, id: &str) -> SessionGuard {
        let lock = {
            let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
            match table.get(id).and_then(Weak::upgrade) {
                Some(lock) => lock,
                None => {
                    // Forget locks nobody holds any more, so the table stays small.
                    if table.len() > 64 {
                        table.retain(|_, w| w.strong_count() > 0);
                    }
                    let lock = Arc::new(AsyncMutex::new(()));
                    table.insert(id.to_owned(), Arc::downgrade(&lock));
                    lock
                }
            }
        };
        SessionGuard(lock.lock_owned().await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn same_id_serializes_other_ids_do_not() {
        let locks = Arc::new(SessionLocks::default());
        let a = locks.lock("a").await;
        let _b = locks.lock("b").await; // another id: free
        let l2 = locks.clone();
        let waiter = tokio::spawn(async move { l2.lock("a").await });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(a);
        waiter.await.unwrap();
    }
}
