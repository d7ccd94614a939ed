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
