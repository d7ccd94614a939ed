//! Whether an agent's backend can be reached, one arm per backend: the
//! built-in echo agent always can; a command agent needs its program on
//! PATH (or at its path); an ACP agent must also start and answer
//! `initialize`; a model server must answer `GET <base_url>/models`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::Check;
use crate::agent::{model_redirect, openai_api_key, OpenAiSettings};
use crate::config::AgentConfig;

/// How long an ACP agent or a model server gets to answer.
const ANSWER_WAIT: Duration = Duration::from_secs(10);

pub async fn reachable(alias: &str, agent: &AgentConfig) -> Check {
    let name = format!("agent {alias}");
    match agent.backend.as_deref() {
        Some("echo") => Check::pass(name, "built-in echo backend"),
        Some("command") | None => match program(alias, agent) {
            Ok((program, path)) => {
                Check::pass(name, format!("command {program} is {}", path.display()))
            }
            Err(fail) => fail,
        },
        Some("acp") => match program(alias, agent) {
            Ok((program, path)) => acp_answers(name, alias, agent, (&program, &path)).await,
            Err(fail) => fail,
        },
        Some("openai") => model_server_answers(name, alias, agent).await,
        Some(other) => Check::pass(
            name,
            format!("backend {other} (no reachability check for it yet)"),
        ),
    }
}

/// The agent's program, found; or the failed check saying what to set.
fn program(alias: &str, agent: &AgentConfig) -> Result<(String, PathBuf), Check> {
    let name = format!("agent {alias}");
    let Some(program) = agent.command.as_ref().and_then(|c| c.first()) else {
        return Err(Check::fail(
            name,
            "no command configured",
            format!("set agents.{alias}.command"),
        ));
    };
    match find_program(program) {
        Some(path) => Ok((program.clone(), path)),
        None => Err(Check::fail(
            name,
            format!("command {program} is not found on PATH"),
            format!("install {program}, or set agents.{alias}.command to its full path"),
        )),
    }
}

/// Starts the ACP agent with its `env`, sends `initialize` and waits for its
/// answer; the process is killed either way.
async fn acp_answers(
    name: String,
    alias: &str,
    agent: &AgentConfig,
    program: (&str, &Path),
) -> Check {
    let args = agent
        .command
        .as_deref()
        .unwrap_or_default()
        .get(1..)
        .unwrap_or_default();
    let mut child = match tokio::process::Command::new(program.1)
        .args(args)
        .envs(&agent.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            let fix = format!("check that agents.{alias}.command runs by hand");
            return Check::fail(
                name,
                format!("ACP agent {} did not start: {e}", program.0),
                fix,
            );
        }
    };
    let request = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1,\"clientCapabilities\":{}}}\n";
    let answer = async {
        let mut stdin = child.stdin.take()?;
        stdin.write_all(request).await.ok()?;
        let mut lines = BufReader::new(child.stdout.take()?).lines();
        while let Some(line) = lines.next_line().await.ok()? {
            let v: serde_json::Value = serde_json::from_str(&line).ok()?;
            if v.get("id") == Some(&serde_json::json!(1)) {
                return Some(v);
            }
        }
        None
    };
    let answer = tokio::time::timeout(ANSWER_WAIT, answer).await;
    let _ = child.kill().await;
    let fix = format!(
        "run agents.{alias}.command by hand: it must speak ACP on stdin/stdout (its ACP mode flag?)"
    );
    match answer {
        Ok(Some(v)) => match v["result"]["protocolVersion"].as_u64() {
            Some(version) => Check::pass(
                name,
                format!(
                    "ACP agent {} answers initialize (protocol {version})",
                    program.0
                ),
            ),
            None => Check::fail(
                name,
                format!(
                    "ACP agent {} answered initialize without a protocol version",
                    program.0
                ),
                fix,
            ),
        },
        Ok(None) => Check::fail(
            name,
            format!(
                "ACP agent {} ended its output without answering initialize",
                program.0
            ),
            fix,
        ),
        Err(_) => Check::fail(
            name,
            format!(
                "ACP agent {} did not answer initialize within {} s",
                program.0,
                ANSWER_WAIT.as_secs()
            ),
            fix,
        ),
    }
}

/// `GET <base_url>/models`, with the key when one is configured and readable.
async fn model_server_answers(name: String, alias: &str, agent: &AgentConfig) -> Check {
    let settings = OpenAiSettings::from_config(agent);
    let url = format!("{}/models", settings.base_url.trim_end_matches('/'));
    let client = reqwest::Client::builder()
        .timeout(ANSWER_WAIT)
        .redirect(model_redirect::policy());
    let client = match client.build() {
        Ok(c) => c,
        Err(e) => return Check::fail(name, format!("no HTTP client: {e}"), "report this"),
    };
    let mut request = client.get(&url);
    if let Ok(Some(key)) = openai_api_key(&settings) {
        request = request.bearer_auth(key);
    }
    match request.send().await {
        Ok(r) if r.status().is_success() => {
            Check::pass(name, format!("model server {url} answers {}", r.status()))
        }
        Ok(r) if r.status().is_redirection() => Check::fail(
            name,
            format!(
                "model server {url}: {}",
                model_redirect::refused(r.status(), r.headers()).unwrap_or_default()
            ),
            format!("set agents.{alias}.base_url to where the model server answers"),
        ),
        Ok(r) => {
            let fix = match r.status().as_u16() {
                401 | 403 => format!(
                    "set the key in the variable agents.{alias}.api_key_env names, for the daemon"
                ),
                _ => format!("check agents.{alias}.base_url"),
            };
            Check::fail(
                name,
                format!("model server {url} answers {}", r.status()),
                fix,
            )
        }
        Err(e) => Check::fail(
            name,
            format!("model server {url} does not answer: {e}"),
            format!("start the model server, or set agents.{alias}.base_url"),
        ),
    }
}

/// `program` itself when it names a path, else the first executable match on PATH.
fn find_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = Path::new(program);
        return is_executable(p).then(|| p.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
}

#[cfg(unix)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(p: &Path) -> bool {
    p.is_file()
}
