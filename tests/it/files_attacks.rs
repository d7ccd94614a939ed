//! Attacks on the store step (§8.18.4, §8.17) over the real socket:
//! links planted at the destination and at `uploads/` itself, the session
//! changing between begin and commit, permissions revoked between begin and
//! commit, and filenames that try to steer the stored path. Each refusal is
//! shown to have written nothing, inside the workspace or outside it.

// Unix only: symlinks, FIFOs and file modes.

use crate::common;
use common::assert::assert_error_exact;
use common::errors::{not_entitled, session_not_found};
use common::start::{echo_client, echo_session, Env};

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use common::files::*;
use serde_json::json;

#[test]
fn a_first_store_replaces_whatever_was_planted_at_the_destination() {
    let (d, mut c) = echo_session("s1", "chat");
    std::fs::create_dir_all(d.uploads()).unwrap();
    let scratch = d.scratch();

    // A regular file with other bytes: rewritten.
    let a = pattern(1, 100);
    let pa = d.stored(&a, Some("txt"));
    std::fs::write(&pa, b"planted").unwrap();
    let got = attach_ok(&mut c, "s1", json!([entry(&a, Some("a.txt"))]));
    assert_eq!(
        got,
        vec![file_result(&a, &pa, doc_marker("a.txt", &pa), false)]
    );

    // A regular file with the same bytes: reused as is (same inode).
    let b = pattern(2, 100);
    let pb = d.stored(&b, Some("txt"));
    std::fs::write(&pb, &b).unwrap();
    let ino = std::fs::metadata(&pb).unwrap().ino();
    attach_ok(&mut c, "s1", json!([entry(&b, Some("b.txt"))]));
    assert_eq!(std::fs::metadata(&pb).unwrap().ino(), ino);

    // Links: to a victim, to a twin with identical bytes, dangling. Each is
    // replaced by a regular file; no target is written or created.
    let victim = put(&scratch.join("victim"), b"victim");
    let cc = pattern(3, 100);
    let twin = put(&scratch.join("twin"), &cc);
    let twin_ino = std::fs::metadata(&twin).unwrap().ino();
    let dd = pattern(4, 100);
    let nowhere = scratch.join("nowhere");
    let e = pattern(5, 100);
    let cases: [(&[u8], &Path); 3] = [
        (&e, Path::new(&victim)),
        (&cc, Path::new(&twin)),
        (&dd, &nowhere),
    ];
    for (bytes, target) in cases {
        let p = d.stored(bytes, Some("txt"));
        std::os::unix::fs::symlink(target, &p).unwrap();
        let got = attach_ok(&mut c, "s1", json!([entry(bytes, Some("l.txt"))]));
        assert_eq!(
            got,
            vec![file_result(bytes, &p, doc_marker("l.txt", &p), false)]
        );
        assert!(std::fs::symlink_metadata(&p).unwrap().file_type().is_file());
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"victim");
    assert_eq!(std::fs::read(&twin).unwrap(), cc);
    assert_eq!(std::fs::metadata(&twin).unwrap().ino(), twin_ino);
    assert!(!nowhere.exists() && std::fs::symlink_metadata(&nowhere).is_err());
    assert_files(
        &d.uploads(),
        &[
            (&pa, &a),
            (&pb, &b),
            (&d.stored(&cc, Some("txt")), &cc),
            (&d.stored(&dd, Some("txt")), &dd),
            (&d.stored(&e, Some("txt")), &e),
        ],
    );

    // The same through a chunked upload.
    let f = pattern(6, 100);
    let pf = d.stored(&f, None);
    std::os::unix::fs::symlink(&victim, &pf).unwrap();
    let r = res_of(&upload(&mut c, "s1", &f, None));
    assert_eq!(r, file_result(&f, &pf, doc_marker("upload", &pf), false));
    assert!(std::fs::symlink_metadata(&pf)
        .unwrap()
        .file_type()
        .is_file());
    assert_eq!(std::fs::read(&victim).unwrap(), b"victim");
}

#[test]
fn a_symlinked_or_non_directory_uploads_is_refused_and_nothing_is_written() {
    let (d, mut c) = echo_session("s1", "chat");
    let elsewhere = d.scratch().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::create_dir_all(d.workspace()).unwrap();
    std::os::unix::fs::symlink(&elsewhere, d.uploads()).unwrap();
    let storage = Some(json!({"reason": "storage"}));
    let x = pattern(10, 100);

    // file/attach.
    let e = err_of(&attach(&mut c, "s1", json!([entry(&x, Some("x.txt"))])));
    assert_error_exact(&e, -32603, None, storage.clone());
    // A chunked upload: refused at commit, and released like any failed store.
    let id = begin_ok(&mut c, json!({"session_id": "s1", "size_bytes": 100}));
    chunk_ok(&mut c, &id, 0, &x);
    let e = err_of(&commit(&mut c, &id));
    assert_error_exact(&e, -32603, None, storage.clone());
    assert_unknown_upload(&err_of(&commit(&mut c, &id)));
    // A prompt attachment: refused, the prompt does not run.
    let p = prompt(&mut c, "s1", "hi", Some(json!([entry(&x, None)])));
    assert_error_exact(&err_of(&p.answer), -32603, None, storage.clone());
    assert!(p.before.is_empty(), "{:?}", p.before);

    assert!(tree(&elsewhere).is_empty(), "{:?}", tree(&elsewhere));
    assert_eq!(std::fs::read_link(d.uploads()).unwrap(), elsewhere);
    assert_eq!(names(&d.workspace()), vec!["uploads"]);

    // `uploads` as a regular file: refused, untouched.
    std::fs::remove_file(d.uploads()).unwrap();
    std::fs::write(d.uploads(), b"not a dir").unwrap();
    let e = err_of(&attach(&mut c, "s1", json!([entry(&x, Some("x.txt"))])));
    assert_error_exact(&e, -32603, None, storage);
    assert_eq!(std::fs::read(d.uploads()).unwrap(), b"not a dir");
    assert_eq!(names(&d.workspace()), vec!["uploads"]);
}

/// Begins an upload of `x` into `sid` and sends all of it.
fn staged(c: &mut common::Client, sid: &str, x: &[u8]) -> String {
    let id = begin_ok(
        c,
        json!({"session_id": sid, "size_bytes": x.len(), "sha256": sha256_hex(x)}),
    );
    chunk_ok(c, &id, 0, x);
    id
}

#[track_caller]
fn assert_session_changed(e: &serde_json::Value) {
    assert_error_exact(
        e,
        -32000,
        Some("Session changed since the upload began"),
        Some(json!({"reason": "session_changed"})),
    );
}

#[test]
fn a_session_closed_killed_deleted_or_recreated_after_begin_fails_the_commit() {
    let (d, mut c) = echo_client();
    let x = pattern(20, 1000);

    // Closed (and not reopened).
    c.new_session("closed", "chat");
    let id = staged(&mut c, "closed", &x);
    c.ok("session/close", json!({"session_id": "closed"}));
    assert_session_changed(&err_of(&commit(&mut c, &id)));
    // Released from step 2 on: the id is unknown afterwards.
    assert_unknown_upload(&err_of(&commit(&mut c, &id)));

    // Recreated with the same id (a new incarnation), same owner and agent.
    c.new_session("again", "chat");
    let id = staged(&mut c, "again", &x);
    c.new_session("again", "chat");
    assert_session_changed(&err_of(&commit(&mut c, &id)));

    // Closed and reopened by session/new (ACP resume).
    c.new_session("acp", "acp");
    let id = staged(&mut c, "acp", &x);
    c.ok("session/close", json!({"session_id": "acp"}));
    // Closed but restorable: no live session to attach or upload to (§8.17, §8.18.1).
    let e = err_of(&attach(&mut c, "acp", json!([entry(&x, None)])));
    session_not_found(&e);
    let e = err_of(&begin(
        &mut c,
        json!({"session_id": "acp", "size_bytes": 1}),
    ));
    session_not_found(&e);
    c.new_session("acp", "acp");
    assert_session_changed(&err_of(&commit(&mut c, &id)));

    // Closed and rehydrated by a prompt.
    c.new_session("rehyd", "acp");
    let id = staged(&mut c, "rehyd", &x);
    c.ok("session/close", json!({"session_id": "rehyd"}));
    let p = prompt(&mut c, "rehyd", "hello", None);
    assert_eq!(p.answer["result"]["content"], "hello", "{:?}", p.answer);
    assert_session_changed(&err_of(&commit(&mut c, &id)));

    // Killed.
    c.new_session("killed", "acp");
    let id = staged(&mut c, "killed", &x);
    c.ok("session/kill", json!({"session_id": "killed"}));
    assert_session_changed(&err_of(&commit(&mut c, &id)));

    // Deleted.
    c.new_session("deleted", "chat");
    let id = staged(&mut c, "deleted", &x);
    let r = c.ok("session/delete", json!({"session_id": "deleted"}));
    assert_eq!(r["deleted"], true);
    assert_session_changed(&err_of(&commit(&mut c, &id)));

    assert!(tree(&d.uploads()).is_empty(), "{:?}", tree(&d.uploads()));
    // The same content still stores into a live session.
    c.new_session("live", "chat");
    let r = res_of(&upload(&mut c, "live", &x, None));
    assert_eq!(r["deduplicated"], false);
    assert_files(&d.uploads(), &[(&d.stored(&x, None), &x)]);
}

#[test]
fn a_grant_revoked_between_begin_and_commit_stores_nothing() {
    let r = ok_or_skip!(Roster::start(UPLOADER, ""));
    let d = &r.env;
    let mut u = r.client();
    let mut admin = d.client();
    u.new_session("mine", "chat");
    let x = pattern(30, 1000);
    let id = staged(&mut u, "mine", &x);

    // The profile loses files:create: commit (and chunk) are denied.
    let set = |admin: &mut common::Client, files: serde_json::Value| {
        admin.config_set("permission_profiles.uploader.grants.files", json!(files))
    };
    set(&mut admin, json!([]));
    let denied = |m: &str| {
        (
            format!("Principal is not granted files:create (required by {m})"),
            Some(json!({"reason": "missing_grant", "required": "files:create"})),
        )
    };
    let e = err_of(&commit(&mut u, &id));
    let (msg, data) = denied("file/upload/commit");
    assert_error_exact(&e, -32012, Some(&msg), data);
    let e = err_of(&chunk(&mut u, &id, 0, &x));
    let (msg, data) = denied("file/upload/chunk");
    assert_error_exact(&e, -32012, Some(&msg), data);
    let e = err_of(&attach(&mut u, "mine", json!([entry(&x, None)])));
    let (msg, data) = denied("file/attach");
    assert_error_exact(&e, -32012, Some(&msg), data);
    assert!(tree(&d.uploads()).is_empty());

    // The denial ran no step of the commit: with the grant back, the upload commits.
    set(&mut admin, json!(["create"]));
    let p = d.stored(&x, None);
    assert_eq!(
        res_of(&commit(&mut u, &id)),
        file_result(&x, &p, doc_marker("upload", &p), false)
    );
}

#[test]
fn an_agent_permission_revoked_between_begin_and_commit_stores_nothing() {
    let r = ok_or_skip!(Roster::start(UPLOADER, ""));
    let d = &r.env;
    let mut u = r.client();
    let mut admin = d.client();
    u.new_session("mine", "chat");
    let x = pattern(31, 1000);
    let id = staged(&mut u, "mine", &x);
    // files:create stays: the gate lets the commit through, the store step refuses it.
    admin.config_set("permission_profiles.uploader.allowed_agents", json!([]));
    let e = err_of(&commit(&mut u, &id));
    not_entitled(&e, "echo");
    let e = err_of(&attach(&mut u, "mine", json!([entry(&x, None)])));
    not_entitled(&e, "echo");
    let e = err_of(&begin(
        &mut u,
        json!({"session_id": "mine", "size_bytes": 1}),
    ));
    not_entitled(&e, "echo");
    assert!(tree(&d.uploads()).is_empty());
}

/// Every path below `root`, except the daemon's data dir and the uploads dir.
fn outside(root: &Path, d: &Env) -> Vec<PathBuf> {
    let data = d.data_dir();
    let uploads = d.uploads();
    tree(root)
        .into_keys()
        .map(|p| root.join(p))
        .filter(|p| !p.starts_with(&data) && !p.starts_with(&uploads))
        .collect()
}

#[test]
fn filenames_never_steer_the_stored_path() {
    let (d, mut c) = echo_session("s1", "chat");
    attach_ok(&mut c, "s1", json!([entry(b"warm-up", None)]));
    let root = d.dir.path().to_owned();
    let before = outside(&root, &d);
    let escape = format!("zc-escape-{}", std::process::id());
    let names_and_exts: Vec<(String, Option<&str>)> = vec![
        ("../../x".into(), None),
        (
            format!("../../../../../../../../tmp/{escape}.txt"),
            Some("txt"),
        ),
        ("/etc/passwd".into(), None),
        (format!("/tmp/{escape}.md"), Some("md")),
        ("..\\..\\win.txt".into(), Some("txt")),
        ("a\u{1}\u{2}b/../c.sh".into(), Some("sh")),
        ("\u{1b}[31mred\u{7}.txt".into(), Some("txt")),
        ("..".into(), None),
        (".".into(), None),
        ("".into(), None),
        ("uploads/../../escape.txt".into(), Some("txt")),
        ("x.txt/../../y".into(), None),
    ];
    let mut expected = vec![(d.stored(b"warm-up", None), b"warm-up".to_vec())];
    for (i, (name, ext)) in names_and_exts.iter().enumerate() {
        // Through file/attach and through a chunked upload.
        let a = pattern(100 + i as u64, 50);
        let got = attach_ok(&mut c, "s1", json!([entry(&a, Some(name))]));
        let pa = d.stored(&a, *ext);
        assert_eq!(got[0]["workspace_path"], pa.to_str().unwrap(), "{name:?}");
        let b = pattern(200 + i as u64, 50);
        let r = res_of(&upload(&mut c, "s1", &b, Some(name)));
        let pb = d.stored(&b, *ext);
        assert_eq!(r["workspace_path"], pb.to_str().unwrap(), "{name:?}");
        let marker = r["marker"].as_str().unwrap();
        assert!(
            marker.ends_with(&format!("] {}", pb.display()))
                && !marker[..marker.len() - pb.as_os_str().len()].contains('/'),
            "{name:?}: {marker}"
        );
        expected.push((pa, a));
        expected.push((pb, b));
    }
    let exp: Vec<(&Path, &[u8])> = expected
        .iter()
        .map(|(p, b)| (p.as_path(), b.as_slice()))
        .collect();
    assert_files(&d.uploads(), &exp);
    assert_eq!(
        outside(&root, &d),
        before,
        "nothing written outside uploads/"
    );
    assert!(!Path::new(&format!("/tmp/{escape}.txt")).exists());
    assert!(!Path::new(&format!("/tmp/{escape}.md")).exists());
}
