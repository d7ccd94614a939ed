//! `zeroclaw doctor`: a healthy setup passes every check (exit 0); a broken
//! one names each fault on its own line with what to do (exit 1).

// Not in the Windows suite (run on Unix; docs/operations.md lists what runs under Wine).
#![cfg(unix)]

#[macro_use]
mod common;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use common::start::{config_with, start, write_config, ECHO_ONLY};
use common::{run_cli, TestDir};

const TOOL_AGENT: &str =
    "[agents.tool]\nbackend = \"command\"\ncommand = [\"sh\", \"-c\", \"cat\"]\n";

fn doctor_in(dir: &TestDir, cfg: &std::path::Path) -> (Option<i32>, String) {
    doctor_with(dir, cfg, &[])
}

/// `zeroclaw doctor` with these extra environment variables.
fn doctor_with(
    dir: &TestDir,
    cfg: &std::path::Path,
    env: &[(&str, &str)],
) -> (Option<i32>, String) {
    let mut cmd = Command::new(common::BIN);
    common::hermetic_env(&mut cmd, dir.path());
    cmd.env("PATH", std::env::var("PATH").unwrap_or_default());
    cmd.envs(env.iter().copied());
    cmd.arg("--config-dir").arg(cfg).arg("doctor");
    let (status, out, err) = run_cli(cmd);
    assert_eq!(err, "", "doctor writes its report to stdout");
    (status.code(), out)
}

#[test]
fn a_healthy_setup_passes() {
    let env = start(&config_with(TOOL_AGENT));
    let (code, out) = doctor_in(&env.dir, &env.config_dir);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.ends_with("all 10 checks passed\n"), "{out}");
    assert!(!out.contains("FAIL"), "{out}");
    let sock = env.socket.display();
    assert!(
        out.contains(&format!(
            "ok    endpoint: {sock} is a socket, mode 600, owned by this user\n"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "ok    daemon: version {} answers at {sock} (pid {})\n",
            common::VERSION,
            env.pid
        )),
        "{out}"
    );
    assert!(
        out.contains("ok    agent echo: built-in echo backend\n"),
        "{out}"
    );
    assert!(out.contains("passes quick_check\n"), "{out}");
    assert!(out.contains("ok    agent tool: command sh is /"), "{out}");
}

#[test]
fn a_broken_setup_fails_line_by_line() {
    let dir = TestDir::new();
    let cfg = dir.config_dir();
    write_config(
        &cfg,
        &config_with(
            "[agents.tool]\nbackend = \"command\"\ncommand = [\"zeroclaw-no-such-program\"]\n",
        ),
    );
    std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let db_dir = cfg.join("data").join("sessions");
    std::fs::create_dir_all(&db_dir).expect("mkdir");
    std::fs::set_permissions(cfg.join("data"), std::fs::Permissions::from_mode(0o700))
        .expect("chmod");
    let db = db_dir.join("sessions.db");
    std::fs::write(&db, vec![0x5a; 8192]).expect("writing a corrupt db");
    let (code, out) = doctor_in(&dir, &cfg);
    assert_eq!(code, Some(1), "{out}");
    let c = cfg.display();
    let expect = [
        format!("FAIL  config dir: {c} has mode 755, open to others; fix: chmod 700 {c}\n"),
        format!("ok    data dir: {c}/data mode 700, owned by this user\n"),
        format!("FAIL  endpoint: no socket at {c}/data/daemon.sock; fix: start the daemon (`zeroclaw daemon`)\n"),
        format!("FAIL  daemon: no daemon answers at {c}/data/daemon.sock; fix: start one with `zeroclaw daemon` (or `systemctl --user start zeroclaw.socket`)\n"),
        format!("FAIL  session database: {} is damaged or not a SQLite database (", db.display()),
        "FAIL  agent tool: command zeroclaw-no-such-program is not found on PATH; fix: install zeroclaw-no-such-program, or set agents.tool.command to its full path\n".to_owned(),
        "ok    agent echo: built-in echo backend\n".to_owned(),
    ];
    for line in &expect {
        assert!(out.contains(line.as_str()), "missing {line:?} in:\n{out}");
    }
    assert!(out.ends_with("5 of 10 checks failed\n"), "{out}");
}

#[test]
fn an_invalid_config_is_named() {
    let dir = TestDir::new();
    let cfg = dir.config_dir();
    write_config(
        &cfg,
        &ECHO_ONLY.replace("schema_version = 1", "schema_version = 2"),
    );
    let (code, out) = doctor_in(&dir, &cfg);
    assert_eq!(code, Some(1), "{out}");
    let want = format!(
        "FAIL  config.toml: {}/config.toml is invalid: ",
        cfg.display()
    );
    assert!(out.contains(&want), "{out}");
    assert!(
        out.contains("; fix: correct it (the daemon will not start with it)\n"),
        "{out}"
    );
}

/// An ACP agent must start and answer `initialize`; a model server must
/// answer `GET <base_url>/models`.
#[test]
fn acp_agents_must_answer_initialize_and_model_servers_must_answer() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = closed.local_addr().expect("its address").port();
    drop(closed);
    let agents = format!(
        "[agents.acp]\nbackend = \"acp\"\ncommand = [{}]\n\n\
         [agents.mute]\nbackend = \"acp\"\ncommand = [\"sh\", \"-c\", \"exec cat > /dev/null\"]\n\n\
         [agents.deaf]\nbackend = \"acp\"\ncommand = [\"sleep\", \"60\"]\n\n\
         [agents.llm]\nbackend = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n",
        common::acp_agent::toml_str(&common::acp_agent::agent_bin().to_string_lossy())
    );
    let env = start(&config_with(&agents));
    let (code, out) = doctor_in(&env.dir, &env.config_dir);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("ok    agent acp: ACP agent ")
            && out.contains(" answers initialize (protocol 1)\n"),
        "{out}"
    );
    assert!(
        out.contains("FAIL  agent mute: ACP agent sh ended its output without answering initialize; fix: run agents.mute.command by hand"),
        "{out}"
    );
    assert!(
        out.contains("FAIL  agent deaf: ACP agent sleep did not answer initialize within 10 s; fix: run agents.deaf.command by hand"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "FAIL  agent llm: model server http://127.0.0.1:{port}/v1/models does not answer: "
        )),
        "{out}"
    );
    assert!(
        out.contains("fix: start the model server, or set agents.llm.base_url\n"),
        "{out}"
    );
}

/// A model server that answers `GET <base_url>/models` passes, asked with the
/// key `api_key_env` names; one that refuses the key fails with what to set.
#[test]
fn a_model_server_that_answers_passes_and_one_refusing_the_key_fails() {
    use common::openai_server::{OpenAiServer, Reply};
    let server = OpenAiServer::start();
    let base = server.base_url();
    let models =
        r#"{"object":"list","data":[{"id":"m","object":"model","created":1,"owned_by":"x"}]}"#;
    server.push(Reply::Status(200, models.into()));
    server.push(Reply::Status(
        401,
        r#"{"error":{"message":"bad key"}}"#.into(),
    ));
    let agents = format!(
        "[agents.llm]\nbackend = \"openai\"\nmodel = \"m\"\nbase_url = \"{base}\"\n\
         api_key_env = \"ZC_DOCTOR_KEY\"\n"
    );
    let env = start(&config_with(&agents));
    let key = [("ZC_DOCTOR_KEY", "sk-doctor")];
    let (code, out) = doctor_with(&env.dir, &env.config_dir, &key);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(&format!(
            "ok    agent llm: model server {base}/models answers 200 OK\n"
        )),
        "{out}"
    );
    let asked = server.requests();
    assert_eq!(
        (asked[0].method.as_str(), asked[0].path.as_str()),
        ("GET", "/v1/models")
    );
    assert_eq!(asked[0].header("authorization"), Some("Bearer sk-doctor"));
    let (code, out) = doctor_with(&env.dir, &env.config_dir, &key);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!(
            "FAIL  agent llm: model server {base}/models answers 401 Unauthorized; \
             fix: set the key in the variable agents.llm.api_key_env names, for the daemon\n"
        )),
        "{out}"
    );
}
