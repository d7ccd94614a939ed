//! Whether an agent's backend can be reached, one arm per backend: the
//! built-in echo agent always can; a command agent needs its program on
//! PATH (or at its path); an ACP agent must also start and open a session
//! (`acp.rs`); a model server must answer `GET <base_url>/models` and list
//! the configured model (a server without `/models` is a warning).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::Check;
use crate::agent::{model_redirect, openai_api_key, OpenAiSettings};
use crate::config::{AgentConfig, AgentSpec};

/// How long a model server gets to answer.
const ANSWER_WAIT: Duration = Duration::from_secs(10);

pub async fn reachable(alias: &str, agent: &AgentConfig, spec: &AgentSpec) -> Check {
    let name = format!("agent {alias}");
    match spec {
        AgentSpec::Echo { .. } => Check::pass(name, "built-in echo backend"),
        AgentSpec::Command { argv, .. } => match program(alias, argv) {
            Ok((program, path)) => {
                Check::pass(name, format!("command {program} is {}", path.display()))
            }
            Err(fail) => fail,
        },
        AgentSpec::Acp { argv, .. } => match program(alias, argv) {
            Ok((program, path)) => {
                super::acp::session_opens(name, alias, agent, (&program, &path)).await
            }
            Err(fail) => fail,
        },
        AgentSpec::OpenAi(settings) => model_server_answers(name, alias, settings).await,
    }
}

/// The agent's program, found; or the failed check saying what to set.
fn program(alias: &str, argv: &[String]) -> Result<(String, PathBuf), Check> {
    let name = format!("agent {alias}");
    let Some(program) = argv.first() else {
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

/// `GET <base_url>/models`, with the key when one is configured and readable.
async fn model_server_answers(name: String, alias: &str, settings: &OpenAiSettings) -> Check {
    let url = format!("{}/models", settings.base_url.trim_end_matches('/'));
    let client = reqwest::Client::builder()
        .timeout(ANSWER_WAIT)
        .redirect(model_redirect::policy());
    let client = match client.build() {
        Ok(c) => c,
        Err(e) => return Check::fail(name, format!("no HTTP client: {e}"), "report this"),
    };
    let mut request = client.get(&url);
    if let Ok(Some(key)) = openai_api_key(settings) {
        request = request.bearer_auth(key);
    }
    let model = settings.model.clone();
    match request.send().await {
        Ok(r) if r.status().is_success() => {
            let status = r.status();
            // A bounded read: a listing is small, a server that streams is not one.
            let body = tokio::time::timeout(ANSWER_WAIT, r.bytes()).await;
            let ids = match body {
                Ok(Ok(b)) if b.len() <= MAX_LISTING_BYTES => model_ids(&b),
                _ => None,
            };
            has_model(name, alias, &url, status, &model, ids)
        }
        Ok(r) if matches!(r.status().as_u16(), 404 | 405 | 501) => Check::warn(
            name,
            format!(
                "model server {url} answers {}: it lists no models, so model {model:?} is not checked",
                r.status()
            ),
        ),
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

/// The most of a `/models` answer read.
const MAX_LISTING_BYTES: usize = 4 * 1024 * 1024;
/// How many of the server's models a failure names.
const MODELS_NAMED: usize = 10;

/// The ids of OpenAI's model list (`{"data": [{"id": …}, …]}`).
fn model_ids(body: &[u8]) -> Option<Vec<String>> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let ids = v
        .get("data")?
        .as_array()?
        .iter()
        .filter_map(|m| m.get("id").and_then(Value::as_str))
        .map(str::to_owned)
        .collect();
    Some(ids)
}

/// Whether the listing names `model`; an unreadable listing is a warning.
fn has_model(
    name: String,
    alias: &str,
    url: &str,
    status: reqwest::StatusCode,
    model: &str,
    ids: Option<Vec<String>>,
) -> Check {
    let Some(ids) = ids else {
        return Check::warn(
            name,
            format!("model server {url} answers {status} without a model list: model {model:?} is not checked"),
        );
    };
    if ids.iter().any(|id| id == model) {
        return Check::pass(
            name,
            format!("model server {url} answers {status} and has model {model:?}"),
        );
    }
    let mut named: Vec<String> = ids
        .iter()
        .take(MODELS_NAMED)
        .map(|id| format!("{id:?}"))
        .collect();
    if ids.len() > MODELS_NAMED {
        named.push(format!("and {} more", ids.len() - MODELS_NAMED));
    }
    let has = if ids.is_empty() {
        "none".to_owned()
    } else {
        named.join(", ")
    };
    Check::fail(
        name,
        format!("model server {url} has no model {model:?} (it has: {has})"),
        format!("set agents.{alias}.model to a model the server has, or load {model:?} into it"),
    )
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
