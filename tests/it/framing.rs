//! NDJSON framing over the real socket (§3.1): line endings, blank
//! frames, the final frame at end of stream, the 8 MiB limit (the `\r`
//! included) and chunk-boundary independence.

use crate::common;

use std::io::Write;
use std::time::Duration;

use common::{sized_frame, Client, Daemon, Rng, FRAME_TOO_LARGE, MAX_FRAME};
use serde_json::{json, Value};

const STATUS_TEMPLATE: &str =
    r#"{"jsonrpc":"2.0","method":"status","params":{"pad":"@PAD@"},"id":"big"}"#;

fn nope(id: u32) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","error":{{"code":-32601,"message":"Unknown method: nope"}},"id":{id}}}"#
    )
}

fn assert_status_result(v: &Value, id: &str) {
    assert_eq!(v["id"], id, "{v}");
    assert_eq!(v["jsonrpc"], "2.0", "{v}");
    assert_eq!(v["result"]["principal_id"], "shared-operator", "{v}");
    assert_eq!(v.as_object().unwrap().len(), 3, "{v}");
}

#[test]
fn crlf_frames_are_answered_and_answers_end_in_lf_only() {
    let d = Daemon::start();
    let mut c = d.connect();
    c.send_raw(b"{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":1}\r\n");
    assert_eq!(c.recv_line(), nope(1));
    // Mixed endings in one write.
    c.send_raw(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":2}\n{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":3}\r\n",
    );
    let a = c.recv_line();
    let b = c.recv_line();
    assert_eq!(
        (a.as_str(), b.as_str()),
        (nope(2).as_str(), nope(3).as_str())
    );
    assert!(!a.contains('\r') && !b.contains('\r'));
    // Only the one \r before \n is removed: "\r\r\n" leaves a \r, which is JSON whitespace.
    c.send_raw(b"{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":4}\r\r\n");
    assert_eq!(c.recv_line(), nope(4));
    c.expect_nothing_before_probe();
}

#[test]
fn blank_and_whitespace_only_frames_are_ignored() {
    let d = Daemon::start();
    let mut c = d.connect();
    c.send_raw(b"\n\n\r\n   \n\t\t\n \t \r\n\r\r\n");
    c.expect_nothing_before_probe();
    // They are ignored after initialize too, and do not disturb the frames around them.
    c.initialize();
    c.send_raw(b"\n  \n{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":5}\n\r\n\n");
    assert_eq!(c.recv_line(), nope(5));
    c.expect_nothing_before_probe();
    // No frame_rejected for them.
    assert!(
        d.log.events_named("frame_rejected").is_empty(),
        "blank frames were logged as rejected:\n{}",
        d.log.text()
    );
}

/// One client that writes `frames`, half-closes, and must read one answer per frame.
#[cfg(unix)]
fn half_close_round(d: &Daemon, round: usize) {
    let mut c = d.connect();
    c.send_line(r#"{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":1}"#);
    c.send_raw(br#"{"jsonrpc":"2.0","method":"status","id":"final"}"#);
    c.shutdown_write();
    let init = c.recv_json();
    assert_eq!(init["id"], 1, "round {round}: {init}");
    assert!(init.get("result").is_some(), "round {round}: {init}");
    let last = c.try_recv_line(common::RECV_TIMEOUT).unwrap_or_else(|e| {
        panic!(
            "round {round}: the final frame (no trailing \\n, then end of stream) got {}",
            common::describe(&e)
        )
    });
    assert_status_result(&serde_json::from_str(&last).unwrap(), "final");
    c.expect_eof(common::RECV_TIMEOUT);
}

// A named pipe has no half-close (Windows): the end of stream is Unix's.
#[cfg(unix)]
#[test]
fn final_frame_without_newline_is_processed_at_end_of_stream() {
    let d = Daemon::start();
    // The loss is a race; twenty rounds make a pass meaningful.
    for round in 0..20 {
        half_close_round(&d, round);
    }
}

#[test]
fn frame_of_exactly_8_mib_is_accepted() {
    let (_d, mut c) = Daemon::with_client();
    let mut frame = sized_frame(STATUS_TEMPLATE, MAX_FRAME);
    assert_eq!(frame.len(), 8_388_608);
    frame.push(b'\n');
    c.send_raw(&frame);
    assert_status_result(&c.recv_json(), "big");
    // 8 MiB counting a trailing \r (8,388,607 bytes + \r) is accepted too.
    let mut frame = sized_frame(STATUS_TEMPLATE, MAX_FRAME - 1);
    frame.extend_from_slice(b"\r\n");
    c.send_raw(&frame);
    assert_status_result(&c.recv_json(), "big");
    c.expect_nothing_before_probe();
}

#[test]
fn frame_over_8_mib_gets_frame_too_large_and_the_connection_stays_usable() {
    let (d, mut c) = Daemon::with_client();

    // 8 MiB + 1 byte.
    let mut frame = sized_frame(STATUS_TEMPLATE, MAX_FRAME + 1);
    frame.push(b'\n');
    c.send_raw(&frame);
    assert_eq!(c.recv_line(), FRAME_TOO_LARGE);
    // Exactly one answer: the discarded frame's own id is never answered.
    c.expect_nothing_before_probe();
    assert_status_result(&c.call("status", json!({}), json!("after")), "after");

    // The \r counts: 8 MiB of content plus \r is one byte too many.
    let mut frame = sized_frame(STATUS_TEMPLATE, MAX_FRAME);
    frame.extend_from_slice(b"\r\n");
    c.send_raw(&frame);
    assert_eq!(c.recv_line(), FRAME_TOO_LARGE);
    c.expect_nothing_before_probe();

    // Far over the limit (20 MiB), followed in the same write by a valid frame:
    // one error, then the valid frame is answered.
    let mut frame = sized_frame(STATUS_TEMPLATE, 20 * 1024 * 1024);
    frame.push(b'\n');
    frame.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":9}\n");
    c.send_raw(&frame);
    assert_eq!(c.recv_line(), FRAME_TOO_LARGE);
    assert_eq!(c.recv_line(), nope(9));
    c.expect_nothing_before_probe();

    // Two oversized frames in a row: one error each.
    let mut frame = sized_frame(STATUS_TEMPLATE, MAX_FRAME + 10);
    frame.push(b'\n');
    let twice = [frame.clone(), frame].concat();
    c.send_raw(&twice);
    assert_eq!(c.recv_line(), FRAME_TOO_LARGE);
    assert_eq!(c.recv_line(), FRAME_TOO_LARGE);
    c.expect_nothing_before_probe();

    // Still bound and answering.
    assert_status_result(&c.call("status", json!({}), json!("end")), "end");

    // Audited as frame_rejected with reason frame_too_large, never with contents.
    let rejected: Vec<Value> = d
        .log
        .events_named("frame_rejected")
        .into_iter()
        .filter(|e| e["reason"] == "frame_too_large")
        .collect();
    assert_eq!(rejected.len(), 5, "log:\n{}", d.log.text());
    assert!(
        !d.log.text().contains("xxxxxxxx"),
        "frame contents were logged"
    );
}

#[test]
fn an_oversized_frame_before_initialize_is_answered_the_same() {
    let d = Daemon::start();
    let mut c = d.connect();
    let mut frame = sized_frame(STATUS_TEMPLATE, MAX_FRAME + 1);
    frame.push(b'\n');
    c.send_raw(&frame);
    assert_eq!(c.recv_line(), FRAME_TOO_LARGE);
    c.initialize();
    assert_eq!(c.status()["connections"], 1);
}

#[test]
fn a_large_frame_arriving_in_small_pieces_costs_linear_cpu() {
    let d = Daemon::start();
    let Some(before) = d.cpu_time() else {
        skip_test!("/proc/{}/stat is not readable", d.pid);
    };
    // Just under 8 MiB, written 4 KiB at a time with short pauses so that the
    // daemon reads it in many pieces. A linear reader spends well under
    // 0.1 s of CPU on it even in a debug build; the bound is generous.
    const BOUND: Duration = Duration::from_millis(600);
    let mut c = d.connect();
    c.send_raw(b"{");
    let piece = [b'x'; 4096];
    for _ in 0..2047 {
        c.send_raw(&piece);
        std::thread::sleep(Duration::from_micros(100));
    }
    c.send_raw(b"\n");
    let answer = c.recv_line();
    assert!(is_parse_error(&answer), "{answer}");
    let used = d.cpu_time().expect("/proc/<pid>/stat") - before;
    assert!(
        used <= BOUND,
        "the daemon used {used:?} of CPU to read one {} byte frame (bound {BOUND:?})",
        1 + 2047 * 4096
    );
}

/// Every kind of frame, as one byte stream (frames that fail the codec's
/// UTF-8 check only with `invalid_utf8`). Ends with a probe so the reader
/// knows when all answers are in without half-closing.
fn mixed_stream(invalid_utf8: bool) -> Vec<u8> {
    let mut s: Vec<u8> = Vec::new();
    let mut line = |b: &[u8]| {
        s.extend_from_slice(b);
    };
    line(b"{\"jsonrpc\":\"2.0\",\"method\":\"status\",\"id\":\"pre\"}\n");
    line(b"{\"jsonrpc\":\"2.0\",\"method\":\"initialize\",\"params\":{\"protocolVersion\":1},\"id\":1}\r\n");
    line(b"\n   \n\t\r\n");
    line(b"{\"jsonrpc\":\"2.0\",\"method\":\"status\",\"id\":2}\n");
    line(b"{\"jsonrpc\":\"2.0\",\"method\":\"status\"}\n");
    line(b"{\"jsonrpc\":\"2.0\",\"method\":\"n\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\",\"id\":\"\xe2\x82\xac\"}\n");
    if invalid_utf8 {
        line(b"{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":\"bad-\xff-utf8\"}\n");
        line(b"{\"jsonrpc\":\"2.0\",\"method\":\"status\",\"id\":\"\xe2\x82\"}\r\n");
    }
    line(b"[{\"jsonrpc\":\"2.0\",\"method\":\"status\",\"id\":3}]\n");
    line(b"{not json\n");
    line(b"{\"method\":\"status\",\"id\":4}\n");
    line(b"{\"jsonrpc\":\"2.0\",\"result\":1}\n");
    line(b"{\"jsonrpc\":\"2.0\",\"result\":null,\"id\":\"zc-out-0\"}\n");
    line(b"{\"jsonrpc\":\"2.0\",\"method\":\"status\",\"id\":1e400}\n");
    line(b"{\"jsonrpc\":\"2.0\",\"method\":\"status\",\"params\":null,\"id\":-0}\n");
    line(b"{\"jsonrpc\":\"2.0\",\r\"method\":\"nope\",\"id\":5}\r\n");
    line(b"{\"jsonrpc\":\"2.0\",\"method\":\"initialize\",\"params\":{\"protocol_version\":1},\"id\":6}\n");
    line(b"  {\"jsonrpc\":\"2.0\",\"method\":\"status\",\"params\":{\"s\":\"a\\nb\\\\\"},\"id\":7}  \n");
    line(b"{\"jsonrpc\":\"2.0\",\"method\":\"zc-test/probe\",\"id\":\"end\"}\n");
    s
}

/// `"key":<digits>` → `"key":0` in a frame's text.
fn mask_number(line: &str, key: &str) -> String {
    let pat = format!("\"{key}\":");
    match line.find(&pat) {
        Some(i) => {
            let start = i + pat.len();
            let end = start + line[start..].bytes().take_while(u8::is_ascii_digit).count();
            format!("{}0{}", &line[..start], &line[end..])
        }
        None => line.to_owned(),
    }
}

/// Reads answers until the probe's, with the values that legitimately
/// change from run to run (uptime, connection count) masked.
fn read_answers(c: &mut Client) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let line = match c.try_recv_line(common::RECV_TIMEOUT) {
            Ok(l) => l,
            Err(e) => panic!(
                "after {} answers {out:#?}\nexpected another, got {}",
                out.len(),
                common::describe(&e)
            ),
        };
        let done = line.ends_with(",\"id\":\"end\"}");
        out.push(mask_number(
            &mask_number(&line, "uptime_secs"),
            "connections",
        ));
        if done {
            return out;
        }
        assert!(out.len() < 100, "no end of answers: {out:#?}");
    }
}

/// Sends `stream` in the given chunks, pausing briefly between them so the
/// daemon's reads see the boundaries.
fn send_chunked(c: &mut Client, stream: &[u8], cuts: &[usize]) {
    let mut at = 0;
    for &cut in cuts.iter().chain(std::iter::once(&stream.len())) {
        if cut > at {
            c.stream.write_all(&stream[at..cut]).unwrap();
            c.stream.flush().unwrap();
            std::thread::sleep(Duration::from_micros(100));
            at = cut;
        }
    }
}

/// Feeds `stream` whole, byte by byte and at seeded random split points,
/// each on a fresh connection, and returns the (identical) answers.
fn answers_under_every_split(d: &Daemon, stream: &[u8]) -> Vec<String> {
    let mut whole = d.connect();
    whole.send_raw(stream);
    let expected = read_answers(&mut whole);
    drop(whole);

    let mut c = d.connect();
    let cuts: Vec<usize> = (1..stream.len()).collect();
    send_chunked(&mut c, stream, &cuts);
    assert_eq!(read_answers(&mut c), expected, "byte-by-byte split");
    drop(c);

    for seed in [1u64, 0x5eed, 0xdead_beef, 42_4242] {
        let mut rng = Rng::new(seed);
        let mut cuts = Vec::new();
        let mut at = 0;
        while at < stream.len() {
            at += rng.range(1, 97);
            cuts.push(at.min(stream.len()));
        }
        let mut c = d.connect();
        send_chunked(&mut c, stream, &cuts);
        assert_eq!(
            read_answers(&mut c),
            expected,
            "random split, seed {seed:#x}"
        );
    }
    expected
}

fn is_parse_error(frame: &str) -> bool {
    frame.starts_with(r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error: "#)
        && frame.ends_with(r#""},"id":null}"#)
}

#[test]
fn byte_by_byte_and_random_splits_give_identical_answers() {
    let d = Daemon::start();
    let expected = answers_under_every_split(&d, &mixed_stream(false));
    // The stream exercises what it should.
    assert_eq!(expected.len(), 13, "{expected:#?}");
    assert!(expected[0].contains("\"code\":-32010"), "{}", expected[0]);
    assert!(
        expected[1].contains("\"protocolVersion\":1"),
        "{}",
        expected[1]
    );
    assert!(
        expected[2].contains("\"principal_id\":\"shared-operator\""),
        "{}",
        expected[2]
    );
    assert_eq!(
        expected[3],
        r#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Unknown method: né€😀"},"id":"€"}"#
    );
    assert!(
        expected[4].contains("\"reason\":\"batch\""),
        "{}",
        expected[4]
    );
    assert!(is_parse_error(&expected[5]), "{}", expected[5]);
    assert!(
        expected[6].ends_with("\"reason\":\"invalid_envelope\"}},\"id\":4}"),
        "{}",
        expected[6]
    );
    assert!(expected[7].ends_with(",\"id\":1e400}"), "{}", expected[7]);
    assert!(expected[8].ends_with(",\"id\":-0}"), "{}", expected[8]);
    assert_eq!(expected[9], nope(5));
    assert!(
        expected[10].contains("\"protocol_version\":1"),
        "{}",
        expected[10]
    );
    assert!(expected[11].ends_with(",\"id\":7}"), "{}", expected[11]);
}

#[test]
fn byte_by_byte_and_random_splits_give_identical_answers_with_invalid_utf8() {
    let d = Daemon::start();
    let expected = answers_under_every_split(&d, &mixed_stream(true));
    assert_eq!(expected.len(), 15, "{expected:#?}");
    assert!(is_parse_error(&expected[4]), "{}", expected[4]);
    assert!(is_parse_error(&expected[5]), "{}", expected[5]);
}

#[test]
fn a_frame_behind_an_invalid_utf8_frame_in_the_same_write_is_answered() {
    let d = Daemon::start();
    let mut c = d.connect();
    c.send_raw(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":\"\xff\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":2}\n",
    );
    let first = c.recv_line();
    assert!(is_parse_error(&first), "{first}");
    // The second frame is complete and already sent: no further byte must be
    // needed to get it answered.
    match c.try_recv_line(Duration::from_secs(3)) {
        Ok(l) => assert_eq!(l, nope(2)),
        Err(e) => panic!(
            "the frame behind the invalid one was not answered: {}",
            common::describe(&e)
        ),
    }
}
