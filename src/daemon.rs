//! The daemon process (§2): startup in the order the spec gives,
//! the accept loop with its connection limit and transient-error backoff,
//! signals, ephemeral mode and graceful shutdown.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::config::{ConfigError, ConfigStore};
use crate::connection;
use crate::endpoint::{self, ClaimOptions, Claimed, EndpointError, LocalStream, PeerInfo};
use crate::error::{LimitName, RpcError};
use crate::faults::Faults;
use crate::jsonrpc::error_frame;
use crate::limits::{ACCEPT_BACKOFF, EPHEMERAL_GRACE, MAX_CONNECTIONS, SHUTDOWN_GRACE};
use crate::session::lifecycle;
use crate::state::{Daemon, Flags, Paths};
use crate::storage_fault::StorageFault;
use crate::store::{Store, StoreError};

/// How `zeroclaw daemon` was invoked.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--config-dir`.
    pub config_dir: Option<OsString>,
    /// `--ephemeral`.
    pub ephemeral: bool,
    /// `--test-faults`.
    pub test_faults: bool,
    /// The listening socket passed by socket activation (from
    /// [`systemd::take_from_env`](crate::systemd::take_from_env)).
    pub listen_fd: Option<i32>,
}

/// A startup failure, with the exit status it maps to (§2.3).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    /// `config.toml` cannot be loaded; it is left as it is.
    #[error("{}", config_message(.0))]
    Config(ConfigError),
    /// The session database cannot be opened; it is left as it is.
    #[error("{}", store_message(path, error))]
    Store { path: PathBuf, error: StoreError },
    #[error("{0}")]
    Other(String),
}

const CONFIG_ADVICE: &str = "config.toml was left unchanged: correct it, or move it aside to \
                             have a default one created at the next start";

fn config_message(e: &ConfigError) -> String {
    match e {
        ConfigError::StartupIo { fault, .. } => format!("{e}{}", remedy(*fault)),
        _ => format!("{e}\n{CONFIG_ADVICE}"),
    }
}

fn store_message(path: &std::path::Path, e: &StoreError) -> String {
    let shown = path.display();
    match e.fault().or_from_fs(path) {
        StorageFault::Corrupt => format!(
            "session database {shown} is damaged or not a SQLite database ({e}); it was left \
             untouched: restore it from a backup, or move it aside (with any -wal and -shm \
             files beside it) to start with an empty session store"
        ),
        fault => format!("opening the session database {shown}: {e}{}", remedy(fault)),
    }
}

/// What to do about an I/O failure at startup, said after its message.
fn remedy(fault: StorageFault) -> &'static str {
    match fault {
        StorageFault::Full => "; free space on its file system",
        StorageFault::ReadOnly => "; check that the daemon may read and write it and its directory",
        StorageFault::Corrupt | StorageFault::Other => "",
    }
}

impl StartError {
    /// 3 when the data dir or endpoint is already owned or serving, else 1.
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Endpoint(e) => e.exit_code(),
            _ => 1,
        }
    }
}

/// Runs the daemon until it is shut down; returns the process exit status.
pub async fn run(opts: Options) -> i32 {
    match start(&opts).await {
        Ok((daemon, claimed, signals)) => serve(daemon, claimed, signals).await,
        Err(e) => {
            tracing::error!(event = "startup_failed", error = %e);
            // Not `eprintln!`: it panics when stderr is gone.
            let _ = writeln!(std::io::stderr(), "zeroclaw daemon: {e}");
            e.exit_code()
        }
    }
}

/// Steps 1–5 of §2.3, with the config loaded between directory creation and the claim.
async fn start(opts: &Options) -> Result<(Arc<Daemon>, Claimed, Signals), StartError> {
    // Signals are caught before the socket exists: a SIGTERM at any moment
    // after it (systemd stopping a unit still starting, a client that read
    // the ready line) is held until `serve` and becomes a graceful stop that
    // removes the socket, never a death by signal that leaves it behind.
    let signals = Signals::install()
        .map_err(|e| StartError::Other(format!("installing signal handlers: {e}")))?;
    // Before any child: escaped descendants come back to us, and our
    // environment and memory are closed to same-uid processes.
    crate::agent::hold_children();
    crate::memory::tune_allocator();
    crate::memory::configure_from_env().map_err(StartError::Other)?;
    let dirs = endpoint::resolve_dirs_from_env(opts.config_dir.as_deref())?;
    if let Some(w) = &dirs.warning {
        tracing::warn!(event = "data_dir_env_ignored", "{w}");
    }
    endpoint::ensure_dirs(&dirs, None)?;
    let (store, config) = ConfigStore::open(&dirs.config_dir).map_err(StartError::Config)?;
    crate::memory::apply_config(config.daemon.memory_budget_mib);
    let endpoint_name = endpoint::resolve_endpoint(&dirs.data_dir, |k| std::env::var_os(k));
    let socket_group = config.security.socket_group.clone();
    #[cfg(unix)]
    if let (Some(group), endpoint::EndpointName::Path(socket)) = (&socket_group, &endpoint_name) {
        if socket.starts_with(&dirs.config_dir) {
            endpoint::let_group_traverse(&dirs.config_dir, endpoint::lookup_group(group)?)?;
        }
    }
    let claim_opts = ClaimOptions { socket_group };
    let claimed = match opts.listen_fd {
        #[cfg(unix)]
        Some(fd) => {
            use std::os::fd::FromRawFd;
            // SAFETY: the service manager handed us this descriptor and
            // `systemd::take_from_env` gave it out once; nothing else owns it.
            let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
            let claimed = endpoint::claim_passed(&dirs.data_dir, &endpoint_name, &claim_opts, fd)?;
            tracing::info!(event = "socket_activated", endpoint = %endpoint_name);
            claimed
        }
        _ => endpoint::claim(&dirs.data_dir, &endpoint_name, &claim_opts).await?,
    };

    let paths = Paths {
        config_dir: dirs.config_dir.clone(),
        config_file: dirs.config_file.clone(),
        data_dir: dirs.data_dir.clone(),
        endpoint: claimed.endpoint_display(),
    };
    // Before the ready line: no partial upload of a killed predecessor is ever visible.
    crate::files::remove_crash_temporaries(&config, &dirs.config_dir);
    let faults = Arc::new(Faults::default());
    let sessions_db = Store::open(&dirs.data_dir, faults.clone())
        .await
        .map_err(|error| StartError::Store {
            path: Store::path_in(&dirs.data_dir),
            error,
        })?;
    let flags = Flags {
        ephemeral: opts.ephemeral,
        test_faults: opts.test_faults,
    };
    let daemon = Daemon::new(
        paths,
        (store, config),
        sessions_db,
        faults,
        daemon_uid(),
        flags,
    );
    crate::state::revocation::spawn_sweeper(&daemon);
    tracing::info!(event = "listening", endpoint = %daemon.paths.endpoint, pid = std::process::id());
    if let Some(v) = &daemon.config.current().daemon.advertised_server_version {
        tracing::warn!(
            event = "advertised_server_version",
            advertised = %v,
            actual = env!("CARGO_PKG_VERSION"),
            "snake-dialect initialize reports this server_version instead of the package version"
        );
    }
    // The gateway (§12) after the local endpoint; it stops with `daemon.stop`.
    if daemon.config.current().gateway.enabled {
        crate::gateway::start(&daemon, crate::gateway::Settings::default())
            .await
            .map_err(|e| StartError::Other(e.to_string()))?;
    }
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Ready<'a> {
        event: &'static str,
        endpoint: &'a str,
        pid: u32,
        protocol_version: u32,
    }
    let ready = Ready {
        event: "ready",
        endpoint: &daemon.paths.endpoint,
        pid: std::process::id(),
        protocol_version: 1,
    };
    let ready = serde_json::to_string(&ready).map_err(|e| StartError::Other(e.to_string()))?;
    // A closed or broken stdout (a launcher that did not wait for the line)
    // costs the line, not the daemon: clients find the endpoint anyway.
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = writeln!(stdout, "{ready}").and_then(|()| stdout.flush()) {
        tracing::warn!(event = "ready_line_lost", error = %e);
    }
    crate::systemd::notify(crate::systemd::State::Ready {
        endpoint: &daemon.paths.endpoint,
    });
    Ok((daemon, claimed, signals))
}

#[cfg(unix)]
fn daemon_uid() -> Option<u32> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    Some(unsafe { libc::geteuid() })
}

#[cfg(not(unix))]
fn daemon_uid() -> Option<u32> {
    None
}

/// Accepts until shutdown, then shuts down gracefully (§2.6).
async fn serve(daemon: Arc<Daemon>, claimed: Claimed, signals: Signals) -> i32 {
    let hup = Arc::new(tokio::sync::Notify::new());
    tokio::spawn(signals.watch(daemon.stop.clone(), hup.clone()));
    {
        // Hand edits of config.toml: SIGHUP and a poll (docs/config.md, "Hand edits").
        let d = daemon.clone();
        let every = config_poll_interval();
        tokio::spawn(async move { d.config.watch(every, hup, d.stop.clone()).await });
    }
    if daemon.ephemeral {
        tokio::spawn(ephemeral_watch(daemon.clone()));
    }
    tokio::spawn(reclaim_idle_sessions(daemon.clone()));
    tokio::spawn(sweep_idle_uploads(daemon.clone()));
    let status = accept_loop(&daemon, &claimed).await;
    crate::systemd::notify(crate::systemd::State::Stopping);
    // Running turns end and persist first (their answers still go out),
    // then every connection is closed.
    lifecycle::shut_down(&daemon.sessions, SHUTDOWN_GRACE).await;
    // Every process we started, and whatever escaped their groups, goes now.
    crate::agent::stop_children(SHUTDOWN_GRACE).await;
    daemon.shutdown.cancel();
    // Give the connections a moment to flush and close.
    let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
    while daemon.connections() > 0 && tokio::time::Instant::now() < deadline {
        let changed = daemon.clients_changed.notified();
        if daemon.connections() == 0 {
            break;
        }
        let _ = tokio::time::timeout_at(deadline, changed).await;
    }
    claimed.release();
    if let Err(e) = daemon
        .sessions
        .store
        .checkpoint_and_close(SHUTDOWN_GRACE)
        .await
    {
        tracing::warn!(event = "store_close_failed", error = %e);
    }
    tracing::info!(event = "shutdown", status);
    status
}

async fn accept_loop(daemon: &Arc<Daemon>, claimed: &Claimed) -> i32 {
    loop {
        let accepted = tokio::select! {
            _ = daemon.stop.cancelled() => return 0,
            a = claimed.accept() => a,
        };
        match accepted {
            Ok((stream, peer)) => admit(daemon, stream, peer),
            Err(e) if endpoint::is_transient_accept_error(&e) => {
                tracing::warn!(event = "accept_failed", error = %e, "transient; retrying in 50 ms");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
            }
            Err(e) => {
                tracing::error!(event = "accept_failed", error = %e, "fatal");
                return 1;
            }
        }
    }
}

/// Serves an accepted stream, or turns it away over the connection limit.
fn admit(daemon: &Arc<Daemon>, stream: LocalStream, peer: PeerInfo) {
    let Some(guard) = daemon.admit(MAX_CONNECTIONS) else {
        tracing::info!(event = "connection_rejected", peer = %peer.label, reason = "connections");
        tokio::spawn(turn_away(stream));
        return;
    };
    #[cfg(unix)]
    let stream = endpoint::into_unix(stream);
    tokio::spawn(connection::serve(daemon.clone(), guard, stream, peer));
}

/// Answers a connection over the limit with `-32004` and closes it.
async fn turn_away(mut stream: LocalStream) {
    use tokio::io::AsyncWriteExt;
    let e = RpcError::LimitExceeded {
        limit: LimitName::Connections,
        max: MAX_CONNECTIONS as u64,
    };
    let write = async {
        stream.write_all(&error_frame(&e, None)).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), write).await;
}

/// Closes sessions idle longer than `daemon.session_idle_secs` (0 = never),
/// checking every `min(30, session_idle_secs)` seconds (§9.6).
async fn reclaim_idle_sessions(daemon: Arc<Daemon>) {
    loop {
        let idle = u64::from(daemon.config.current().daemon.session_idle_secs);
        let period = std::time::Duration::from_secs(if idle == 0 { 30 } else { idle.min(30) });
        tokio::select! {
            _ = daemon.stop.cancelled() => return,
            _ = tokio::time::sleep(period) => {}
        }
        if idle > 0 {
            lifecycle::reclaim_idle(&daemon.sessions, std::time::Duration::from_secs(idle)).await;
        }
    }
}

/// Drops uploads idle longer than `daemon.upload_idle_secs`, checking at
/// least every 30 s (§8.18.1).
async fn sweep_idle_uploads(daemon: Arc<Daemon>) {
    loop {
        let idle = u64::from(daemon.config.current().daemon.upload_idle_secs);
        let period = std::time::Duration::from_secs(idle.clamp(1, 30));
        tokio::select! {
            _ = daemon.stop.cancelled() => return,
            _ = tokio::time::sleep(period) => {}
        }
        let dropped = daemon.staging.sweep(std::time::Duration::from_secs(idle));
        if dropped > 0 {
            tracing::info!(
                event = "uploads_reclaimed",
                count = dropped,
                reason = "idle"
            );
        }
    }
}

/// How often the daemon looks at `config.toml`'s metadata for a hand edit:
/// `ZEROCLAW_CONFIG_POLL_MS` (0 = never, SIGHUP only), else every second.
fn config_poll_interval() -> std::time::Duration {
    let ms = std::env::var("ZEROCLAW_CONFIG_POLL_MS")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(1000);
    std::time::Duration::from_millis(ms)
}

/// The signals the daemon handles: SIGINT/SIGTERM shut down; SIGHUP reloads
/// `config.toml`. On Windows the console's control events: Ctrl-C,
/// Ctrl-Break, the console window closing, and the system shutting down
/// (what a service wrapper or `sc stop` through one sends, and what
/// services get at shutdown); each shuts down gracefully. (For the close
/// and shutdown events Windows ends the process soon after, ~5 s.) Windows
/// has no SIGHUP: a hand edit is picked up by the metadata poll.
#[derive(Debug)]
struct Signals {
    #[cfg(unix)]
    streams: [tokio::signal::unix::Signal; 3],
    #[cfg(windows)]
    ctrl_c: tokio::signal::windows::CtrlC,
    #[cfg(windows)]
    ctrl_break: tokio::signal::windows::CtrlBreak,
    #[cfg(windows)]
    ctrl_close: tokio::signal::windows::CtrlClose,
    #[cfg(windows)]
    ctrl_shutdown: tokio::signal::windows::CtrlShutdown,
}

impl Signals {
    #[cfg(unix)]
    fn install() -> std::io::Result<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Self {
            streams: [
                signal(SignalKind::interrupt())?,
                signal(SignalKind::terminate())?,
                signal(SignalKind::hangup())?,
            ],
        })
    }

    #[cfg(windows)]
    fn install() -> std::io::Result<Self> {
        use tokio::signal::windows;
        Ok(Self {
            ctrl_c: windows::ctrl_c()?,
            ctrl_break: windows::ctrl_break()?,
            ctrl_close: windows::ctrl_close()?,
            ctrl_shutdown: windows::ctrl_shutdown()?,
        })
    }

    #[cfg(unix)]
    async fn watch(self, stop: CancellationToken, reload: Arc<tokio::sync::Notify>) {
        let [mut int, mut term, mut hup] = self.streams;
        loop {
            tokio::select! {
                _ = int.recv() => break,
                _ = term.recv() => break,
                _ = hup.recv() => {
                    tracing::info!(event = "sighup", "reloading config.toml");
                    reload.notify_one();
                }
            }
        }
        tracing::info!(event = "shutdown_requested");
        stop.cancel();
    }

    #[cfg(windows)]
    async fn watch(mut self, stop: CancellationToken, _reload: Arc<tokio::sync::Notify>) {
        let event = tokio::select! {
            _ = self.ctrl_c.recv() => "ctrl_c",
            _ = self.ctrl_break.recv() => "ctrl_break",
            _ = self.ctrl_close.recv() => "ctrl_close",
            _ = self.ctrl_shutdown.recv() => "ctrl_shutdown",
        };
        tracing::info!(event = "shutdown_requested", by = event);
        stop.cancel();
    }
}

/// `--ephemeral` (§2.6): after the first client, shut down once the count
/// has stayed at zero for the grace period.
async fn ephemeral_watch(daemon: Arc<Daemon>) {
    // Wait for the first client.
    loop {
        let changed = daemon.clients_changed.notified();
        if daemon.connections() > 0 {
            break;
        }
        changed.await;
    }
    loop {
        // Wait for zero.
        loop {
            let changed = daemon.clients_changed.notified();
            if daemon.connections() == 0 {
                break;
            }
            changed.await;
        }
        // Grace: a new client cancels the shutdown.
        let changed = daemon.clients_changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        if daemon.connections() > 0 {
            continue;
        }
        match tokio::time::timeout(EPHEMERAL_GRACE, &mut changed).await {
            Err(_) if daemon.connections() == 0 => {
                tracing::info!(event = "ephemeral_exit", "last client left");
                daemon.stop.cancel();
                return;
            }
            _ => continue,
        }
    }
}
