//! Ephemeral mode (§2.6). The timings below are margins around the
//! 1-second grace, not latency assertions: "still alive" is checked well
//! before the grace can end and "gone" well after it.

use crate::common;

use std::time::{Duration, Instant};

use common::{Daemon, EXIT_TIMEOUT};

/// Sleeps until `at` (a point on the test's own timeline).
fn sleep_until(at: Instant) {
    let now = Instant::now();
    if at > now {
        std::thread::sleep(at - now);
    }
}

#[test]
fn never_exits_before_a_first_client() {
    let mut d = Daemon::builder().arg("--ephemeral").spawn();
    std::thread::sleep(Duration::from_millis(2500));
    assert!(d.is_running(), "exited before any client connected");
    // And it still serves, reporting ephemeral mode.
    let mut c = d.client();
    assert_eq!(c.status()["ephemeral"], true);
}

#[test]
fn exits_0_after_the_last_client_leaves_but_not_before_the_grace() {
    let mut d = Daemon::builder().arg("--ephemeral").spawn();
    let sock = d.socket.clone();
    let mut a = d.client();
    let b = d.client();
    assert_eq!(a.status()["connections"], 2);
    drop(b);
    // One client still connected: no shutdown, however long.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(d.is_running(), "exited while a client was still connected");
    assert_eq!(a.status()["ephemeral"], true);

    drop(a);
    let left = Instant::now();
    sleep_until(left + Duration::from_millis(500));
    assert!(d.is_running(), "exited before the 1 s grace had passed");
    let status = d
        .wait_exit(Duration::from_millis(3000).saturating_sub(left.elapsed()))
        .unwrap_or_else(|| panic!("still running 3 s after the last client left"));
    assert!(
        left.elapsed() >= Duration::from_millis(900),
        "exited after {:?}, before the grace",
        left.elapsed()
    );
    assert_eq!(status.code(), Some(0), "{}", d.log.text());
    assert!(
        std::fs::symlink_metadata(&sock).is_err(),
        "the socket must be removed"
    );
}

#[test]
fn a_reconnect_within_the_grace_cancels_the_shutdown() {
    let mut d = Daemon::builder().arg("--ephemeral").spawn();
    drop(d.client());
    let left = Instant::now();
    sleep_until(left + Duration::from_millis(300));
    let mut back = d.client();
    // Well past where the first grace would have ended.
    sleep_until(left + Duration::from_millis(2500));
    assert!(d.is_running(), "the reconnect did not cancel the shutdown");
    assert_eq!(back.status()["connections"], 1);

    // Leaving again starts a new grace, which ends the daemon.
    drop(back);
    let status = d
        .wait_exit(Duration::from_secs(3))
        .unwrap_or_else(|| panic!("still running 3 s after the last client left again"));
    assert_eq!(status.code(), Some(0), "{}", d.log.text());
}

#[test]
fn without_ephemeral_the_daemon_stays_after_the_last_client() {
    let mut d = Daemon::start();
    let mut c = d.client();
    assert_eq!(c.status()["ephemeral"], false);
    drop(c);
    std::thread::sleep(Duration::from_millis(2500));
    assert!(d.is_running(), "exited without --ephemeral");
    d.client();
    // Still stoppable as usual.
    if let Err(why) = d.stop() {
        common::skip(&why);
        return;
    }
    assert_eq!(
        d.wait_exit(EXIT_TIMEOUT).and_then(|s| s.code()),
        Some(0),
        "{}",
        d.log.text()
    );
}
