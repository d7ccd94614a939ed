//! `file/attach` path mode never trusts `st_size` (§8.17): a file that says it is empty and never ends
//! (`/proc/self/pagemap`, the daemon's own) is read up to 10 MiB + 1 byte
//! and refused with `file_too_large`, in `file/attach` and in prompt
//! attachments alike; the daemon stays small and answers.

// Unix only: reads /proc/self/pagemap (a file whose size says 0).

use crate::common;
use common::errors::file_too_large;
use common::start::echo_session;

use common::files::*;
use serde_json::json;

const PAGEMAP: &str = "/proc/self/pagemap";

#[test]
fn an_endless_file_that_claims_size_0_is_file_too_large() {
    if std::fs::metadata(PAGEMAP).map(|m| m.len()).ok() != Some(0) {
        skip_test!("{PAGEMAP} is not a size-0 regular file here");
    }
    let (d, mut c) = echo_session("s1", "chat");
    file_too_large(
        &err_of(&attach(&mut c, "s1", json!([{ "path": PAGEMAP }]))),
        10485761,
    );
    assert!(tree(&d.uploads()).is_empty());

    // As a prompt attachment: refused before the turn.
    let v = c.call_frame(
        "session/prompt",
        json!({"session_id": "s1", "prompt": "hi", "attachments": [{"path": PAGEMAP}]}),
    );
    file_too_large(&err_of(&v), 10485761);

    // Still small, still serving.
    let rss = d.rss_kib().unwrap_or(0);
    assert!(
        rss < 256 * 1024,
        "daemon RSS {rss} KiB after the endless reads"
    );
    let got = attach_ok(&mut c, "s1", json!([entry(b"after", Some("a.txt"))]));
    assert_eq!(got.len(), 1);
}
