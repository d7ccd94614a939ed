//! Chunked uploads over the real socket (§8.18, §4): begin, chunk and
//! commit with their exact results and errors, the offset and size rules,
//! commit failures that keep or release the upload, the per-connection
//! count, the daemon-wide budget with its exact charge, idle reclaiming at
//! begin and by the sweep, and the uploads' confinement to their
//! connection. Every refusal is shown to have written nothing.

use crate::common;
use common::assert::assert_error_exact;
use common::errors::{file_too_large, session_not_found};
use common::rpc::next_id;
use common::start::{config_with, echo_client, echo_session, start};
use common::wait::eventually;

use std::time::{Duration, Instant};

use common::files::*;
use serde_json::json;

#[test]
fn begin_chunks_commit_with_and_without_sha256() {
    let (d, mut c) = echo_session("s1", "chat");

    // 2.5 MiB in chunks of exactly 1 MiB, 1 MiB and 0.5 MiB; sha256 in upper case.
    let x = pattern(1, 2 * CHUNK + CHUNK / 2);
    let id = begin_ok(
        &mut c,
        json!({"session_id": "s1", "size_bytes": x.len(), "filename": "data.BIN",
               "sha256": sha256_hex(&x).to_uppercase()}),
    );
    for (i, piece) in x.chunks(CHUNK).enumerate() {
        chunk_ok(&mut c, &id, (i * CHUNK) as u64, piece);
    }
    // Nothing is stored before the commit.
    assert!(tree(&d.uploads()).is_empty());
    let p = d.stored(&x, Some("bin"));
    let r = res_of(&commit(&mut c, &id));
    assert_eq!(r, file_result(&x, &p, doc_marker("data.BIN", &p), false));
    assert_files(&d.uploads(), &[(&p, &x)]);
    // Committed: the id is unknown from now on.
    assert_unknown_upload(&err_of(&commit(&mut c, &id)));
    assert_unknown_upload(&err_of(&chunk(&mut c, &id, x.len() as u64, b"z")));

    // Without sha256: an image, marked with its workspace path.
    let img = pattern(2, 1234);
    let id = begin_ok(
        &mut c,
        json!({"session_id": "s1", "size_bytes": img.len(), "filename": "pic.png"}),
    );
    chunk_ok(&mut c, &id, 0, &img);
    let pi = d.stored(&img, Some("png"));
    let r = res_of(&commit(&mut c, &id));
    assert_eq!(
        r,
        file_result(&img, &pi, format!("[IMAGE:{}]", pi.display()), false)
    );

    // An empty file, no filename: committed without any chunk, named `upload`.
    let id = begin_ok(&mut c, json!({"session_id": "s1", "size_bytes": 0}));
    let pe = d.stored(b"", None);
    let r = res_of(&commit(&mut c, &id));
    assert_eq!(r, file_result(b"", &pe, doc_marker("upload", &pe), false));
    assert_files(&d.uploads(), &[(&p, &x), (&pi, &img), (&pe, b"")]);

    // The largest file: exactly 10 MiB.
    let big = pattern(3, MAX_FILE);
    let pb = d.stored(&big, None);
    let r = res_of(&upload(&mut c, "s1", &big, None));
    assert_eq!(r, file_result(&big, &pb, doc_marker("upload", &pb), false));
    assert_eq!(std::fs::read(&pb).unwrap(), big);
}

#[test]
fn offsets_must_continue_the_upload_and_duplicates_are_acknowledged() {
    let (d, mut c) = echo_session("s1", "chat");
    let x = pattern(10, 3000);
    let id = begin_ok(&mut c, json!({"session_id": "s1", "size_bytes": 3000}));
    chunk_ok(&mut c, &id, 0, &x[..1000]);

    let mismatch =
        |expected: u64| Some(json!({"reason": "offset_mismatch", "expected_offset": expected}));
    // Gaps, overlaps, and rewinds whose bytes differ from those received.
    let flipped = [x[999] ^ 1];
    for (offset, bytes) in [
        (2000, &x[2000..2100]),
        (1001, &x[1001..1100]),
        (500, &x[500..1500]),
        (0, &x[1..1001]),
        (999, &flipped[..]),
    ] {
        let e = err_of(&chunk(&mut c, &id, offset, bytes));
        assert_error_exact(&e, -32602, Some("offset mismatch"), mismatch(1000));
    }
    // (A huge offset: see `a_huge_offset_is_an_offset_mismatch`.)

    // Re-sending an accepted range (whole or part) is acknowledged without change.
    for (offset, range) in [(0, 0..1000), (0, 0..10), (400, 400..1000), (999, 999..1000)] {
        let v = chunk(&mut c, &id, offset, &x[range]);
        assert_eq!(
            v.get("result"),
            Some(&json!({"upload_id": id, "received_bytes": 1000, "duplicate": true})),
            "{v}"
        );
    }

    // Beyond the declared size.
    let e = err_of(&chunk(&mut c, &id, 1000, &pattern(11, 2001)));
    assert_error_exact(
        &e,
        -32602,
        Some("chunk exceeds the declared size (3000 bytes)"),
        Some(json!({"reason": "exceeds_declared_size", "size_bytes": 3000})),
    );
    // None of this changed the upload.
    chunk_ok(&mut c, &id, 1000, &x[1000..2000]);
    chunk_ok(&mut c, &id, 2000, &x[2000..]);
    // Past the end, even a one-byte chunk at the right offset exceeds.
    let e = err_of(&chunk(&mut c, &id, 3000, b"z"));
    assert_error_exact(
        &e,
        -32602,
        Some("chunk exceeds the declared size (3000 bytes)"),
        Some(json!({"reason": "exceeds_declared_size", "size_bytes": 3000})),
    );
    let v = chunk(&mut c, &id, 2000, &x[2000..]);
    assert_eq!(
        v["result"],
        json!({"upload_id": id, "received_bytes": 3000, "duplicate": true})
    );
    let p = d.stored(&x, None);
    assert_eq!(
        res_of(&commit(&mut c, &id)),
        file_result(&x, &p, doc_marker("upload", &p), false)
    );
    assert_files(&d.uploads(), &[(&p, &x)]);
}

#[test]
fn a_huge_offset_is_an_offset_mismatch() {
    let (_d, mut c) = echo_session("s1", "chat");
    let id = begin_ok(&mut c, json!({"session_id": "s1", "size_bytes": 10}));
    chunk_ok(&mut c, &id, 0, b"01234");
    for offset in [u64::MAX, u64::MAX - 4, 1 << 63] {
        let e = err_of(&chunk(&mut c, &id, offset, b"abcde"));
        assert_error_exact(
            &e,
            -32602,
            Some("offset mismatch"),
            Some(json!({"reason": "offset_mismatch", "expected_offset": 5})),
        );
    }
    chunk_ok(&mut c, &id, 5, b"56789");
    res_of(&commit(&mut c, &id));
}

#[test]
fn chunk_sizes_and_encodings_are_checked() {
    let (d, mut c) = echo_session("s1", "chat");
    let id = begin_ok(&mut c, json!({"session_id": "s1", "size_bytes": MAX_FILE}));
    let too_big = b64(&pattern(20, CHUNK + 1));
    for (what, params) in [
        (
            "empty chunk",
            json!({"upload_id": id, "offset": 0, "data_b64": ""}),
        ),
        (
            "1 MiB + 1",
            json!({"upload_id": id, "offset": 0, "data_b64": too_big}),
        ),
        (
            "not base64",
            json!({"upload_id": id, "offset": 0, "data_b64": "abc"}),
        ),
        (
            "bad alphabet",
            json!({"upload_id": id, "offset": 0, "data_b64": "a*c="}),
        ),
        ("no data", json!({"upload_id": id, "offset": 0})),
        ("no offset", json!({"upload_id": id, "data_b64": "YQ=="})),
        (
            "negative offset",
            json!({"upload_id": id, "offset": -1, "data_b64": "YQ=="}),
        ),
        (
            "string offset",
            json!({"upload_id": id, "offset": "0", "data_b64": "YQ=="}),
        ),
        ("no upload_id", json!({"offset": 0, "data_b64": "YQ=="})),
    ] {
        let e = err_of(&c.call_frame("file/upload/chunk", params));
        assert_eq!(e["code"], -32602, "{what}: {e}");
        assert_eq!(e.get("data"), None, "{what}: {e}");
    }
    // An id that never existed.
    assert_unknown_upload(&err_of(&chunk(
        &mut c,
        "upl_00000000000000000000000000000000",
        0,
        b"a",
    )));
    assert_unknown_upload(&err_of(&commit(
        &mut c,
        "upl_00000000000000000000000000000000",
    )));
    // Nothing was received: the first chunk still goes at offset 0.
    chunk_ok(&mut c, &id, 0, &pattern(21, CHUNK));
    assert!(tree(&d.uploads()).is_empty());
}

#[test]
fn begin_validates_its_params() {
    let (d, mut c) = echo_session("s1", "chat");
    for n in [MAX_FILE as u64 + 1, u64::MAX] {
        let e = err_of(&begin(&mut c, json!({"session_id": "s1", "size_bytes": n})));
        file_too_large(&e, n);
    }
    let sha = sha256_hex(b"x");
    for (what, params) in [
        ("no size", json!({"session_id": "s1"})),
        (
            "negative size",
            json!({"session_id": "s1", "size_bytes": -1}),
        ),
        (
            "fractional size",
            json!({"session_id": "s1", "size_bytes": 1.5}),
        ),
        (
            "string size",
            json!({"session_id": "s1", "size_bytes": "10"}),
        ),
        (
            "filename of 256 bytes",
            json!({"session_id": "s1", "size_bytes": 1, "filename": "f".repeat(256)}),
        ),
        (
            "filename of 256 UTF-8 bytes",
            json!({"session_id": "s1", "size_bytes": 1, "filename": "é".repeat(128)}),
        ),
        (
            "sha256 of 63 digits",
            json!({"session_id": "s1", "size_bytes": 1, "sha256": &sha[..63]}),
        ),
        (
            "sha256 of 65 digits",
            json!({"session_id": "s1", "size_bytes": 1, "sha256": format!("{sha}0")}),
        ),
        (
            "sha256 not hex",
            json!({"session_id": "s1", "size_bytes": 1, "sha256": format!("{}g", &sha[..63])}),
        ),
        (
            "sha256 with prefix",
            json!({"session_id": "s1", "size_bytes": 1, "sha256": format!("sha256:{}", &sha[..57])}),
        ),
        ("no session", json!({"size_bytes": 1})),
        (
            "bad session id",
            json!({"session_id": "a b", "size_bytes": 1}),
        ),
    ] {
        let e = err_of(&begin(&mut c, params));
        assert_eq!(e["code"], -32602, "{what}: {e}");
        assert_eq!(e.get("data"), None, "{what}: {e}");
    }
    // Numbers serde_json cannot hold as u64 (docs/decisions.md).
    for n in ["18446744073709551616", "1e3", "1000.0"] {
        c.send_line(&format!(
            r#"{{"jsonrpc":"2.0","method":"file/upload/begin","params":{{"session_id":"s1","size_bytes":{n}}},"id":"raw"}}"#
        ));
        let e = err_of(&c.recv_json());
        assert_eq!(e["code"], -32602, "{n}: {e}");
        assert_eq!(e.get("data"), None, "{n}: {e}");
    }
    let e = err_of(&begin(
        &mut c,
        json!({"session_id": "nope", "size_bytes": 1}),
    ));
    session_not_found(&e);
    // Refused begins hold no slot: four still fit on this connection.
    for _ in 0..4 {
        begin_ok(
            &mut c,
            json!({"session_id": "s1", "size_bytes": 1, "filename": "g".repeat(255)}),
        );
    }
    assert!(tree(&d.uploads()).is_empty());
}

#[test]
fn an_incomplete_commit_keeps_the_upload_and_a_hash_mismatch_releases_it() {
    let (d, mut c) = echo_session("s1", "chat");
    let x = pattern(30, 2000);

    let id = begin_ok(
        &mut c,
        json!({"session_id": "s1", "size_bytes": 2000, "sha256": sha256_hex(&x)}),
    );
    let e = err_of(&commit(&mut c, &id));
    assert_error_exact(
        &e,
        -32602,
        Some("incomplete upload: received 0 of 2000"),
        Some(json!({"reason": "incomplete", "received_bytes": 0, "size_bytes": 2000})),
    );
    chunk_ok(&mut c, &id, 0, &x[..1000]);
    let e = err_of(&commit(&mut c, &id));
    assert_error_exact(
        &e,
        -32602,
        Some("incomplete upload: received 1000 of 2000"),
        Some(json!({"reason": "incomplete", "received_bytes": 1000, "size_bytes": 2000})),
    );
    assert!(tree(&d.uploads()).is_empty());
    // Still staged: more chunks are accepted, then the commit succeeds.
    chunk_ok(&mut c, &id, 1000, &x[1000..]);
    let p = d.stored(&x, None);
    assert_eq!(
        res_of(&commit(&mut c, &id)),
        file_result(&x, &p, doc_marker("upload", &p), false)
    );

    // A declared hash that does not match: refused, released, nothing written.
    let y = pattern(31, 500);
    let id = begin_ok(
        &mut c,
        json!({"session_id": "s1", "size_bytes": 500, "filename": "y.txt", "sha256": sha256_hex(b"other")}),
    );
    chunk_ok(&mut c, &id, 0, &y);
    let e = err_of(&commit(&mut c, &id));
    assert_error_exact(
        &e,
        -32602,
        Some("sha256 mismatch"),
        Some(json!({"reason": "sha256_mismatch"})),
    );
    assert_unknown_upload(&err_of(&commit(&mut c, &id)));
    assert_unknown_upload(&err_of(&chunk(&mut c, &id, 0, &y)));
    assert_files(&d.uploads(), &[(&p, &x)]);
}

#[test]
fn at_most_four_staged_uploads_per_connection() {
    let (d, mut c) = echo_session("s1", "chat");
    let b = |n: usize| json!({"session_id": "s1", "size_bytes": n});
    let limit = || Some(json!({"limit": "uploads_per_connection", "max": 4}));
    let full = |c: &mut common::Client| {
        let e = err_of(&begin(c, json!({"session_id": "s1", "size_bytes": 9})));
        assert_error_exact(&e, -32004, Some("uploads_per_connection exceeded"), limit());
    };
    let mut ids: Vec<String> = (1..=3).map(|n| begin_ok(&mut c, b(n))).collect();
    ids.push(begin_ok(
        &mut c,
        json!({"session_id": "s1", "size_bytes": 4, "sha256": sha256_hex(b"wxyz")}),
    ));
    full(&mut c);

    // Another connection has its own four.
    let mut other = d.client();
    for n in 1..=4 {
        begin_ok(&mut other, b(n));
    }
    full(&mut other);

    // An incomplete commit keeps the slot ...
    assert_eq!(
        err_of(&commit(&mut c, &ids[1]))["data"]["reason"],
        "incomplete"
    );
    full(&mut c);
    // ... a successful commit frees it ...
    chunk_ok(&mut c, &ids[0], 0, b"a");
    res_of(&commit(&mut c, &ids[0]));
    begin_ok(&mut c, b(5));
    full(&mut c);
    // ... and so does a hash mismatch.
    chunk_ok(&mut c, &ids[3], 0, b"abcd");
    assert_eq!(
        err_of(&commit(&mut c, &ids[3]))["data"]["reason"],
        "sha256_mismatch"
    );
    begin_ok(&mut c, b(6));
    full(&mut c);
    assert_files(&d.uploads(), &[(&d.stored(b"a", None), b"a")]);
}

#[test]
fn an_upload_is_visible_only_to_its_connection() {
    let (d, mut a) = echo_client();
    let mut b = d.client();
    a.new_session("s1", "chat");
    let x = pattern(40, 2000);
    let id = begin_ok(&mut a, json!({"session_id": "s1", "size_bytes": 2000}));
    chunk_ok(&mut a, &id, 0, &x[..1000]);

    // Same principal, same session, another connection: as if it never existed.
    assert_unknown_upload(&err_of(&chunk(&mut b, &id, 1000, &x[1000..])));
    assert_unknown_upload(&err_of(&chunk(&mut b, &id, 0, &x[..1000])));
    assert_unknown_upload(&err_of(&commit(&mut b, &id)));

    // A repeated initialize keeps the connection's uploads (§5.3).
    a.initialize();
    chunk_ok(&mut a, &id, 1000, &x[1000..]);
    let p = d.stored(&x, None);
    assert_eq!(
        res_of(&commit(&mut a, &id)),
        file_result(&x, &p, doc_marker("upload", &p), false)
    );
    assert_files(&d.uploads(), &[(&p, &x)]);
}

/// The charge of one upload (§8.18.1): size, retained metadata, overhead.
fn charge(size: usize, session: &str, filename: &str, sha: bool) -> usize {
    size + session.len()
        + OPERATOR.len()
        + "echo".len()
        + filename.len()
        + if sha { 64 } else { 0 }
        + OVERHEAD
}

#[test]
fn the_staged_budget_is_exact_freed_by_closing_and_reclaimed_from_idle_uploads() {
    let (d, mut adm) = echo_client();
    let sid = "budget";
    adm.new_session(sid, "chat");
    let p = |n: usize| json!({"session_id": sid, "size_bytes": n, "filename": "f"});
    let over = || Some(json!({"limit": "staged_bytes", "max": BUDGET}));
    let full = |c: &mut common::Client, n: usize| {
        let e = err_of(&begin(
            c,
            json!({"session_id": sid, "size_bytes": n, "filename": "f"}),
        ));
        assert_error_exact(&e, -32004, Some("staged_bytes exceeded"), over());
    };

    // 25 uploads of 10 MiB from 7 connections, all kept open.
    let mut conns: Vec<common::Client> = (0..7).map(|_| d.client()).collect();
    let mut ids: Vec<Vec<String>> = vec![Vec::new(); 7];
    for k in 0..25 {
        ids[k / 4].push(begin_ok(&mut conns[k / 4], p(MAX_FILE)));
    }
    // One byte received by the first upload (X), which stays active later.
    let x_id = ids[0][0].clone();
    chunk_ok(&mut conns[0], &x_id, 0, b"x");

    // What is left, filled exactly by an upload that declares a hash and
    // no filename (its retained filename is the default, `upload`).
    let left = BUDGET - 25 * charge(MAX_FILE, sid, "f", false);
    let fit = left - charge(0, sid, "upload", true);
    let with_sha =
        |n: usize| json!({"session_id": sid, "size_bytes": n, "sha256": sha256_hex(b"")});
    let e = err_of(&begin(&mut conns[6], with_sha(fit + 1)));
    assert_error_exact(&e, -32004, Some("staged_bytes exceeded"), over());
    ids[6].push(begin_ok(&mut conns[6], with_sha(fit)));
    // Full to the byte: even an empty upload costs its metadata.
    full(&mut conns[6], 0);
    full(&mut adm, 0);

    // Closing a connection drops its uploads and frees their charge.
    drop(conns.remove(1));
    ids.remove(1);
    let mut late = d.client();
    let first = eventually("the closed connection's uploads freed", WAIT, || {
        begin(&mut late, p(MAX_FILE)).get("result").cloned()
    });
    let mut late_ids = vec![first["upload_id"].as_str().unwrap().to_owned()];
    for _ in 0..3 {
        late_ids.push(begin_ok(&mut late, p(MAX_FILE)));
    }
    full(&mut adm, 0);

    // With a 1 s idle limit (set live; the sweep is not due for 30 s), a
    // begin that does not fit reclaims every upload idle for longer, even on
    // open connections, but not X, active again just before.
    let r = adm.config_set("daemon.upload_idle_secs", json!(1));
    assert_eq!(r, json!({"prop": "daemon.upload_idle_secs", "set": true}));
    std::thread::sleep(Duration::from_millis(1500));
    let v = chunk(&mut conns[0], &x_id, 0, b"x");
    assert_eq!(
        v["result"],
        json!({"upload_id": x_id, "received_bytes": 1, "duplicate": true}),
        "{v}"
    );
    begin_ok(&mut adm, p(MAX_FILE));
    chunk_ok(&mut conns[0], &x_id, 1, b"y");
    assert_unknown_upload(&err_of(&chunk(&mut conns[0], &ids[0][1], 0, b"a")));
    assert_unknown_upload(&err_of(&chunk(&mut conns[3], &ids[3][0], 0, b"a")));
    assert_unknown_upload(&err_of(&commit(&mut conns[5], &ids[5][0])));
    assert_unknown_upload(&err_of(&chunk(&mut late, &late_ids[2], 0, b"a")));
    // The freed budget is usable: four more 10 MiB uploads on a fresh connection.
    let mut fresh = d.client();
    for _ in 0..4 {
        begin_ok(&mut fresh, p(MAX_FILE));
    }
    assert!(tree(&d.uploads()).is_empty());
}

#[test]
fn the_idle_sweep_drops_uploads_and_duplicate_chunks_count_as_activity() {
    let d = start(&config_with("[daemon]\nupload_idle_secs = 1\n"));
    let mut c = d.client();
    let mut other = d.client();
    c.new_session("s1", "chat");
    let x = pattern(50, 10);
    let id = begin_ok(&mut c, json!({"session_id": "s1", "size_bytes": 10}));
    chunk_ok(&mut c, &id, 0, &x[..5]);
    let idle = begin_ok(&mut other, json!({"session_id": "s1", "size_bytes": 10}));

    // Kept alive for 3 s (three idle limits) by duplicate chunks alone.
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(250));
        let v = chunk(&mut c, &id, 0, &x[..5]);
        assert_eq!(
            v["result"],
            json!({"upload_id": id, "received_bytes": 5, "duplicate": true}),
            "after {:?}: {v}",
            t0.elapsed()
        );
    }
    // Meanwhile the other connection's idle upload was swept, its connection still open.
    assert_unknown_upload(&err_of(&chunk(&mut other, &idle, 0, b"a")));

    // Left alone, it is swept too.
    let from = d.log.len();
    d.log
        .wait_for(from, WAIT, |v| {
            v["event"] == "uploads_reclaimed" && v["reason"] == "idle"
        })
        .expect("an idle sweep");
    assert_unknown_upload(&err_of(&chunk(&mut c, &id, 5, &x[5..])));
    assert_unknown_upload(&err_of(&commit(&mut c, &id)));
    assert!(tree(&d.uploads()).is_empty());
}

#[test]
fn only_accepted_or_duplicate_chunks_count_as_activity() {
    let d = start(&config_with("[daemon]\nupload_idle_secs = 1\n"));
    let mut c = d.session_client("s1", "chat");
    let id = begin_ok(&mut c, json!({"session_id": "s1", "size_bytes": 10}));
    chunk_ok(&mut c, &id, 0, b"01234");
    // For 4 s (four idle limits) only refused requests name the upload.
    let t0 = Instant::now();
    let mut last = json!(null);
    while t0.elapsed() < Duration::from_secs(4) {
        std::thread::sleep(Duration::from_millis(200));
        last = err_of(&chunk(&mut c, &id, 3, b"x"));
        std::thread::sleep(Duration::from_millis(200));
        let e = err_of(&commit(&mut c, &id));
        if e["data"]["reason"] == "unknown_upload" {
            return;
        }
    }
    panic!("still staged after 4 s of refused requests only (last chunk answer {last})");
}

#[test]
fn pipelined_chunks_and_commit_are_handled_in_arrival_order() {
    let (d, mut c) = echo_session("s1", "chat");
    let x = pattern(60, 3 * CHUNK + 17);
    let id = begin_ok(
        &mut c,
        json!({"session_id": "s1", "size_bytes": x.len(), "sha256": sha256_hex(&x)}),
    );
    // Every chunk and the commit sent before reading any answer (§3.7).
    let mut ids = Vec::new();
    for (i, piece) in x.chunks(CHUNK).enumerate() {
        let rid = next_id();
        c.send_json(
            &json!({"jsonrpc": "2.0", "method": "file/upload/chunk", "id": rid,
            "params": {"upload_id": id, "offset": i * CHUNK, "data_b64": b64(piece)}}),
        );
        ids.push((
            rid,
            json!({"upload_id": id, "received_bytes": (i * CHUNK + piece.len())}),
        ));
    }
    let p = d.stored(&x, None);
    let rid = next_id();
    c.send_json(
        &json!({"jsonrpc": "2.0", "method": "file/upload/commit", "id": rid,
        "params": {"upload_id": id}}),
    );
    ids.push((rid, file_result(&x, &p, doc_marker("upload", &p), false)));
    let mut answers = std::collections::HashMap::new();
    for _ in 0..ids.len() {
        let f = c.recv_json();
        answers.insert(f["id"].as_str().unwrap().to_owned(), f);
    }
    for (rid, want) in ids {
        let f = &answers[rid.as_str().unwrap()];
        assert_eq!(f.get("result"), Some(&want), "{f}");
    }
    assert_files(&d.uploads(), &[(&p, &x)]);
}
