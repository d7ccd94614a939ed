//! Connection limits (§4): the 256-connection cap and write backpressure.

use crate::common;

use std::io::{ErrorKind, Write};
use std::time::{Duration, Instant};

use common::{Client, Daemon};
use serde_json::json;

const TOO_MANY: &str = r#"{"jsonrpc":"2.0","error":{"code":-32004,"message":"Too many connections","data":{"limit":"connections","max":256}},"id":null}"#;

/// The soft limit on open files of this process (Windows has none).
#[cfg(windows)]
fn open_files_limit() -> u64 {
    u64::MAX
}

/// The soft limit on open files of this process.
#[cfg(unix)]
fn open_files_limit() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return 0;
    }
    #[allow(clippy::unnecessary_cast)] // rlim_t is not u64 everywhere
    let cur = r.rlim_cur as u64;
    cur
}

/// Polls `status.connections` on `c` until it equals `n` (bounded).
fn wait_for_connections(c: &mut Client, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let got = c.status()["connections"].as_u64().unwrap();
        if got == n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "status.connections stuck at {got}, expected {n}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_257th_connection_is_refused_with_the_exact_frame_and_never_counted() {
    // 256 client sockets + the refused ones + slack, in this process and in the daemon
    // (the daemon inherits the limit from the test process).
    if open_files_limit() < 700 {
        skip_test!(
            "RLIMIT_NOFILE is {}, this test needs at least 700",
            open_files_limit()
        );
    }
    let (d, mut first) = Daemon::with_client();
    let mut held = Vec::with_capacity(255);
    for _ in 0..255 {
        held.push(d.connect());
    }
    // All 256 are admitted (accepting is asynchronous: wait for the count).
    wait_for_connections(&mut first, 256);

    // The 257th: exactly the -32004 frame, then end of stream.
    let mut extra = d.connect();
    assert_eq!(extra.recv_line(), TOO_MANY);
    extra.expect_eof(common::RECV_TIMEOUT);
    // A rejected connection is closed without reading: a request sent on it
    // is never answered (the write may fail or succeed into the void).
    let mut another = d.connect();
    assert_eq!(another.recv_line(), TOO_MANY);
    let _ = another.stream.write_all(
        br#"{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":1}
"#,
    );
    another.expect_eof(common::RECV_TIMEOUT);
    drop(extra);
    drop(another);
    assert_eq!(first.status()["connections"], 256);

    // Every admitted connection still works, e.g. the last one.
    let last = held.last_mut().unwrap();
    last.initialize();
    assert_eq!(last.status()["connections"], 256);

    // Freeing one slot admits the next connection.
    drop(held.remove(0));
    wait_for_connections(&mut first, 255);
    let mut next = d.client();
    assert_eq!(next.status()["connections"], 256);
    let mut refused = d.connect();
    assert_eq!(refused.recv_line(), TOO_MANY);
    refused.expect_eof(common::RECV_TIMEOUT);

    // Audited as refused, with the peer label (the log arrives on its own
    // pipe: wait for it).
    assert!(
        d.log
            .wait_for(0, common::RECV_TIMEOUT, |e| e["peer"]
                == common::own_peer_label()
                && e.to_string().contains("connections")
                && e["event"] != "connection_accepted")
            .is_some(),
        "no audit event for the refused connection:\n{}",
        d.log.lines()[..20.min(d.log.len())].join("\n")
    );
}

/// One pipelined `status` request.
const STATUS: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"status\",\"id\":1}\n";

#[test]
fn a_client_that_never_reads_is_stopped_being_read_and_costs_bounded_memory() {
    let d = Daemon::start();
    let Some(rss_before) = d.rss_kib() else {
        skip_test!("/proc/{}/status has no VmRSS", d.pid);
    };
    // Stated bound: the daemon may grow by at most 64 MiB.
    const RSS_BOUND_KIB: u64 = 64 * 1024;
    // Stated bound on what the daemon may accept from a client that never reads
    // before it stops reading: its write queue (64 frames), socket buffers and
    // one read buffer, far below this.
    const MAX_ACCEPTED_BYTES: usize = 64 * 1024 * 1024;

    let mut hog = d.client();
    let mut chunk = Vec::with_capacity(64 * 1024);
    while chunk.len() + STATUS.len() <= 64 * 1024 {
        chunk.extend_from_slice(STATUS);
    }
    hog.stream
        .set_write_timeout(Some(Duration::from_millis(1000)))
        .unwrap();
    let mut written = 0usize;
    let mut blocked = false;
    let started = Instant::now();
    while written < MAX_ACCEPTED_BYTES && started.elapsed() < Duration::from_secs(30) {
        match hog.stream.write(&chunk) {
            Ok(n) => written += n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                // A whole second without the daemon taking a byte: it stopped reading.
                blocked = true;
                break;
            }
            Err(e) => panic!("writing to the daemon failed after {written} bytes: {e}"),
        }
    }
    assert!(
        blocked,
        "the daemon kept reading from a client that never reads: {written} bytes accepted in {:?}",
        started.elapsed()
    );
    let rss_after = d.rss_kib().expect("VmRSS");
    eprintln!(
        "stalled after {written} bytes in {:?}; RSS {rss_before} KiB -> {rss_after} KiB",
        started.elapsed()
    );
    assert!(
        rss_after <= rss_before + RSS_BOUND_KIB,
        "daemon RSS grew from {rss_before} KiB to {rss_after} KiB (bound +{RSS_BOUND_KIB} KiB); {written} bytes were accepted"
    );

    // Meanwhile another client is served (bounded wait, not a latency check).
    let mut other = d.connect();
    let init = other.call("initialize", json!({"protocolVersion": 1}), json!(1));
    assert!(init.get("result").is_some(), "{init}");
    assert_eq!(other.status()["connections"], 2);

    // Still stalled: nothing more was read from the hog since.
    match hog.stream.write(&chunk) {
        Ok(n) => panic!("the stalled client could write {n} more bytes"),
        Err(e) => assert!(
            matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
            "{e}"
        ),
    }
    assert!(d.rss_kib().expect("VmRSS") <= rss_before + RSS_BOUND_KIB);
}
