//! One real turn against a real OpenAI-compatible server, when
//! `ZC_OPENAI_TEST_URL` names one (e.g. `http://127.0.0.1:11434/v1` for a
//! local Ollama); `ZC_OPENAI_TEST_MODEL` picks the model (default
//! `qwen3:0.6b`) and `ZC_OPENAI_TEST_API_KEY` a key. Skipped otherwise, with
//! a printed `SKIPPED:` line (docs/agents.md).

use crate::common;

use std::io::Write;
use std::time::Duration;

use common::start::write_config;
use common::{DaemonBuilder, TestDir};

#[test]
fn a_real_turn_against_the_server_in_zc_openai_test_url() {
    let Ok(url) = std::env::var("ZC_OPENAI_TEST_URL") else {
        let _ = writeln!(std::io::stderr(), "SKIPPED: ZC_OPENAI_TEST_URL not set");
        return;
    };
    let model = std::env::var("ZC_OPENAI_TEST_MODEL").unwrap_or_else(|_| "qwen3:0.6b".into());
    let key = std::env::var("ZC_OPENAI_TEST_API_KEY").ok();
    let dir = TestDir::new();
    let mut text = format!(
        "schema_version = 1\n[agents.m]\nbackend = \"openai\"\nbase_url = \"{url}\"\n\
         model = \"{model}\"\ntools = []\nmax_tokens = 1024\nrequest_timeout_secs = 300\n"
    );
    let mut builder = DaemonBuilder::new().config_dir(dir.config_dir());
    if let Some(k) = &key {
        text.push_str("api_key_env = \"ZC_OPENAI_TEST_API_KEY\"\n");
        builder = builder.env("ZC_OPENAI_TEST_API_KEY", k);
    }
    write_config(&dir.config_dir(), &text);
    let d = builder.spawn();
    let mut c = d.client();
    c.new_session_of("m", "s-1", "acp");
    let id = c.start_prompt("s-1", "Answer with one word: what colour is the sky?");
    // A cold model may take a while to load: wait longer than one frame.
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    let mut frames = Vec::new();
    let response = loop {
        assert!(
            std::time::Instant::now() < deadline,
            "no answer within 300 s"
        );
        match c.try_recv_line(Duration::from_secs(5)) {
            Ok(line) => {
                let f = common::sessions::Frame::parse(line);
                if f.answers(&id) {
                    break f;
                }
                frames.push(f);
            }
            Err(common::RecvError::Timeout(_)) => continue,
            Err(e) => panic!("{}", common::describe(&e)),
        }
    };
    let t = common::sessions::Turn { frames, response };
    t.check("s-1");
    assert_eq!(t.result()["stop_reason"], "end_turn", "{}", t.response.raw);
    let content = t.result()["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        !content.trim().is_empty(),
        "an empty answer: {:#?}",
        t.raw()
    );
    let _ = writeln!(std::io::stderr(), "model {model} answered {content:?}");
}
