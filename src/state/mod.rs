//! The daemon-wide state every connection shares: where things are, the
//! live authorization state, the connection count, the shutdown signal.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::authz::AuthzState;
use crate::config::{Config, ConfigStore, Policy};
use crate::faults::Faults;
use crate::files::staging::Staging;
use crate::live_config::LiveConfig;
use crate::session::Sessions;
use crate::store::Store;

mod health;
mod live_conns;
mod pairing_code;
mod prompt;
pub mod revocation;
mod status_template;
mod uptime;
pub use live_conns::{LiveConns, Registration};
pub use pairing_code::{new_code, well_formed, GuessVerdict, OpenCode, PairingCode};
pub use prompt::{DecodePrompt, PromptArgs};
pub use status_template::StatusTemplate;
pub use uptime::Uptime;

/// Resolved locations (§2.1, §2.2), as `status` reports them.
#[derive(Debug, Clone)]
pub struct Paths {
    pub config_dir: PathBuf,
    pub config_file: PathBuf,
    pub data_dir: PathBuf,
    /// The endpoint as clients name it (socket path or pipe name).
    pub endpoint: String,
}

/// How the daemon was started.
#[derive(Debug, Clone, Copy, Default)]
pub struct Flags {
    /// `--ephemeral`.
    pub ephemeral: bool,
    /// `--test-faults`.
    pub test_faults: bool,
}

/// Shared by every connection of one daemon.
#[derive(Debug)]
pub struct Daemon {
    /// Since when the daemon runs (`status`, `/health`).
    pub uptime: Uptime,
    pub paths: Paths,
    /// `--ephemeral`.
    pub ephemeral: bool,
    /// `--test-faults`.
    pub test_faults: bool,
    pub authz: Arc<AuthzState>,
    /// The running configuration and its write path.
    pub config: LiveConfig,
    /// Live sessions and their store.
    pub sessions: Sessions,
    /// Active fault points (`--test-faults`).
    pub faults: Arc<Faults>,
    /// Staged chunked uploads of every connection.
    pub staging: Staging,
    /// The constant part of `status` answers.
    pub status: StatusTemplate,
    /// Cancelled to stop accepting and begin a graceful shutdown (signals, ephemeral mode).
    pub stop: CancellationToken,
    /// Cancelled once turns have ended: closes every connection.
    pub shutdown: CancellationToken,
    connections: AtomicUsize,
    /// Local (socket / pipe) connections: the 256 limit of §4 counts only these.
    local_connections: AtomicUsize,
    conn_seq: AtomicU64,
    /// Notified whenever the connection count changes (ephemeral mode watches it).
    pub clients_changed: Notify,
    /// The gateway's open pairing code (`POST /pair`, `pairing/code`).
    pub pairing_code: PairingCode,
    /// Every connection being served (revocation reaches them at once).
    pub live_conns: LiveConns,
}

impl Daemon {
    /// What the files' verbs need of the daemon.
    pub fn file_handles(&self) -> crate::files::Handles<'_> {
        crate::files::Handles {
            sessions: &self.sessions,
            staging: &self.staging,
            authz: &self.authz,
            faults: &self.faults,
            config: &self.config,
            config_dir: &self.paths.config_dir,
        }
    }

    /// A daemon with no connections yet.
    pub fn new(
        paths: Paths,
        config: (ConfigStore, Config),
        store: Store,
        faults: Arc<Faults>,
        daemon_uid: Option<u32>,
        flags: Flags,
    ) -> Arc<Self> {
        let (config_store, config) = config;
        let authz = Arc::new(AuthzState::new(
            Policy::from_config(&config),
            config.gateway.paired_tokens.clone(),
            daemon_uid,
        ));
        let status = StatusTemplate::new(&paths, flags.ephemeral);
        Arc::new(Self {
            uptime: Uptime::start(),
            paths,
            ephemeral: flags.ephemeral,
            test_faults: flags.test_faults,
            config: LiveConfig::new(config_store, config, authz.clone(), faults.clone()),
            sessions: Sessions::new(Arc::new(store)),
            faults,
            staging: Staging::default(),
            status,
            authz,
            stop: CancellationToken::new(),
            shutdown: CancellationToken::new(),
            connections: AtomicUsize::new(0),
            local_connections: AtomicUsize::new(0),
            conn_seq: AtomicU64::new(0),
            clients_changed: Notify::new(),
            pairing_code: PairingCode::default(),
            live_conns: LiveConns::default(),
        })
    }

    /// Open connections (rejected ones never count).
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::Acquire)
    }

    /// Counts a local connection in, if fewer than `max` local connections
    /// are open (§4); its guard counts it out.
    pub fn admit(self: &Arc<Self>, max: usize) -> Option<ConnectionGuard> {
        let mut n = self.local_connections.load(Ordering::Acquire);
        loop {
            if n >= max {
                return None;
            }
            match self.local_connections.compare_exchange_weak(
                n,
                n + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(cur) => n = cur,
            }
        }
        Some(self.count_in(true))
    }

    /// Counts a WebSocket session in; the gateway applies its own limits (§12).
    pub fn admit_remote(self: &Arc<Self>) -> ConnectionGuard {
        self.count_in(false)
    }

    fn count_in(self: &Arc<Self>, local: bool) -> ConnectionGuard {
        self.connections.fetch_add(1, Ordering::AcqRel);
        self.clients_changed.notify_waiters();
        let id = self.conn_seq.fetch_add(1, Ordering::Relaxed) + 1;
        ConnectionGuard {
            daemon: self.clone(),
            id,
            local,
        }
    }
}

/// One admitted connection; dropping it counts the connection out.
#[derive(Debug)]
pub struct ConnectionGuard {
    daemon: Arc<Daemon>,
    /// The connection's number.
    pub id: u64,
    local: bool,
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        if self.local {
            self.daemon.local_connections.fetch_sub(1, Ordering::AcqRel);
        }
        self.daemon.connections.fetch_sub(1, Ordering::AcqRel);
        self.daemon.clients_changed.notify_waiters();
    }
}
