//! Every pipelined request is answered exactly once, whatever the client's
//! write and read pattern: a burst in one write with a reader
//! reading all along, a burst then a half-close, seeded random splits and
//! pauses up to 100,000 requests on one connection, and the real `socat`
//! piping a file.

use crate::common;

#[cfg(unix)]
use std::process::{Command, Stdio};
use std::time::Duration;

use common::pipeline::{self, Schedule, Script};
use common::{Daemon, Rng};

const LONG: Duration = Duration::from_secs(120);

#[test]
fn a_burst_in_one_write_is_answered_while_the_client_keeps_reading() {
    let d = Daemon::start();
    let script = Script::new(false).statuses(1_000);
    let lines = pipeline::run(
        &d.socket,
        &script,
        &Schedule::burst(false),
        Duration::from_secs(20),
    );
    let t = pipeline::check(&script, &lines);
    assert_eq!(t.answered, 1_001);
}

// Unix only: a half-close (a named pipe has none)
#[cfg(unix)]
#[test]
fn twenty_thousand_requests_then_a_half_close_are_all_answered_before_the_close() {
    let d = Daemon::start();
    let script = Script::new(false).statuses(20_000);
    let lines = pipeline::run(&d.socket, &script, &Schedule::burst(true), LONG);
    let t = pipeline::check(&script, &lines);
    assert_eq!(t.answered, 20_001);
}

/// Writes of `write_sizes` bytes with pauses up to `write_pause_us`; reads
/// of up to `read_size` bytes with pauses up to `read_pause_us`.
fn sched(
    write_sizes: (usize, usize),
    write_pause_us: u64,
    read_size: usize,
    read_pause_us: u64,
    half_close: bool,
) -> Schedule {
    Schedule {
        write_sizes,
        write_pause_us,
        read_size,
        read_pause_us,
        half_close,
        seed: 0,
    }
}

#[test]
fn random_mixes_splits_and_pauses_are_answered_exactly_once() {
    let d = Daemon::start();
    // Requests on one connection, and how they are written and read.
    let cases = [
        (2_000, sched((1, 1), 0, 7, 0, true)),
        (5_000, sched((1, 64), 50, 4096, 200, false)),
        (5_000, sched((100, 9_000), 0, 1, 0, true)),
        (20_000, sched((1, 1 << 20), 0, 65_536, 2_000, true)),
        (20_000, sched((4_096, 1 << 20), 1_000, 512, 0, false)),
        (100_000, sched((1, 1 << 20), 0, 65_536, 0, true)),
    ];
    for (n, (requests, mut schedule)) in cases.into_iter().enumerate() {
        let seed = 0x5eed + n as u64;
        schedule.seed = seed;
        // A named pipe has no half-close: on Windows the client reads until
        // every owed answer came instead.
        if cfg!(windows) {
            schedule.half_close = false;
        }
        let mut rng = Rng::new(seed);
        let script = Script::new(true).mix(&mut rng, requests, true);
        let lines = pipeline::run(&d.socket, &script, &schedule, LONG);
        let t = pipeline::check(&script, &lines);
        eprintln!("case {n} (seed {seed:#x}): {t:?}");
        assert_eq!(
            t.answered + t.invalid_answered,
            script.lines.len(),
            "case {n}"
        );
        // The session is the connection's: close it so the next case can open it again.
        let mut c = d.client();
        let closed = c.call(
            "session/close",
            serde_json::json!({"session_id": pipeline::SESSION}),
            serde_json::json!("close"),
        );
        assert!(closed.get("result").is_some(), "case {n}: {closed}");
    }
}

// Unix only: socat speaks to a Unix socket
#[cfg(unix)]
#[test]
fn socat_piping_a_file_of_100000_requests_gets_every_answer() {
    if Command::new("socat").arg("-V").output().is_err() {
        skip_test!("socat is not installed (apt-get install socat; .ci/run installs it)");
    }
    let d = Daemon::start();
    let script = Script::new(false).statuses(100_000);
    let dir = common::TestDir::new();
    let input = dir.path().join("requests.jsonl");
    std::fs::write(&input, script.bytes()).expect("writing the requests");
    let mut socat = Command::new("socat")
        .args(["-t", "30", "-"])
        .arg(format!("UNIX-CONNECT:{}", d.socket.display()))
        .stdin(std::fs::File::open(&input).expect("open"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("socat");
    let out = std::thread::spawn({
        let mut stdout = socat.stdout.take().expect("stdout");
        move || {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut stdout, &mut s).expect("reading socat");
            s
        }
    });
    let status = common::wait_timeout(&mut socat, LONG).expect("socat did not finish");
    let text = out.join().expect("reader");
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    assert!(status.success(), "socat: {status}");
    let t = pipeline::check(&script, &lines);
    assert_eq!(t.answered, 100_001);
}
