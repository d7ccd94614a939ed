//! The daemon's uptime in whole seconds, read from a coarse clock.
//!
//! `status` reports it on every call, and health checks call `status` in a
//! loop: on Linux the precise monotonic clock cost a tenth of a `status`
//! answer on a virtual machine (a trip to the hypervisor's clock source),
//! while `CLOCK_MONOTONIC_COARSE` reads the kernel's last tick (a few
//! milliseconds old), which is all a count of seconds needs.

#[cfg(target_os = "linux")]
use std::time::Duration;
use std::time::Instant;

/// When the daemon started, and how long ago that was.
#[derive(Debug)]
pub struct Uptime {
    started: Instant,
    #[cfg(target_os = "linux")]
    coarse_start: Option<Duration>,
}

impl Uptime {
    /// Starts counting now.
    pub fn start() -> Self {
        Self {
            started: Instant::now(),
            #[cfg(target_os = "linux")]
            coarse_start: coarse_now(),
        }
    }

    /// Whole seconds since the start.
    pub fn secs(&self) -> u64 {
        #[cfg(target_os = "linux")]
        if let (Some(start), Some(now)) = (self.coarse_start, coarse_now()) {
            return now.saturating_sub(start).as_secs();
        }
        self.started.elapsed().as_secs()
    }
}

/// The coarse monotonic clock, if the kernel has it.
#[cfg(target_os = "linux")]
fn coarse_now() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The coarse count follows the precise clock within its tick.
    #[test]
    fn uptime_counts_whole_seconds_from_the_start() {
        let uptime = Uptime::start();
        assert_eq!(uptime.secs(), 0);
        let shifted = Uptime {
            started: uptime.started - Duration::from_secs(5),
            #[cfg(target_os = "linux")]
            coarse_start: uptime
                .coarse_start
                .map(|d| d.saturating_sub(Duration::from_secs(5))),
        };
        assert_eq!(shifted.secs(), 5);
    }
}
