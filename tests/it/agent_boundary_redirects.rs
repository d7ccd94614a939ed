//! A model server's redirect is never followed: a 307/302
//! answer ends the turn `provider_protocol`, naming the status and the
//! `Location`, and the URL it points to is never contacted, neither by a
//! turn nor by `zeroclaw doctor`'s model-server check. (Followed, a 307
//! re-posted the whole conversation and the key to the other listener.)

use crate::common;

use std::process::Command;

use serde_json::json;

use common::assert::assert_error_exact;
use common::openai::{self, config};
use common::openai_server::{sse, OpenAiServer, Reply};
use common::run_cli;
use common::sessions::complete;
use common::start::{config_with, start};

/// The message of a refused redirect to `location`.
fn refused(status: u16, location: &str) -> String {
    format!(
        "HTTP {status} redirect to {location:?} refused: redirects are never followed; \
         set base_url to where the model server answers"
    )
}

/// One turn against a server that answers `status` with a `Location` to
/// another listener (scripted to answer, as if it were the real server).
fn redirected_turn(status: u16) {
    let server = OpenAiServer::start();
    let elsewhere = OpenAiServer::start();
    elsewhere.push(Reply::Stream(sse::answer(&["followed"])));
    let location = format!("{}/chat/completions", elsewhere.base_url());
    server.push(Reply::StatusWith(
        status,
        vec![("location".into(), location.clone())],
        "{}".into(),
    ));
    let d = openai::start(&config(&server, ""));
    let mut c = d.client();
    c.new_session_of("m", "s-1", "acp");
    let t = c.prompt("s-1", "hi");
    t.check("s-1");
    let m = refused(status, &location);
    assert_error_exact(
        t.error(),
        -32603,
        Some(&m),
        Some(json!({"reason": "provider_protocol", "status": status})),
    );
    assert_eq!(t.turn_complete(), &complete("s-1", "failed", "", Some(&m)));
    assert_eq!(server.requests().len(), 1, "a redirect is not retried");
    // The turn is over: had the daemon followed, the request is recorded.
    assert!(
        elsewhere.requests().is_empty(),
        "the redirect target was contacted: {:?}",
        elsewhere.requests()
    );
}

#[test]
fn a_307_is_refused_and_the_conversation_is_not_reposted() {
    redirected_turn(307);
}

#[test]
fn a_302_is_refused_and_its_target_is_never_fetched() {
    redirected_turn(302);
}

#[test]
fn doctor_does_not_follow_a_model_server_redirect() {
    let server = OpenAiServer::start();
    let elsewhere = OpenAiServer::start();
    let models = r#"{"object":"list","data":[]}"#;
    elsewhere.push(Reply::Status(200, models.into()));
    let location = format!("{}/models", elsewhere.base_url());
    server.push(Reply::StatusWith(
        302,
        vec![("location".into(), location.clone())],
        "{}".into(),
    ));
    let base = server.base_url();
    let agents =
        format!("[agents.llm]\nbackend = \"openai\"\nmodel = \"m\"\nbase_url = \"{base}\"\n");
    let env = start(&config_with(&agents));
    let mut cmd = Command::new(common::BIN);
    common::hermetic_env(&mut cmd, env.dir.path());
    cmd.env("PATH", std::env::var("PATH").unwrap_or_default());
    cmd.arg("--config-dir").arg(&env.config_dir).arg("doctor");
    let (status, out, _) = run_cli(cmd);
    assert_eq!(status.code(), Some(1), "{out}");
    let want = format!(
        "FAIL  agent llm: model server {base}/models: {}; fix: set agents.llm.base_url to where the model server answers\n",
        refused(302, &location)
    );
    assert!(out.contains(&want), "{out}");
    assert!(elsewhere.requests().is_empty(), "the redirect was followed");
}
