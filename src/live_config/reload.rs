//! Hot reload of a hand-edited `config.toml`: on SIGHUP and when a cheap poll of the
//! file's metadata sees it change. The new text is checked as a whole (every error listed); an
//! invalid one is refused and logged (`config_reload_refused`) and the running config stays; a
//! valid one is installed through the commit's own install step (policy and generation, tokens,
//! memory budget, masked secrets) and logged (`config_reloaded`), and its bytes become the ones
//! the store remembers, so the next `config/set` does not refuse.
//!
//! An edit racing a write is never lost silently: the write holds the config write lock and
//! re-reads the file under `config.toml.lock` (§8.16 step 8), so an edit not yet reloaded makes
//! it fail with `config_changed` and write nothing; the edit is reloaded at the next poll and a
//! retried write applies on top of it (docs/config.md, "Hand edits").

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::LiveConfig;
use crate::config::{Config, Policy};

/// What one reload did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reloaded {
    /// The file holds what the daemon last read or wrote.
    Unchanged,
    /// The edit is the running config now.
    Installed,
    /// The edit was refused for these errors; the running config stays.
    Refused(Vec<String>),
}

/// What the poll compares: a change of any of these is worth reading the file for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp(Option<(u64, Option<SystemTime>, u64, u64)>, Option<u64>);

impl Stamp {
    /// The stamp of `path` now (of its target and of the link itself when it is a symlink).
    pub fn of(path: &Path) -> Stamp {
        let target = std::fs::metadata(path)
            .ok()
            .map(|m| (m.len(), m.modified().ok(), change_time(&m), inode(&m)));
        let link = std::fs::symlink_metadata(path).ok().map(|m| inode(&m));
        Stamp(target, link)
    }
}

#[cfg(unix)]
fn inode(m: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(m)
}

#[cfg(unix)]
fn change_time(m: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    // Seconds and nanoseconds folded: only equality matters.
    (m.ctime() as u64).wrapping_mul(1_000_000_007) ^ m.ctime_nsec() as u64
}

#[cfg(not(unix))]
fn inode(_m: &std::fs::Metadata) -> u64 {
    0
}

#[cfg(not(unix))]
fn change_time(_m: &std::fs::Metadata) -> u64 {
    0
}

impl LiveConfig {
    /// Reads `config.toml` and installs it when it changed and is valid (`trigger` names why,
    /// for the log: `sighup` or `watch`). Under the config write lock, like a commit: bytes read
    /// before taking it could be the file as it was before a commit that ran meanwhile, and
    /// installing them would undo that commit. Holding the lock across the read is harmless
    /// because the read cannot wait (`ConfigStore::read_if_changed`: a FIFO or a device is
    /// refused at once, a regular file is read through a bound).
    pub async fn reload(&self, trigger: &'static str) -> Reloaded {
        let lock = self.lock().await;
        let store = self.store.clone();
        let read = tokio::task::spawn_blocking(move || {
            store
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .read_if_changed()
        })
        .await;
        let bytes = match read {
            Ok(Ok(Some(bytes))) => bytes,
            Ok(Ok(None)) => {
                tracing::debug!(event = "config_unchanged", trigger);
                return Reloaded::Unchanged;
            }
            Ok(Err(e)) => return refused(trigger, vec![format!("cannot read config.toml: {e}")]),
            Err(e) => return refused(trigger, vec![format!("cannot read config.toml: {e}")]),
        };
        let checked = match std::str::from_utf8(&bytes) {
            Err(e) => Err(vec![format!("config.toml is not UTF-8: {e}")]),
            // The daemon never writes an empty file: an empty one is a truncation.
            Ok(text) if text.trim().is_empty() => {
                Err(vec!["config.toml is empty (truncated?)".to_owned()])
            }
            Ok(text) => Config::check_toml_text(text),
        };
        match checked {
            Err(errors) => refused(trigger, errors),
            Ok(candidate) => {
                let policy = Policy::from_config(&candidate);
                self.store
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .accept(bytes);
                self.install(&lock, Arc::new(candidate), policy).await;
                tracing::info!(event = "config_reloaded", trigger);
                Reloaded::Installed
            }
        }
    }

    /// Reloads whenever `hup` is notified (SIGHUP) and, when `every` is not zero, whenever the
    /// file's [`Stamp`] changes between two polls `every` apart; until `stop`.
    pub async fn watch(&self, every: Duration, hup: Arc<Notify>, stop: CancellationToken) {
        let path = self.path();
        let mut seen = Stamp::of(&path);
        let mut ticks = (!every.is_zero()).then(|| {
            let mut t = tokio::time::interval(every);
            t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            t
        });
        loop {
            let tick = async {
                match ticks.as_mut() {
                    Some(t) => {
                        t.tick().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                () = stop.cancelled() => return,
                () = hup.notified() => {
                    seen = Stamp::of(&path);
                    self.reload("sighup").await;
                }
                () = tick => {
                    let now = Stamp::of(&path);
                    if now != seen {
                        seen = now;
                        self.reload("watch").await;
                    }
                }
            }
        }
    }
}

fn refused(trigger: &'static str, errors: Vec<String>) -> Reloaded {
    tracing::warn!(
        event = "config_reload_refused",
        trigger,
        errors = %errors.join("; "),
        "the running configuration stays"
    );
    Reloaded::Refused(errors)
}
