//! The daemon's hold on its descendants (docs/decisions.md, "Children of
//! the daemon"), Linux only (elsewhere every function is a no-op):
//!
//! - [`start`] makes the daemon a child subreaper (`PR_SET_CHILD_SUBREAPER`):
//!   a descendant whose parent dies (one that left its process group with
//!   `setsid` or a double fork) is reparented to the daemon, not to init;
//!   and non-dumpable (`PR_SET_DUMPABLE 0`): a same-uid process without
//!   `CAP_SYS_PTRACE` can no longer read the daemon's `/proc/<pid>/environ`
//!   (where an `api_key_env` key lives) or its memory;
//! - every child the daemon starts is registered by (pid, start time)
//!   ([`spawn_registered`]), behind a gate a sweep closes, so a sweep never
//!   meets a child that was started but not yet registered;
//! - a sweep (on every `SIGCHLD` and every [`SWEEP_PERIOD`])
//!   kills (with its group when it leads one) every child of the daemon it
//!   did not start, that is an escaped descendant, and reaps it. The
//!   daemon's own children are tokio's to reap: a sweep never waits for one;
//! - [`stop_all`], at a graceful stop, kills every child's group and every
//!   escaped descendant until none is left (bounded).

#[cfg(target_os = "linux")]
use std::time::Duration;

/// How often a sweep runs without a `SIGCHLD` (a descendant reparented when
/// its parent, not a child of ours, dies brings no signal to the daemon).
#[cfg(target_os = "linux")]
pub const SWEEP_PERIOD: Duration = Duration::from_secs(1);

#[cfg(target_os = "linux")]
pub use linux::{spawn_registered, start, stop_all};

#[cfg(not(target_os = "linux"))]
mod fallback {
    use std::time::Duration;

    /// Elsewhere: the daemon holds only its direct children (their groups).
    pub fn start() {}

    /// Spawns; nothing to register.
    pub fn spawn_registered<T>(spawn: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
        spawn()
    }

    /// The children's groups go with their guards.
    pub async fn stop_all(_grace: Duration) {}
}

#[cfg(not(target_os = "linux"))]
pub use fallback::{spawn_registered, start, stop_all};

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Mutex, PoisonError, RwLock};
    use std::time::Duration;

    use tokio::process::Child;
    use tokio::signal::unix::{signal, SignalKind};

    use super::SWEEP_PERIOD;

    /// Set by [`start`]: only the daemon registers and sweeps.
    static ACTIVE: AtomicBool = AtomicBool::new(false);
    /// Spawns hold it shared, sweeps exclusively.
    static GATE: RwLock<()> = RwLock::new(());
    /// The children the daemon started: pid → start time in clock ticks
    /// (0: unknown, matches any).
    static SPAWNED: Mutex<Option<HashMap<i32, u64>>> = Mutex::new(None);

    /// Becomes a subreaper and non-dumpable, and starts sweeping. Call once,
    /// on the runtime, before any child is started.
    pub fn start() {
        // SAFETY: prctl with these options only sets flags of this process.
        let (reaper, dumpable) = unsafe {
            (
                libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0),
                libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0),
            )
        };
        if dumpable != 0 {
            let error = std::io::Error::last_os_error();
            tracing::warn!(event = "not_dumpable_failed", error = %error);
        }
        if reaper != 0 {
            let error = std::io::Error::last_os_error();
            tracing::warn!(event = "subreaper_failed", error = %error);
            return;
        }
        ACTIVE.store(true, Ordering::SeqCst);
        tokio::spawn(watch());
    }

    async fn watch() {
        let mut sigchld = signal(SignalKind::child()).ok();
        let mut tick = tokio::time::interval(SWEEP_PERIOD);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let child_signal = async {
                match &mut sigchld {
                    Some(s) => s.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = child_signal => {}
                _ = tick.tick() => {}
            }
            sweep();
        }
    }

    /// Runs `spawn` and registers the child it started.
    pub fn spawn_registered(
        spawn: impl FnOnce() -> std::io::Result<Child>,
    ) -> std::io::Result<Child> {
        if !ACTIVE.load(Ordering::SeqCst) {
            return spawn();
        }
        let _gate = GATE.read().unwrap_or_else(PoisonError::into_inner);
        let child = spawn()?;
        if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
            let start = stat(pid).map_or(0, |s| s.start);
            let mut spawned = SPAWNED.lock().unwrap_or_else(PoisonError::into_inner);
            spawned.get_or_insert_with(HashMap::new).insert(pid, start);
        }
        Ok(child)
    }

    /// Kills and reaps every escaped descendant; returns how many were alive.
    pub fn sweep() -> usize {
        if !ACTIVE.load(Ordering::SeqCst) {
            return 0;
        }
        let _gate = GATE.write().unwrap_or_else(PoisonError::into_inner);
        let children = children();
        let mut spawned = SPAWNED.lock().unwrap_or_else(PoisonError::into_inner);
        let spawned = spawned.get_or_insert_with(HashMap::new);
        // Forget the children tokio has reaped (their pid may be reused).
        spawned.retain(|pid, start| !gone(*pid, *start));
        let ours = |c: &Stat| {
            spawned
                .get(&c.pid)
                .is_some_and(|s| *s == 0 || *s == c.start)
        };
        let mut killed = 0;
        for c in children.iter().filter(|c| !ours(c)) {
            if !c.zombie {
                tracing::warn!(event = "escaped_process_killed", pid = c.pid, name = %c.name);
                kill(c);
                killed += 1;
            }
            // SAFETY: waitpid on a pid that is our child and not tokio's.
            unsafe {
                libc::waitpid(c.pid, std::ptr::null_mut(), libc::WNOHANG);
            }
        }
        killed
    }

    /// Kills every child (its group with it) and every escaped descendant
    /// until none is alive or `grace` has passed.
    pub async fn stop_all(grace: Duration) {
        if !ACTIVE.load(Ordering::SeqCst) {
            return;
        }
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let alive = {
                let _gate = GATE.write().unwrap_or_else(PoisonError::into_inner);
                let alive: Vec<Stat> = children().into_iter().filter(|c| !c.zombie).collect();
                alive.iter().for_each(kill);
                alive.len()
            };
            sweep(); // reaps the escaped ones that died
            if alive == 0 || tokio::time::Instant::now() >= deadline {
                if alive > 0 {
                    tracing::warn!(event = "children_left_at_stop", count = alive);
                }
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// `SIGKILL` to `c`, and to its group when it leads one.
    fn kill(c: &Stat) {
        // SAFETY: kill(2) has no memory-safety preconditions; pids > 1 only
        // (a negative one addresses the group `c` leads).
        unsafe {
            if c.pgrp == c.pid && c.pid > 1 {
                libc::kill(-c.pid, libc::SIGKILL);
            }
            if c.pid > 1 {
                libc::kill(c.pid, libc::SIGKILL);
            }
        }
    }

    /// What a sweep needs of one process (`/proc/<pid>/stat`).
    #[derive(Debug)]
    struct Stat {
        pid: i32,
        ppid: i32,
        pgrp: i32,
        start: u64,
        zombie: bool,
        name: String,
    }

    /// Process `pid` started at `start` no longer exists (an unreadable
    /// `/proc` is not taken for an answer).
    fn gone(pid: i32, start: u64) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
            Ok(text) => parse_stat(pid, &text).is_some_and(|s| start != 0 && s.start != start),
        }
    }

    fn stat(pid: i32) -> Option<Stat> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        parse_stat(pid, &text)
    }

    /// `pid (comm) state ppid pgrp session … starttime(22nd) …`.
    fn parse_stat(pid: i32, text: &str) -> Option<Stat> {
        let (head, rest) = text.rsplit_once(')')?;
        let name = head.split_once('(').map_or("", |(_, n)| n).to_owned();
        let fields: Vec<&str> = rest.split_whitespace().collect();
        Some(Stat {
            pid,
            ppid: fields.get(1)?.parse().ok()?,
            pgrp: fields.get(2)?.parse().ok()?,
            start: fields.get(19)?.parse().ok()?,
            zombie: *fields.first()? == "Z",
            name,
        })
    }

    /// The daemon's children (every process whose parent it is).
    fn children() -> Vec<Stat> {
        let me = i32::try_from(std::process::id()).unwrap_or(0);
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter_map(stat)
            .filter(|s| s.ppid == me)
            .collect()
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn stat_lines_are_read_whatever_the_name() {
            let line = "4242 (a) b (c)) S 17 4242 17 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 \
                        987654 1000 10 0\n";
            let s = parse_stat(4242, line).unwrap();
            assert_eq!((s.ppid, s.pgrp, s.start), (17, 4242, 987654));
            assert_eq!(s.name, "a) b (c)");
            assert!(!s.zombie);
            assert!(parse_stat(1, "1 (x) Z 0").is_none());
            let me = stat(i32::try_from(std::process::id()).unwrap()).unwrap();
            assert!(me.start > 0 && !me.zombie);
        }
    }
}
