//! The running configuration and its one write path (§8.16 steps 2,
//! 8 and 9, §6.8): the config write lock, the atomic commit of
//! `config.toml`, and the installation of what derives from it.
//!
//! Lock order (§6.8): this write lock is lock (1). A commit that changes
//! the policy or the token set takes the authorization-state lock (3) for
//! writing only to install the new state, after the file is committed.
//! A hand edit reloaded (`reload.rs`) is installed the same way.

mod reload;
mod view;
mod writes;

pub use writes::{Paired, Writer};

pub use reload::{Reloaded, Stamp};

use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::{Mutex as AsyncMutex, MutexGuard};

use crate::authz::AuthzState;
use crate::config::{Config, ConfigError, ConfigStore, Policy};
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
    /// whole candidate in step 7). `touched` are the props the request
    /// named: the file is edited in place, and they are written even when
    /// their value does not change. On failure nothing changes.
    pub async fn commit(
        &self,
        lock: &WriteLock<'_>,
        candidate: Config,
        policy: Policy,
        touched: &[String],
    ) -> Result<(), RpcError> {
        let candidate = Arc::new(candidate);
        let to_write = candidate.clone();
        let touched = touched.to_vec();
        self.persist(move |store| store.commit(&to_write, &touched))
            .await?;
        self.install(lock, candidate, policy).await;
        Ok(())
    }

    /// `config/replace`: persists `text` whole (the caller checked that it
    /// loads as `candidate`) when the file still holds the bytes whose
    /// SHA-256 is `base_sha256`, then installs it like a commit.
    pub async fn replace(
        &self,
        lock: &WriteLock<'_>,
        text: String,
        base_sha256: &str,
        candidate: Config,
        policy: Policy,
    ) -> Result<(), RpcError> {
        let base = crate::hex::sha256(&self.last_bytes());
        if !base.eq_ignore_ascii_case(base_sha256) {
            return Err(crate::config::ConfigError::ConfigChanged.into());
        }
        self.persist(move |store| store.commit_text(text)).await?;
        self.install(lock, Arc::new(candidate), policy).await;
        Ok(())
    }

    /// The bytes of `config.toml` as this daemon last read or wrote them.
    pub fn last_bytes(&self) -> Vec<u8> {
        self.store
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .last_bytes()
            .to_vec()
    }

    /// The path of `config.toml`.
    pub fn path(&self) -> std::path::PathBuf {
        self.store.lock().unwrap_or_else(|p| p.into_inner()).path()
    }

    /// Runs one write of the store off the async workers (it locks a file
    /// and fsyncs), with the `config_commit` fault point armed as set.
    async fn persist(
        &self,
        write: impl FnOnce(&mut ConfigStore) -> Result<(), ConfigError> + Send + 'static,
    ) -> Result<(), RpcError> {
        let store = self.store.clone();
        let fail = self.faults.is_active(FaultPoint::ConfigCommit);
        tokio::task::spawn_blocking(move || {
            let mut store = store.lock().unwrap_or_else(|p| p.into_inner());
            store.fail_commit = fail;
            write(&mut store)
        })
        .await
        .map_err(|e| RpcError::storage(format!("Config save failed: {e}")))??;
        Ok(())
    }

    /// Step 9: `candidate` becomes the running config, with what derives
    /// from it (memory budget, masked secrets, the policy and tokens).
    async fn install(&self, _lock: &WriteLock<'_>, candidate: Arc<Config>, policy: Policy) {
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
