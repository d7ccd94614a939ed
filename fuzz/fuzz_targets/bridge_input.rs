//! One line from the editor through `zeroclaw acp`'s parsing
//! (src/cli/acp_bridge/): the split into method, id, params and answer,
//! a `session/prompt`'s content blocks into our prompt text and
//! attachments, and an answer into a `session/approve` decision. No I/O:
//! this is everything the bridge decides from the line before it writes.
//!
//! Checked for every input: nothing panics; a line that is not a JSON
//! object is a parse error, and every object is classified by the presence
//! of a string `method` and of `id`; an approval is `allow_*` only when the
//! answer is a result whose `outcome.outcome` is `"selected"` with that
//! option id (an error, a cancel or anything else rejects); an accepted
//! prompt is not empty and each attachment has a file name of 1-200
//! characters without `/`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use zeroclaw::cli::acp_bridge::fuzzing::{editor_line, EditorLine};

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = serde_json::from_str::<Value>(line).ok();
    let got = editor_line(line);
    let Some(Value::Object(m)) = parsed else {
        assert!(matches!(got, EditorLine::NotJsonRpc), "{line:?}: {got:?}");
        return;
    };
    let method = m.get("method").and_then(Value::as_str);
    let id = m.get("id");
    match got {
        EditorLine::NotJsonRpc => panic!("an object refused: {line:?}"),
        EditorLine::Request {
            method: got_method,
            id: got_id,
            prompt,
            ..
        } => {
            assert_eq!(Some(got_method.as_str()), method);
            assert_eq!(Some(&got_id), id);
            if let Some(Ok((text, attachments))) = prompt {
                assert!(!text.is_empty() || !attachments.is_empty());
                for a in &attachments {
                    let name = a["filename"].as_str().expect("a file name");
                    assert!((1..=200).contains(&name.chars().count()), "{name:?}");
                    assert!(!name.contains('/'), "{name:?}");
                    assert!(a["data_b64"].is_string());
                }
            }
        }
        EditorLine::Notification { method: got, .. } => {
            assert_eq!(Some(got.as_str()), method);
            assert!(id.is_none());
        }
        EditorLine::Response {
            id: got_id,
            decision,
            answer,
        } => {
            assert!(method.is_none());
            assert_eq!(Some(&got_id), id);
            if decision != "reject" {
                let r = m.get("result").expect("allowed without a result");
                assert!(m.get("error").is_none(), "allowed on an error");
                assert_eq!(r["outcome"]["outcome"], "selected");
                assert_eq!(r["outcome"]["optionId"], decision);
                assert!(answer.is_ok());
            } else {
                assert!(["reject", "allow_once", "allow_always"].contains(&decision));
            }
        }
        EditorLine::Ignored => {
            assert!(method.is_none() && id.is_none());
        }
    }
});
