//! Bounded waiting for a condition the test cannot be told about (a row
//! persisted, a file released): poll, and fail with what was awaited once
//! the deadline passes. Nothing here sleeps to assert.

use std::time::{Duration, Instant};

/// Polls `f` every 10 ms until it returns `Some`, for at most `timeout`.
#[track_caller]
pub fn eventually<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(t) = f() {
            return t;
        }
        assert!(Instant::now() < deadline, "{what}: not within {timeout:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Polls `f` every 100 ms until its value has not changed for `quiet`, for
/// at most `timeout`; returns that value (what a stalled producer reached).
#[track_caller]
pub fn settled<T: PartialEq + std::fmt::Debug>(
    what: &str,
    (quiet, timeout): (Duration, Duration),
    mut f: impl FnMut() -> T,
) -> T {
    let deadline = Instant::now() + timeout;
    let (mut last, mut since) = (f(), Instant::now());
    while since.elapsed() < quiet {
        assert!(
            Instant::now() < deadline,
            "{what}: still changing after {timeout:?} (at {last:?})"
        );
        std::thread::sleep(Duration::from_millis(100));
        let now = f();
        if now != last {
            (last, since) = (now, Instant::now());
        }
    }
    last
}
