//! Prompt attachments (§8.4 step 1a) and `zeroclaw upload` (§13) over
//! the real socket: markers appended on their own lines in entry order, the
//! empty prompt allowed only with attachments, a failing attachment that
//! keeps the prompt from running while files already stored stay stored,
//! and the client command's output and exit status.

use crate::common;
use common::errors::{file_too_large, invalid_params, missing_grant, storage_failed};
use common::start::{echo_session, start_echo};

use common::files::*;
use common::run_cli;
use serde_json::{json, Value};

#[test]
fn markers_follow_the_prompt_on_their_own_lines_in_entry_order() {
    let (d, mut c) = echo_session("s1", "chat");
    let (a, b, img) = (pattern(1, 100), pattern(2, 200), pattern(3, 300));
    let img_path = put(&d.scratch().join("shot.png"), &img);
    let p = prompt(
        &mut c,
        "s1",
        "look at these",
        Some(json!([entry(&a, Some("a.txt")), {"path": img_path}, entry(&b, Some("b/c.md"))])),
    );
    let (pa, pi, pb) = (
        d.stored(&a, Some("txt")),
        d.stored(&img, Some("png")),
        d.stored(&b, Some("md")),
    );
    let text = format!(
        "look at these\n{}\n[IMAGE:{img_path}]\n{}",
        doc_marker("a.txt", &pa),
        doc_marker("b_c.md", &pb)
    );
    // The echo agent replies with the text lines it received (§10.3).
    assert_eq!(p.answer["result"]["content"], text.as_str(), "{}", p.answer);
    assert_eq!(p.text(), text);
    assert_eq!(
        transcript(&mut c, "s1"),
        vec![
            ("user".to_owned(), text.clone()),
            ("assistant".to_owned(), text)
        ]
    );
    assert_files(&d.uploads(), &[(&pa, &a), (&pi, &img), (&pb, &b)]);

    // Attachments share the session's upload index with file/attach.
    let got = attach_ok(&mut c, "s1", json!([entry(&a, Some("a.txt"))]));
    assert_eq!(got[0]["deduplicated"], true);
}

#[test]
fn an_empty_prompt_is_allowed_only_with_attachments() {
    let (d, mut c) = echo_session("s1", "chat");
    for attachments in [None, Some(json!([]))] {
        let p = prompt(&mut c, "s1", "", attachments);
        invalid_params(&err_of(&p.answer));
        assert!(p.before.is_empty(), "{:?}", p.before);
    }
    assert!(transcript(&mut c, "s1").is_empty());

    let a = pattern(10, 10);
    let b = pattern(11, 10);
    let p = prompt(
        &mut c,
        "s1",
        "",
        Some(json!([entry(&a, Some("one.txt")), entry(&b, None)])),
    );
    let (pa, pb) = (d.stored(&a, Some("txt")), d.stored(&b, None));
    // No leading newline when the prompt is empty.
    let text = format!(
        "{}\n{}",
        doc_marker("one.txt", &pa),
        doc_marker("upload", &pb)
    );
    assert_eq!(p.answer["result"]["content"], text.as_str(), "{}", p.answer);
    assert_eq!(transcript(&mut c, "s1")[0], ("user".to_owned(), text));
}

#[test]
fn a_failing_attachment_stops_the_prompt_and_keeps_what_was_stored() {
    let (d, mut c) = echo_session("s1", "chat");
    c.ok(
        "file/attach",
        json!({"session_id": "s1", "files": [entry(b"seed", None)]}),
    );
    let (good, bad, later) = (pattern(20, 100), pattern(21, 100), pattern(22, 100));
    // The second entry's destination is a non-empty directory: its store fails.
    let blocked = d.stored(&bad, Some("txt"));
    std::fs::create_dir(&blocked).unwrap();
    std::fs::write(blocked.join("keep"), b"keep").unwrap();

    let p = prompt(
        &mut c,
        "s1",
        "never runs",
        Some(json!([
            entry(&good, Some("good.txt")),
            entry(&bad, Some("bad.txt")),
            entry(&later, Some("later.txt"))
        ])),
    );
    storage_failed(&err_of(&p.answer));
    assert!(p.before.is_empty(), "no turn ran: {:?}", p.before);
    assert!(transcript(&mut c, "s1").is_empty());
    // The first file stays stored and indexed; the third was never stored.
    let pg = d.stored(&good, Some("txt"));
    assert_eq!(std::fs::read(&pg).unwrap(), good);
    assert!(!d.stored(&later, Some("txt")).exists());
    assert_eq!(names(&blocked), vec!["keep"]);
    assert_eq!(names(&d.uploads()).len(), 3, "seed, good, the directory");
    let got = attach_ok(&mut c, "s1", json!([entry(&good, Some("good.txt"))]));
    assert_eq!(got[0]["deduplicated"], true);

    // A limit failure is found before anything is stored.
    let over = put(&d.scratch().join("over.bin"), &pattern(23, MAX_FILE + 1));
    let before = tree(&d.uploads());
    let fresh = pattern(24, 10);
    let p = prompt(
        &mut c,
        "s1",
        "never runs",
        Some(json!([entry(&fresh, None), {"path": over}])),
    );
    file_too_large(&err_of(&p.answer), 10485761);
    assert!(p.before.is_empty());
    assert_eq!(tree(&d.uploads()), before);
    assert!(transcript(&mut c, "s1").is_empty());

    // With the obstacle gone the same prompt runs.
    std::fs::remove_dir_all(&blocked).unwrap();
    let p = prompt(
        &mut c,
        "s1",
        "now",
        Some(json!([entry(&bad, Some("bad.txt"))])),
    );
    let text = format!("now\n{}", doc_marker("bad.txt", &blocked));
    assert_eq!(p.answer["result"]["content"], text.as_str(), "{}", p.answer);
}

// ---------------------------------------------------------------------------
// zeroclaw upload

#[test]
fn zeroclaw_upload_prints_the_file_result() {
    let (d, _c) = echo_session("s1", "chat");
    let x = pattern(30, 2 * CHUNK + 123);
    let file = put(&d.scratch().join("Data.CSV"), &x);

    let (status, out, err) = run_cli({
        let mut cmd = d.cli();
        cmd.args(["upload", "s1", &file]);
        cmd
    });
    assert_eq!(status.code(), Some(0), "stdout {out:?} stderr {err:?}");
    // stderr is a pipe, not a TTY: no progress output at all.
    assert_eq!(err, "");
    assert!(out.ends_with('\n') && out.lines().count() == 1, "{out:?}");
    let r: Value = serde_json::from_str(&out).unwrap();
    let p = d.stored(&x, Some("csv"));
    assert_eq!(r, file_result(&x, &p, doc_marker("Data.CSV", &p), false));
    assert_files(&d.uploads(), &[(&p, &x)]);

    // --filename names it; the same content in the same session is a duplicate.
    let (status, out, err) = run_cli({
        let mut cmd = d.cli();
        cmd.args(["upload", "s1", &file, "--filename", "renamed.txt"]);
        cmd
    });
    assert_eq!(status.code(), Some(0), "{err}");
    assert_eq!(err, "");
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r, file_result(&x, &p, doc_marker("renamed.txt", &p), true));

    // Another content under --filename: stored with that name's extension.
    let y = pattern(31, 10);
    let file2 = put(&d.scratch().join("y.bin"), &y);
    let (status, out, _) = run_cli({
        let mut cmd = d.cli();
        cmd.args(["upload", "--filename", "pic.JPEG", "s1", &file2]);
        cmd
    });
    assert_eq!(status.code(), Some(0));
    let r: Value = serde_json::from_str(&out).unwrap();
    let py = d.stored(&y, Some("jpeg"));
    assert_eq!(
        r,
        file_result(&y, &py, format!("[IMAGE:{}]", py.display()), false)
    );
}

#[test]
fn zeroclaw_upload_exits_1_on_an_unknown_session_and_3_without_a_daemon() {
    let d = start_echo();
    let file = put(&d.scratch().join("f.txt"), b"abc");
    let (status, out, err) = run_cli({
        let mut cmd = d.cli();
        cmd.args(["upload", "nope", &file]);
        cmd
    });
    assert_eq!(status.code(), Some(1), "stdout {out:?} stderr {err:?}");
    assert_eq!(out, "");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err:?}");
    let e: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(e, json!({"code": -32000, "message": "Session not found"}));
    assert!(tree(&d.uploads()).is_empty());

    // No daemon at the endpoint: exit 3.
    let none = common::TestDir::new();
    let mut cmd = std::process::Command::new(common::BIN);
    common::hermetic_env(&mut cmd, none.path());
    cmd.arg("--config-dir")
        .arg(none.config_dir())
        .args(["upload", "s1", &file]);
    let (status, out, _) = run_cli(cmd);
    assert_eq!(status.code(), Some(3));
    assert_eq!(out, "");
}

/// The profile of a roster user who may prompt but not create files.
const NO_FILES: &str = r#"allowed_agents = ["echo"]
grants = { sessions = ["create", "read", "update", "delete", "execute"] }
"#;

/// A prompt with an attachment from a roster user without `files:create`; its answer.
fn prompt_without_files_grant() -> Option<(Roster, Prompted)> {
    let r = match Roster::start(NO_FILES, "") {
        Ok(r) => r,
        Err(why) => {
            common::skip(&why);
            return None;
        }
    };
    let mut u = r.client();
    u.new_session("mine", "chat");
    let p = prompt(
        &mut u,
        "mine",
        "hi",
        Some(json!([entry(b"data", Some("d.txt"))])),
    );
    assert!(p.before.is_empty(), "no turn ran: {:?}", p.before);
    assert!(tree(&r.env.uploads()).is_empty());
    assert!(transcript(&mut u, "mine").is_empty());
    // Without attachments the same user prompts normally.
    let ok_turn = prompt(&mut u, "mine", "hi", None);
    assert_eq!(ok_turn.answer["result"]["content"], "hi");
    Some((r, p))
}

#[test]
fn prompt_attachments_need_files_create() {
    let Some((_r, p)) = prompt_without_files_grant() else {
        return;
    };
    let e = err_of(&p.answer);
    assert_eq!(e["code"], -32012, "{e}");
    assert_eq!(
        e["data"],
        json!({"reason": "missing_grant", "required": "files:create"})
    );
}

#[test]
fn the_missing_grant_message_names_the_method_called() {
    let Some((_r, p)) = prompt_without_files_grant() else {
        return;
    };
    missing_grant(&err_of(&p.answer), "files:create", "session/prompt");
}
