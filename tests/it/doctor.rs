//! `zeroclaw doctor`: a healthy setup passes every check (exit 0); a broken
//! one names each fault on its own line with what to do (exit 1).

// Unix only: file modes (chmod), agents run with sh and a #!/bin/sh script, and the Unix socket path in its messages.

use crate::common;

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
            && out.contains(" answers initialize (protocol 1) and opens a session\n"),
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
            "ok    agent llm: model server {base}/models answers 200 OK and has model \"m\"\n"
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

/// Every fault of `config.toml` at once, each on its own line naming its
/// path: an unknown key, a wrong type and failed checks (doctor
/// used to name one a run).
#[test]
fn every_config_fault_is_listed_at_once() {
    let dir = TestDir::new();
    let cfg = dir.config_dir();
    write_config(
        &cfg,
        "schema_version = 2\ncolour = true\n[daemon]\nask_timeout_secs = \"soon\"\n\
         approval_timeout_secs = 0\n[agents.echo]\nbackend = \"echo\"\n\
         [agents.llm]\nbackend = \"openai\"\n",
    );
    let (code, out) = doctor_in(&dir, &cfg);
    assert_eq!(code, Some(1), "{out}");
    let file = format!("{}/config.toml", cfg.display());
    let fix = "; fix: correct it (the daemon will not start with it)\n";
    let faults = [
        "colour: unknown key",
        "daemon.ask_timeout_secs: expected an integer in 0..=4294967295",
        "agents.llm.model: required and non-empty for backend \"openai\"",
        "daemon.approval_timeout_secs: must be at least 1",
        "schema_version: unsupported schema version 2 (expected 1)",
    ];
    let mut at = 0;
    for f in faults {
        let line = format!("FAIL  config.toml: {file} is invalid: invalid configuration: {f}{fix}");
        let found = out[at..]
            .find(&line)
            .unwrap_or_else(|| panic!("missing {line:?} in:\n{out}"));
        at += found + line.len();
    }
    assert_eq!(
        out.matches("FAIL  config.toml: ").count(),
        faults.len(),
        "{out}"
    );
    // A syntax error is one fault: nothing after it can be read.
    write_config(&cfg, "schema_version = 1\n[agents.echo\nbackend = 1\n");
    let (code, out) = doctor_in(&dir, &cfg);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(out.matches("FAIL  config.toml: ").count(), 1, "{out}");
}

/// The configured model must be one the server lists; a server without a
/// model list is a warning, not a failure.
#[test]
fn the_model_must_be_one_the_server_has() {
    use common::openai_server::{OpenAiServer, Reply};
    let server = OpenAiServer::start();
    let base = server.base_url();
    let ids: Vec<String> = (1..=12)
        .map(|i| format!("{{\"id\":\"model-{i}\",\"object\":\"model\"}}"))
        .collect();
    server.push(Reply::Status(
        200,
        format!("{{\"object\":\"list\",\"data\":[{}]}}", ids.join(",")),
    ));
    server.push(Reply::Status(
        404,
        r#"{"error":{"message":"no such route"}}"#.into(),
    ));
    server.push(Reply::Status(
        200,
        r#"{"object":"list","data":[{"id":"gemma3"}]}"#.into(),
    ));
    let agents =
        format!("[agents.llm]\nbackend = \"openai\"\nmodel = \"gemma3\"\nbase_url = \"{base}\"\n");
    let env = start(&config_with(&agents));
    let (code, out) = doctor_in(&env.dir, &env.config_dir);
    assert_eq!(code, Some(1), "{out}");
    let named: Vec<String> = (1..=10).map(|i| format!("\"model-{i}\"")).collect();
    let want = format!(
        "FAIL  agent llm: model server {base}/models has no model \"gemma3\" (it has: {}, and 2 more); \
         fix: set agents.llm.model to a model the server has, or load \"gemma3\" into it\n",
        named.join(", ")
    );
    assert!(out.contains(&want), "missing {want:?} in:\n{out}");
    let (code, out) = doctor_in(&env.dir, &env.config_dir);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(&format!(
            "warn  agent llm: model server {base}/models answers 404 Not Found: it lists no models, so model \"gemma3\" is not checked\n"
        )),
        "{out}"
    );
    assert!(out.ends_with("all 10 checks passed, 1 warning\n"), "{out}");
    let (code, out) = doctor_in(&env.dir, &env.config_dir);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(&format!(
            "ok    agent llm: model server {base}/models answers 200 OK and has model \"gemma3\"\n"
        )),
        "{out}"
    );
    assert_eq!(server.requests().len(), 3);
}

/// An ACP agent that answers `initialize` but refuses `session/new` with a
/// bare "Internal error", saying why on stderr only (Claude Code run as
/// root): doctor, `zeroclaw run` and `zeroclaw chat` show that reason.
#[test]
fn an_agent_that_refuses_a_session_shows_its_own_reason() {
    let dir = TestDir::new();
    let agent = dir.path().join("refusing-agent");
    let reason = "Error: --dangerously-skip-permissions cannot be used with root/sudo privileges";
    std::fs::write(
        &agent,
        format!(
            "#!/bin/sh\nread l\n\
             echo '{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"protocolVersion\":1,\"agentCapabilities\":{{}},\"authMethods\":[]}}}}'\n\
             read l\necho '{reason}' >&2\n\
             echo '{{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{{\"code\":-32603,\"message\":\"Internal error\"}}}}'\n\
             while read l; do :; done\n"
        ),
    )
    .expect("writing the agent");
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let agents = format!(
        "[agents.root]\nbackend = \"acp\"\ncommand = [{}]\n",
        common::acp_agent::toml_str(&agent.to_string_lossy())
    );
    let env = common::start::start_in(dir, &config_with(&agents));
    let (code, out) = doctor_in(&env.dir, &env.config_dir);
    assert_eq!(code, Some(1), "{out}");
    let want = format!(
        "FAIL  agent root: ACP agent {} answered session/new with error -32603: Internal error; \
         its stderr: {reason}; fix: do what the agent says (run agents.root.command by hand to see all it writes)\n",
        agent.display()
    );
    assert!(out.contains(&want), "missing {want:?} in:\n{out}");
    let told = format!(
        "the ACP agent answered session/new with error -32603: Internal error; the agent's stderr: {reason}"
    );
    let mut cmd = env.cli();
    cmd.args(["run", "--agent", "root", "hello"]);
    let (status, _, err) = run_cli(cmd);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains(&told), "{err}");
    let mut chat = common::chat::plain_chat(&env, &["--agent", "root", "--new", "hello"]);
    chat.wait_out(&format!("[failed: {told}]"), 0);
    chat.finish();
}

/// `--agent A` checks that agent only; an unknown alias is a failure naming the configured ones.
#[test]
fn doctor_agent_checks_one_agent() {
    let env = start(&config_with(TOOL_AGENT));
    let mut cmd = Command::new(common::BIN);
    common::hermetic_env(&mut cmd, env.dir.path());
    cmd.env("PATH", std::env::var("PATH").unwrap_or_default());
    cmd.arg("--config-dir")
        .arg(&env.config_dir)
        .args(["doctor", "--agent", "tool"]);
    let (status, out, _) = run_cli(cmd);
    assert_eq!(status.code(), Some(0), "{out}");
    assert!(out.contains("ok    agent tool: "), "{out}");
    assert!(!out.contains("agent echo"), "{out}");
    assert!(out.ends_with("all 9 checks passed\n"), "{out}");
    let mut cmd = Command::new(common::BIN);
    common::hermetic_env(&mut cmd, env.dir.path());
    cmd.arg("--config-dir")
        .arg(&env.config_dir)
        .args(["doctor", "--agent", "nope"]);
    let (status, out, _) = run_cli(cmd);
    assert_eq!(status.code(), Some(1), "{out}");
    assert!(
        out.contains("FAIL  agent nope: no agent nope is configured (there are: echo, tool); fix: name one of them, or add it to config.toml\n"),
        "{out}"
    );
}
