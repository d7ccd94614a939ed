//! `file/attach` over the real socket (§8.17, §8.18.4, §4): both entry
//! modes, the exact file results and markers, the stored names, the limits
//! checked on the whole request before anything is stored, per-session
//! deduplication, and the restoring of an indexed file that was edited,
//! deleted or replaced. Every refused request is shown to have written
//! nothing: the uploads directory is compared byte for byte.

use crate::common;
use common::assert::assert_error_exact;
use common::errors::{
    file_too_large, invalid_params, not_owner, path_admin_only, session_not_found, storage_failed,
};
use common::start::{echo_session, Env};

#[cfg(unix)]
use std::os::unix::fs::MetadataExt;

use common::files::*;
use serde_json::{json, Value};

#[test]
fn data_b64_entries_are_stored_content_addressed_with_exact_results() {
    let (d, mut c) = echo_session("s1", "chat");

    // The spec's example: 4 bytes named notes.txt.
    let got = attach_ok(&mut c, "s1", json!([entry(b"test", Some("notes.txt"))]));
    let p = d.stored(b"test", Some("txt"));
    // Compared by components: Windows joins with `\`.
    assert!(p.ends_with(
        std::path::Path::new("uploads")
            .join("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08.txt")
    ));
    assert_eq!(
        got,
        vec![file_result(b"test", &p, doc_marker("notes.txt", &p), false)]
    );
    assert_files(&d.uploads(), &[(&p, b"test")]);
    // Only `uploads/` appears in the workspace.
    assert_eq!(names(&d.workspace()), vec!["uploads"]);

    // Several entries in one request: results in entry order; default
    // filename `upload`; MIME guessed from the extension or given.
    let (a, b, cc, dd, e) = (
        b"# title\n".to_vec(),
        pattern(1, 300),
        pattern(2, 1000),
        pattern(3, 77),
        pattern(4, 5),
    );
    let got = attach_ok(
        &mut c,
        "s1",
        json!([
            entry(&a, Some("README.md")),
            entry(&b, None),
            entry(&cc, Some("photo.PNG")),
            {"data_b64": b64(&dd), "filename": "x.txt", "mime_type": "image/webp"},
            {"data_b64": b64(&e), "filename": "y.png", "mime_type": "text/plain", "source": "clipboard"},
        ]),
    );
    let (pa, pb, pc, pd, pe) = (
        d.stored(&a, Some("md")),
        d.stored(&b, None),
        d.stored(&cc, Some("png")),
        d.stored(&dd, Some("txt")),
        d.stored(&e, Some("png")),
    );
    assert_eq!(
        got,
        vec![
            file_result(&a, &pa, doc_marker("README.md", &pa), false),
            file_result(&b, &pb, doc_marker("upload", &pb), false),
            file_result(&cc, &pc, format!("[IMAGE:{}]", pc.display()), false),
            file_result(&dd, &pd, format!("[IMAGE:{}]", pd.display()), false),
            file_result(&e, &pe, doc_marker("y.png", &pe), false),
        ]
    );
    assert_files(
        &d.uploads(),
        &[
            (&p, b"test"),
            (&pa, &a),
            (&pb, &b),
            (&pc, &cc),
            (&pd, &dd),
            (&pe, &e),
        ],
    );
}

#[test]
fn path_mode_reads_the_file_and_image_markers_name_the_original_path() {
    let (d, mut c) = echo_session("s1", "chat");
    let scratch = d.scratch();
    let img = pattern(10, 4096);
    let txt = b"report body\n".to_vec();
    let md = pattern(11, 10);
    let img_path = put(&scratch.join("pic.JPG"), &img);
    let txt_path = put(&scratch.join("report.txt"), &txt);
    let md_path = put(&scratch.join("noext"), &md);

    let got = attach_ok(
        &mut c,
        "s1",
        json!([
            {"path": img_path},
            {"path": txt_path},
            {"path": md_path, "filename": "given.MD"},
        ]),
    );
    let (pi, pt, pm) = (
        d.stored(&img, Some("jpg")),
        d.stored(&txt, Some("txt")),
        d.stored(&md, Some("md")),
    );
    assert_eq!(
        got,
        vec![
            file_result(&img, &pi, format!("[IMAGE:{img_path}]"), false),
            file_result(&txt, &pt, doc_marker("report.txt", &pt), false),
            file_result(&md, &pm, doc_marker("given.MD", &pm), false),
        ]
    );
    assert_files(&d.uploads(), &[(&pi, &img), (&pt, &txt), (&pm, &md)]);
    // The originals are untouched.
    assert_eq!(std::fs::read(&img_path).unwrap(), img);

    // A path that cannot be read: -32602, and nothing of the request is stored.
    let before = tree(&d.uploads());
    let fresh = pattern(12, 10);
    let missing = scratch.join("missing.txt");
    let e = err_of(&attach(
        &mut c,
        "s1",
        json!([entry(&fresh, Some("f.txt")), {"path": missing.to_str().unwrap()}]),
    ));
    invalid_params(&e);
    assert_eq!(tree(&d.uploads()), before);
}

#[test]
fn path_mode_is_admin_only() {
    let r = ok_or_skip!(Roster::start(UPLOADER, ""));
    let d = &r.env;
    let mut u = r.client();
    u.new_session("mine", "chat");
    let scratch = d.scratch();
    let file = put(&scratch.join("a.txt"), b"from disk");

    // Refused before anything is read or stored, also when a data entry comes first.
    for files in [
        json!([{"path": file}]),
        json!([entry(b"first", Some("first.txt")), {"path": file}]),
    ] {
        let e = err_of(&attach(&mut u, "mine", files));
        path_admin_only(&e);
        assert!(tree(&d.uploads()).is_empty(), "{:?}", tree(&d.uploads()));
    }
    // The same entry as a prompt attachment: refused, the prompt does not run.
    let p = prompt(&mut u, "mine", "hello", Some(json!([{"path": file}])));
    path_admin_only(&err_of(&p.answer));
    assert!(p.before.is_empty(), "{:?}", p.before);
    assert!(tree(&d.uploads()).is_empty());
    assert!(transcript(&mut u, "mine").is_empty());

    // The roster user may attach data to its own session ...
    let got = attach_ok(&mut u, "mine", json!([entry(b"mine", Some("m.txt"))]));
    let pm = d.stored(b"mine", Some("txt"));
    assert_eq!(
        got,
        vec![file_result(b"mine", &pm, doc_marker("m.txt", &pm), false)]
    );
    // ... but not to the operator's (ownership, §6.6), and nothing is written.
    let mut admin = d.session_client("theirs", "chat");
    let e = err_of(&attach(
        &mut u,
        "theirs",
        json!([entry(b"intruder", Some("i.txt"))]),
    ));
    not_owner(&e);
    assert_files(&d.uploads(), &[(&pm, b"mine")]);
    // The admin may use path mode on the same file.
    let got = attach_ok(&mut admin, "theirs", json!([{"path": file}]));
    let pf = d.stored(b"from disk", Some("txt"));
    assert_eq!(
        got,
        vec![file_result(
            b"from disk",
            &pf,
            doc_marker("a.txt", &pf),
            false
        )]
    );
}

#[test]
fn size_limits_are_checked_on_the_whole_request_before_anything_is_stored() {
    let (d, mut c) = echo_session("s1", "chat");
    let s = d.scratch();
    let over = put(&s.join("over.bin"), &pattern(20, MAX_FILE + 1));
    let six: Vec<String> = (0..3)
        .map(|i| {
            put(
                &s.join(format!("six{i}.bin")),
                &pattern(30 + i, 6 * 1024 * 1024),
            )
        })
        .collect();
    let small = pattern(40, 1000);
    let three = pattern(41, 3 * 1024 * 1024);

    // Per file: 10 MiB + 1 in second place fails the request; the first entry is not stored.
    let e = err_of(&attach(
        &mut c,
        "s1",
        json!([entry(&small, Some("small.txt")), {"path": over}]),
    ));
    file_too_large(&e, 10485761);
    assert!(tree(&d.uploads()).is_empty());

    // Per request: 6 + 6 + 6 MiB would fit, the 3 MiB data entry after them does not.
    let e = err_of(&attach(
        &mut c,
        "s1",
        json!([{"path": six[0]}, {"path": six[1]}, {"path": six[2]}, entry(&three, Some("t.bin"))]),
    ));
    assert_error_exact(
        &e,
        -32602,
        Some("Request exceeds 20 MB limit (22020096 bytes)"),
        Some(json!({"reason": "request_too_large", "max_bytes": MAX_REQUEST})),
    );
    assert!(tree(&d.uploads()).is_empty());

    // Exactly at both limits: two files of 10 MiB make a 20 MiB request.
    let ten: Vec<Vec<u8>> = (0..2).map(|i| pattern(50 + i, MAX_FILE)).collect();
    let tp: Vec<String> = ten
        .iter()
        .enumerate()
        .map(|(i, b)| put(&s.join(format!("ten{i}.bin")), b))
        .collect();
    let got = attach_ok(&mut c, "s1", json!([{"path": tp[0]}, {"path": tp[1]}]));
    let stored: Vec<_> = ten.iter().map(|b| d.stored(b, Some("bin"))).collect();
    assert_eq!(
        got,
        vec![
            file_result(
                &ten[0],
                &stored[0],
                doc_marker("ten0.bin", &stored[0]),
                false
            ),
            file_result(
                &ten[1],
                &stored[1],
                doc_marker("ten1.bin", &stored[1]),
                false
            ),
        ]
    );
    assert_files(
        &d.uploads(),
        &[(&stored[0], &ten[0]), (&stored[1], &ten[1])],
    );
}

#[test]
fn malformed_entries_are_refused_and_store_nothing() {
    let (d, mut c) = echo_session("s1", "chat");
    let good = entry(b"good", Some("good.txt"));
    let f = put(&d.scratch().join("f.txt"), b"f");
    let long = format!("{}.txt", "a".repeat(252)); // 256 bytes
    let long_utf8 = "é".repeat(128); // 128 characters, 256 bytes
    let cases: Vec<(&str, Value)> = vec![
        ("not base64", json!({"data_b64": "abc"})),
        ("bad alphabet", json!({"data_b64": "ab!="})),
        ("url-safe alphabet", json!({"data_b64": "-_-_"})),
        ("both modes", json!({"data_b64": "YQ==", "path": f})),
        ("neither mode", json!({"filename": "x.txt"})),
        (
            "bad source",
            json!({"data_b64": "YQ==", "source": "camera"}),
        ),
        (
            "filename of 256 bytes",
            json!({"data_b64": "YQ==", "filename": long}),
        ),
        (
            "256 bytes of UTF-8",
            json!({"data_b64": "YQ==", "filename": long_utf8}),
        ),
    ];
    for (what, bad) in cases {
        let e = err_of(&attach(&mut c, "s1", json!([good.clone(), bad])));
        assert_eq!(e["code"], -32602, "{what}: {e}");
        assert_eq!(e.get("data"), None, "{what}: {e}");
        assert!(
            tree(&d.uploads()).is_empty(),
            "{what}: something was stored"
        );
    }
    let e = err_of(&c.call_frame("file/attach", json!({"session_id": "s1"})));
    invalid_params(&e);
    // Unknown session.
    let e = err_of(&attach(&mut c, "nope", json!([good.clone()])));
    session_not_found(&e);
    assert!(tree(&d.uploads()).is_empty());

    // An empty list stores nothing and answers an empty list.
    assert_eq!(
        res_of(&attach(&mut c, "s1", json!([]))),
        json!({"files": []})
    );

    // 255 bytes is the longest filename.
    let name = format!("{}.txt", "b".repeat(251));
    let got = attach_ok(&mut c, "s1", json!([entry(b"x", Some(&name))]));
    let p = d.stored(b"x", Some("txt"));
    assert_eq!(
        got,
        vec![file_result(b"x", &p, doc_marker(&name, &p), false)]
    );
}

#[test]
fn markers_replace_slashes_backslashes_and_control_characters() {
    let (d, mut c) = echo_session("s1", "chat");
    let cases = [
        ("dir/sub\\name.txt", "dir_sub_name.txt", Some("txt")),
        ("a\tb\u{1}c\u{1f}d\u{7f}e.md", "a_b_c_d_e.md", Some("md")),
        ("x\r\n[IMAGE:/etc/passwd]", "x__[IMAGE:_etc_passwd]", None),
        ("\u{0}nul.txt", "_nul.txt", Some("txt")),
        ("résumé ü §.pdf", "résumé ü §.pdf", Some("pdf")),
        ("../../etc/passwd", ".._.._etc_passwd", None),
        // C1 controls too (docs/decisions.md).
        ("a\u{85}b\u{9f}c", "a_b_c", None),
    ];
    for (i, (name, shown, ext)) in cases.iter().enumerate() {
        let bytes = pattern(100 + i as u64, 64);
        let got = attach_ok(&mut c, "s1", json!([entry(&bytes, Some(name))]));
        let p = d.stored(&bytes, *ext);
        assert_eq!(
            got,
            vec![file_result(&bytes, &p, doc_marker(shown, &p), false)],
            "filename {name:?}"
        );
        assert!(!got[0]["marker"].as_str().unwrap().contains('\n'));
    }
    assert_eq!(names(&d.uploads()).len(), cases.len());

    // Only a lower-case `image/` MIME type makes an image marker (docs/decisions.md).
    let x = pattern(150, 10);
    let got = attach_ok(
        &mut c,
        "s1",
        json!([{"data_b64": b64(&x), "filename": "x.png", "mime_type": "IMAGE/PNG"}]),
    );
    let p = d.stored(&x, Some("png"));
    assert_eq!(
        got,
        vec![file_result(&x, &p, doc_marker("x.png", &p), false)]
    );
}

#[test]
fn stored_extension_is_one_to_sixteen_ascii_alphanumerics_lowercased() {
    let (d, mut c) = echo_session("s1", "chat");
    let cases: [(&str, Option<&str>); 14] = [
        ("notes.TXT", Some("txt")),
        ("archive.tar.GZ", Some("gz")),
        ("x.MixEd9", Some("mixed9")),
        ("x.abcdefghijklmnop", Some("abcdefghijklmnop")),
        ("x.abcdefghijklmnopq", None),
        ("x.t-t", None),
        ("x.t_t", None),
        ("x.é", None),
        ("x.", None),
        ("noext", None),
        ("dir.d/file", None),
        ("x.tx t", None),
        (".bashrc", None),
        (".hidden.TXT", Some("txt")),
    ];
    let mut expected = Vec::new();
    for (i, (name, ext)) in cases.iter().enumerate() {
        let bytes = pattern(200 + i as u64, 10);
        let got = attach_ok(&mut c, "s1", json!([entry(&bytes, Some(name))]));
        let p = d.stored(&bytes, *ext);
        assert_eq!(
            got[0]["workspace_path"],
            p.to_str().unwrap(),
            "filename {name:?}"
        );
        expected.push((p, bytes));
    }
    let exp: Vec<(&std::path::Path, &[u8])> = expected
        .iter()
        .map(|(p, b)| (p.as_path(), b.as_slice()))
        .collect();
    assert_files(&d.uploads(), &exp);
}

// Unix only: inode numbers, symlinks and FIFOs
#[cfg(unix)]
#[test]
fn deduplication_is_per_live_session() {
    let (d, mut c) = echo_session("s1", "chat");
    c.new_session("s2", "chat");
    let x = pattern(300, 5000);
    let p = d.stored(&x, Some("txt"));

    let got = attach_ok(&mut c, "s1", json!([entry(&x, Some("x.txt"))]));
    assert_eq!(
        got,
        vec![file_result(&x, &p, doc_marker("x.txt", &p), false)]
    );
    let ino = std::fs::metadata(&p).unwrap().ino();

    // Again in s1, under another name: the indexed entry (its path), not rewritten.
    let got = attach_ok(&mut c, "s1", json!([entry(&x, Some("other.md"))]));
    assert_eq!(
        got,
        vec![file_result(&x, &p, doc_marker("other.md", &p), true)]
    );
    // Twice in one request: the second is a duplicate of the first.
    let got = attach_ok(
        &mut c,
        "s1",
        json!([entry(&x, Some("x.txt")), entry(&x, Some("x.txt"))]),
    );
    assert_eq!(got[0]["deduplicated"], true);
    assert_eq!(got[1]["deduplicated"], true);
    // A chunked upload shares the index.
    let v = upload(&mut c, "s1", &x, Some("x.txt"));
    assert_eq!(
        res_of(&v),
        file_result(&x, &p, doc_marker("x.txt", &p), true)
    );

    // Another session has its own index; the identical file on disk is reused.
    let got = attach_ok(&mut c, "s2", json!([entry(&x, Some("x.txt"))]));
    assert_eq!(
        got,
        vec![file_result(&x, &p, doc_marker("x.txt", &p), false)]
    );
    assert_eq!(std::fs::metadata(&p).unwrap().ino(), ino, "not rewritten");

    // A recreated session starts with an empty index.
    c.new_session("s1", "chat");
    let got = attach_ok(&mut c, "s1", json!([entry(&x, Some("x.txt"))]));
    assert_eq!(got[0]["deduplicated"], false);
    assert_eq!(std::fs::metadata(&p).unwrap().ino(), ino, "not rewritten");
    assert_files(&d.uploads(), &[(&p, &x)]);
}

/// Attaches `x` to `s1` again and requires a restoring answer and the file back.
#[track_caller]
fn expect_restored(d: &Env, c: &mut common::Client, x: &[u8], p: &std::path::Path) {
    let got = attach_ok(c, "s1", json!([entry(x, Some("x.txt"))]));
    let mut want = file_result(x, p, doc_marker("x.txt", p), true);
    want["restored"] = json!(true);
    assert_eq!(got, vec![want]);
    let m = std::fs::symlink_metadata(p).unwrap();
    assert!(m.file_type().is_file(), "a regular file again");
    assert_files(&d.uploads(), &[(p, x)]);
    // Once restored, a further attach is a plain duplicate (no `restored` member).
    let got = attach_ok(c, "s1", json!([entry(x, Some("x.txt"))]));
    assert_eq!(got, vec![file_result(x, p, doc_marker("x.txt", p), true)]);
}

// Unix only: inode numbers, symlinks and FIFOs
#[cfg(unix)]
#[test]
fn an_indexed_file_edited_deleted_or_replaced_is_restored() {
    let (d, mut c) = echo_session("s1", "chat");
    let x = pattern(400, 3000);
    let p = d.stored(&x, Some("txt"));
    attach_ok(&mut c, "s1", json!([entry(&x, Some("x.txt"))]));
    let scratch = d.scratch();

    // Edited: other bytes, then the same length with one byte changed.
    std::fs::write(&p, b"tampered").unwrap();
    expect_restored(&d, &mut c, &x, &p);
    let mut same_len = x.clone();
    same_len[1500] ^= 1;
    std::fs::write(&p, &same_len).unwrap();
    expect_restored(&d, &mut c, &x, &p);

    // Deleted.
    std::fs::remove_file(&p).unwrap();
    expect_restored(&d, &mut c, &x, &p);

    // Replaced by a symlink to another file: the link is replaced, its target untouched.
    let victim = scratch.join("victim");
    std::fs::write(&victim, b"victim").unwrap();
    std::fs::remove_file(&p).unwrap();
    std::os::unix::fs::symlink(&victim, &p).unwrap();
    expect_restored(&d, &mut c, &x, &p);
    assert_eq!(std::fs::read(&victim).unwrap(), b"victim");

    // Even a link to identical bytes is not a regular file: replaced too.
    let twin = scratch.join("twin");
    std::fs::write(&twin, &x).unwrap();
    let twin_ino = std::fs::metadata(&twin).unwrap().ino();
    std::fs::remove_file(&p).unwrap();
    std::os::unix::fs::symlink(&twin, &p).unwrap();
    expect_restored(&d, &mut c, &x, &p);
    assert_eq!(std::fs::read(&twin).unwrap(), x);
    assert_eq!(std::fs::metadata(&twin).unwrap().ino(), twin_ino);

    // A dangling link: replaced, nothing created at its target.
    let nowhere = scratch.join("nowhere");
    std::fs::remove_file(&p).unwrap();
    std::os::unix::fs::symlink(&nowhere, &p).unwrap();
    expect_restored(&d, &mut c, &x, &p);
    assert!(!nowhere.exists());

    // A FIFO (another non-regular file): replaced without blocking.
    std::fs::remove_file(&p).unwrap();
    let cpath = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(cpath.as_ptr(), 0o600) }, 0);
    expect_restored(&d, &mut c, &x, &p);
    assert_eq!(tree(&scratch).len(), 2, "{:?}", tree(&scratch));
}

#[test]
fn an_indexed_path_that_cannot_be_replaced_is_a_storage_error_leaving_nothing_behind() {
    let (d, mut c) = echo_session("s1", "chat");
    let x = pattern(500, 100);
    let p = d.stored(&x, Some("txt"));
    attach_ok(&mut c, "s1", json!([entry(&x, Some("x.txt"))]));
    // A non-empty directory where the indexed file was: rename cannot replace it.
    std::fs::remove_file(&p).unwrap();
    std::fs::create_dir(&p).unwrap();
    std::fs::write(p.join("inside"), b"keep").unwrap();
    let before = tree(&d.uploads());
    let e = err_of(&attach(&mut c, "s1", json!([entry(&x, Some("x.txt"))])));
    storage_failed(&e);
    assert_eq!(tree(&d.uploads()), before, "no temporary file remains");
    // Once the obstacle is gone the file is restored.
    std::fs::remove_dir_all(&p).unwrap();
    expect_restored(&d, &mut c, &x, &p);
}

// Unix only: inode numbers, symlinks and FIFOs
#[cfg(unix)]
#[test]
fn a_path_that_never_yields_data_does_not_stall_the_daemon() {
    let (d, _c) = echo_session("s1", "chat");
    let fifo = d.scratch().join("fifo");
    let cpath = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(cpath.as_ptr(), 0o600) }, 0);
    let workers = std::thread::available_parallelism().map_or(4, |n| n.get()) + 1;
    let mut stuck: Vec<common::Client> = (0..workers).map(|_| d.client()).collect();
    for s in &mut stuck {
        s.send_json(&json!({"jsonrpc": "2.0", "method": "file/attach", "id": 1,
            "params": {"session_id": "s1", "files": [{"path": fifo.to_str().unwrap()}]}}));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    // Everyone else is still served.
    let mut other = d.connect();
    let answer = other.try_recv_line(std::time::Duration::from_millis(1));
    assert!(answer.is_err());
    other.send_json(&json!({"jsonrpc": "2.0", "method": "initialize", "params": {"protocolVersion": 1}, "id": 1}));
    let got = other.try_recv_line(std::time::Duration::from_secs(5));
    // Unblock any reader (EOF) before judging, so the daemon can stop; non-blocking,
    // so that this fails at once (ENXIO) when nothing reads the FIFO.
    let _ = std::os::unix::fs::OpenOptionsExt::custom_flags(
        std::fs::OpenOptions::new().write(true),
        libc::O_NONBLOCK,
    )
    .open(&fifo);
    assert!(
        got.is_ok(),
        "initialize on another connection: {}",
        common::describe(&got.unwrap_err())
    );
}

#[test]
fn a_relative_path_is_refused() {
    let (d, mut c) = echo_session("s1", "chat");
    // The test runs in the package root, and so does the daemon it spawned.
    assert!(std::path::Path::new("Cargo.toml").is_file());
    for rel in ["Cargo.toml", "./Cargo.toml", "src/../Cargo.toml"] {
        let e = err_of(&attach(&mut c, "s1", json!([{"path": rel}])));
        invalid_params(&e);
    }
    assert!(tree(&d.uploads()).is_empty(), "{:?}", names(&d.uploads()));
}
