//! The running configuration and its one write path (§8.16 steps 2,
//! 8 and 9, §6.8): the config write lock, the atomic commit of
//! `config.toml`, and the installation of what derives from it.
//!
//! Lock order (§6.8): this write lock is lock (1). A commit that changes
//! the policy or the token set takes the authorization-state lock (3) for
//! writing only to install the new state, after the file is committed.

use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::{Mutex as AsyncMutex, MutexGuard};

use crate::authz::AuthzState;
use crate::config::{Config, ConfigStore, Policy};
use crate::error::RpcError;
use crate::faults::{FaultPoint, Faults};

/// The running configuration of one daemon.
#[derive(Debug)]
pub struct LiveConfig {
    write_lock: AsyncMutex<()>,
    store: Arc<Mutex<ConfigStore>>,
    running: RwLock<Arc<Config>>,
    authz: Arc<AuthzState>,
    faults: Arc<Faults>,
}

/// Proof that the caller holds the config write lock.
#[derive(Debug)]
pub struct WriteLock<'a>(#[allow(dead_code)] MutexGuard<'a, ()>);

impl LiveConfig {
    /// The configuration loaded at startup.
    pub fn new(
        store: ConfigStore,
        config: Config,
        authz: Arc<AuthzState>,
        faults: Arc<Faults>,
    ) -> Self {
        install_secrets(&config);
        Self {
            write_lock: AsyncMutex::new(()),
            store: Arc::new(Mutex::new(store)),
            running: RwLock::new(Arc::new(config)),
            authz,
            faults,
        }
    }

    /// The running configuration.
    pub fn current(&self) -> Arc<Config> {
        self.running
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Takes the config write lock (lock (1) of §6.8).
    pub async fn lock(&self) -> WriteLock<'_> {
        WriteLock(self.write_lock.lock().await)
    }

    /// Steps 8–9: persists `candidate` atomically, then installs it and the
    /// policy derived from it (`policy`, prepared by the caller from the
    /// whole candidate in step 7). On failure nothing changes.
    pub async fn commit(
        &self,
        _lock: &WriteLock<'_>,
        candidate: Config,
        policy: Policy,
    ) -> Result<(), RpcError> {
        let store = self.store.clone();
        let fail = self.faults.is_active(FaultPoint::ConfigCommit);
        let candidate = Arc::new(candidate);
        let to_write = candidate.clone();
        // The commit locks a file and fsyncs: keep it off the async workers.
        tokio::task::spawn_blocking(move || {
            let mut store = store.lock().unwrap_or_else(|p| p.into_inner());
            store.fail_commit = fail;
            store.commit(&to_write)
        })
        .await
        .map_err(|e| RpcError::storage(format!("Config save failed: {e}")))??;

        let previous = std::mem::replace(
            &mut *self.running.write().unwrap_or_else(|p| p.into_inner()),
            candidate.clone(),
        );
        crate::memory::apply_config(candidate.daemon.memory_budget_mib);
        install_secrets(&candidate);
        let tokens_changed = previous.gateway.paired_tokens != candidate.gateway.paired_tokens;
        if tokens_changed || Policy::from_config(&previous) != policy {
            // Lock (3), for writing, only to install (§6.8).
            let _installing = self.authz.state_lock.write().await;
            self.authz
                .install(policy, candidate.gateway.paired_tokens.clone());
        }
        Ok(())
    }
}

/// Installs `config`'s secrets as the ones logs and answers mask (at
/// startup and at each commit: an agent's new key is masked from then on).
pub fn install_secrets(config: &Config) {
    let values = crate::config::secret_values(
        config,
        |name| std::env::var(name).ok(),
        |path| crate::agent::openai_api_key_from_file(std::path::Path::new(path)).ok(),
    );
    crate::logging::secrets::install(values);
}

/// 32 random bytes from the operating system.
pub fn random_bytes() -> Result<[u8; 32], RpcError> {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).map_err(|e| RpcError::internal(format!("no randomness: {e}"), None))?;
    Ok(b)
}
