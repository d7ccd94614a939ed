//! The daemon's resource use as Linux's `/proc` shows it (memory, CPU
//! time), for the tests that bound them; `None` where there is no `/proc`
//! (Windows, Wine), so those tests skip with a printed reason.

use std::time::Duration;

use super::Daemon;

impl Daemon {
    /// The daemon's resident set size in KiB (`/proc/<pid>/status` VmRSS).
    pub fn rss_kib(&self) -> Option<u64> {
        self.status_kib("VmRSS:")
    }

    /// The daemon's peak resident set size in KiB (`/proc/<pid>/status` VmHWM).
    pub fn peak_rss_kib(&self) -> Option<u64> {
        self.status_kib("VmHWM:")
    }

    /// A `<field> <n> kB` line of `/proc/<pid>/status`.
    fn status_kib(&self, field: &str) -> Option<u64> {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        s.lines()
            .find(|l| l.starts_with(field))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    }

    /// CPU time (user + system) the daemon has used, from `/proc/<pid>/stat`.
    pub fn cpu_time(&self) -> Option<Duration> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).ok()?;
        // Fields after the command name, which is in parentheses and may hold spaces.
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        let utime: u64 = fields.get(11)?.parse().ok()?;
        let stime: u64 = fields.get(12)?.parse().ok()?;
        #[cfg(windows)]
        let ticks = 100i64;
        // SAFETY: sysconf has no preconditions.
        #[cfg(unix)]
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        if ticks <= 0 {
            return None;
        }
        Some(Duration::from_secs_f64(
            (utime + stime) as f64 / ticks as f64,
        ))
    }
}
