//! No configured secret is shown: an ACP agent that prints its
//! own `env` value, or the value behind an `openai` agent's `api_key_env`
//! (which no agent inherits: the test agent prints it as text, as one that
//! learnt it elsewhere would), on stderr is logged with `****` in its place, in the
//! daemon's stderr log and in `logs/query`; the turn that fails with that
//! stderr line in its message answers `****` too; a value set later with
//! `config/set` is masked from then on.

use crate::common;

use std::time::Duration;

use serde_json::json;

use common::acp_agent::{acp_config, new_acp_session};
use common::openai::{KEY, KEY_ENV};
use common::wait::eventually;

const ACP_SECRET: &str = "acp-secret-0123456789";
const LATER_SECRET: &str = "later-secret-9876543210";

/// The test agent as `acp` with its own secret, and an `openai` agent whose
/// key the daemon has in its environment.
fn config() -> String {
    let acp = format!("env = {{ ACP_TOKEN = \"{ACP_SECRET}\" }}");
    format!(
        "{}\n[agents.m]\nbackend = \"openai\"\nmodel = \"x\"\n\
         base_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"{KEY_ENV}\"\n",
        acp_config(&acp, "")
    )
}

/// Every record of `logs/query` as one JSON text.
fn logs(c: &mut common::Client) -> String {
    let r = c.ok("logs/query", json!({"limit": 2048}));
    r.to_string()
}

fn assert_masked(what: &str, text: &str, needles: &[&str]) {
    for secret in [ACP_SECRET, KEY, LATER_SECRET] {
        assert!(!text.contains(secret), "{what} shows {secret}:\n{text}");
    }
    for n in needles {
        assert!(text.contains(n), "{what} lacks {n:?}:\n{text}");
    }
}

#[test]
fn an_agents_credentials_on_its_stderr_are_masked_in_logs_and_answers() {
    // Started with the openai key in the daemon's environment.
    let e = common::openai::start(&config());
    let mut c = e.client();
    new_acp_session(&mut c, "s-1", "acp");
    let t = c.prompt_ok(
        "s-1",
        &format!("stderr-env ACP_TOKEN\nstderr {KEY_ENV}={KEY}\nsay done"),
    );
    assert_eq!(t.text(), "done");
    let want = ["ACP_TOKEN=****", &format!("{KEY_ENV}=****")];
    let seen = eventually("both stderr lines logged", Duration::from_secs(10), || {
        let text = logs(&mut c);
        want.iter().all(|w| text.contains(w)).then_some(text)
    });
    assert_masked("logs/query", &seen, &want);
    let stderr = eventually(
        "both stderr lines on stderr",
        Duration::from_secs(10),
        || {
            let text = e.log.text();
            want.iter().all(|w| text.contains(w)).then_some(text)
        },
    );
    assert_masked("the stderr log", &stderr, &want);

    // The agent dies with the secret as its last stderr line: the failure says `****`.
    let t = c.prompt("s-1", "stderr-env ACP_TOKEN\ncrash 3");
    let message = t.error()["message"].as_str().unwrap_or_default().to_owned();
    assert_masked("the turn's error", &message, &["ACP_TOKEN=****"]);
    assert_masked(
        "the turn_complete",
        &t.turn_complete().to_string(),
        &["ACP_TOKEN=****"],
    );

    // A value set later is masked from the commit on.
    c.ok(
        "config/set",
        json!({"prop": "agents.acp.env", "value": {"LATER": LATER_SECRET}}),
    );
    c.prompt_ok("s-1", "stderr-env LATER\nsay again");
    let seen = eventually("the later line logged", Duration::from_secs(10), || {
        let text = logs(&mut c);
        text.contains("LATER=****").then_some(text)
    });
    assert_masked("logs/query", &seen, &["LATER=****"]);
}
