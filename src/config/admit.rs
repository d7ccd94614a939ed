//! The one way into a running [`Config`]: validated (§11.3), then every
//! agent parsed into its [`AgentSpec`]. Loading the file, a reload and
//! staging a `config/set` all come through here, so the specs always
//! describe the agents beside them and nothing past this point parses a
//! backend or a choice from its string.

use std::time::Duration;

use super::agent_spec::{
    AcpOptions, AgentSpec, Approval, Backend, FsAccess, InputMode, LoadSession, OpenAiSettings,
    PermissionDefault, Tool, DEFAULT_BASE_URL, DEFAULT_MAX_RETRIES, DEFAULT_MAX_TOOL_ROUNDS,
    DEFAULT_REQUEST_TIMEOUT_SECS, DEFAULT_RETRY_BACKOFF_MS,
};
use super::schema::{AgentConfig, Config};
use super::validate::{validate, validate_all, Failure};

/// `config`, valid and with its specs; or the failure with the smallest path.
pub fn admit(config: Config) -> Result<Config, Failure> {
    validate(&config)?;
    with_specs(config)
}

/// As [`admit`], but a refusal lists every failure, by path.
pub fn admit_all(config: Config) -> Result<Config, Vec<Failure>> {
    let failures = validate_all(&config);
    if !failures.is_empty() {
        return Err(failures);
    }
    with_specs(config).map_err(|f| vec![f])
}

/// `config` with each agent's spec. A valid entry always parses; one that
/// does not (a check missing from `validate.rs`) is refused, never guessed.
fn with_specs(mut config: Config) -> Result<Config, Failure> {
    let mut specs = std::collections::BTreeMap::new();
    for (alias, agent) in &config.agents {
        let Some(spec) = spec_of(agent) else {
            return Err(Failure {
                path: format!("agents.{alias}"),
                reason: "not a runnable agent".to_owned(),
            });
        };
        specs.insert(alias.clone(), spec);
    }
    config.specs = specs;
    Ok(config)
}

/// The spec of `agent`, or `None` when it does not parse (validation
/// has then named the key and the reason already).
fn spec_of(agent: &AgentConfig) -> Option<AgentSpec> {
    let argv = || {
        agent
            .command
            .clone()
            .filter(|argv| argv.first().is_some_and(|p| !p.is_empty()))
    };
    Some(match Backend::parse(agent.backend.as_deref()?)? {
        Backend::Echo => AgentSpec::Echo {
            chunk_chars: agent.chunk_chars,
            chunk_delay_ms: agent.chunk_delay_ms,
        },
        Backend::Command => AgentSpec::Command {
            argv: argv()?,
            input: InputMode::parse(&agent.input)?,
        },
        Backend::Acp => AgentSpec::Acp {
            argv: argv()?,
            options: AcpOptions {
                load_session: LoadSession::parse(&agent.load_session)?,
                permission_default: PermissionDefault::parse(&agent.permission_default)?,
                fs: FsAccess::parse(&agent.fs)?,
                terminal: agent.terminal,
            },
        },
        Backend::OpenAi => {
            let settings = openai_of(agent)?;
            (!settings.model.is_empty()).then_some(AgentSpec::OpenAi(settings))?
        }
    })
}

/// The settings of `agent`, defaults filled; `None` when a tool or the
/// approval mode is not one of ours (validation has refused it already).
fn openai_of(agent: &AgentConfig) -> Option<OpenAiSettings> {
    let tools = match &agent.tools {
        Some(names) => names
            .iter()
            .map(|n| Tool::parse(n))
            .collect::<Option<_>>()?,
        None => Tool::ALL.to_vec(),
    };
    let approval = match &agent.approval {
        Some(word) => Approval::parse(word)?,
        None => Approval::default(),
    };
    Some(OpenAiSettings {
        base_url: agent
            .base_url
            .clone()
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()),
        model: agent.model.clone().unwrap_or_default(),
        api_key_env: agent.api_key_env.clone(),
        api_key_file: agent.api_key_file.as_ref().map(Into::into),
        temperature: agent.temperature,
        max_tokens: agent.max_tokens,
        request_timeout: Duration::from_secs(u64::from(
            agent
                .request_timeout_secs
                .unwrap_or(DEFAULT_REQUEST_TIMEOUT_SECS),
        )),
        tools,
        approval,
        max_tool_rounds: agent.max_tool_rounds.unwrap_or(DEFAULT_MAX_TOOL_ROUNDS),
        max_retries: agent.max_retries.unwrap_or(DEFAULT_MAX_RETRIES),
        retry_backoff: Duration::from_millis(u64::from(
            agent.retry_backoff_ms.unwrap_or(DEFAULT_RETRY_BACKOFF_MS),
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::agent_spec::{Tool, DEFAULT_BASE_URL};

    fn spec(entry: &str) -> Option<AgentSpec> {
        let text = format!("schema_version = 1\n[agents.a]\n{entry}\n");
        let config = Config::from_toml_str(&text).ok()?;
        config.agent_spec("a").cloned()
    }

    #[test]
    fn each_backend_parses_into_its_variant() {
        assert_eq!(
            spec("backend = \"echo\"\nchunk_chars = 3"),
            Some(AgentSpec::Echo {
                chunk_chars: 3,
                chunk_delay_ms: 0
            })
        );
        assert_eq!(
            spec("backend = \"command\"\ncommand = [\"cat\"]\ninput = \"context_json\""),
            Some(AgentSpec::Command {
                argv: vec!["cat".into()],
                input: InputMode::ContextJson
            })
        );
        let acp = spec("backend = \"acp\"\ncommand = [\"a\"]\nfs = \"off\"\nterminal = true");
        let options = AcpOptions {
            fs: FsAccess::Off,
            terminal: true,
            ..AcpOptions::default()
        };
        assert_eq!(
            acp,
            Some(AgentSpec::Acp {
                argv: vec!["a".into()],
                options
            })
        );
        let Some(AgentSpec::OpenAi(o)) =
            spec("backend = \"openai\"\nmodel = \"m\"\ntools = [\"shell\"]\napproval = \"never\"")
        else {
            panic!("an openai agent parses into OpenAi");
        };
        assert_eq!(
            (o.model.as_str(), o.tools, o.approval),
            ("m", vec![Tool::Shell], Approval::Never)
        );
        assert_eq!(o.base_url, DEFAULT_BASE_URL);
    }

    #[test]
    fn an_entry_that_does_not_parse_never_passes_validation() {
        // Each is refused by `from_toml_str`, so no spec exists for it.
        for entry in [
            "backend = \"nope\"",
            "backend = \"command\"",
            "backend = \"acp\"\ncommand = [\"\"]",
            "backend = \"openai\"",
            "backend = \"echo\"\ninput = \"stdin\"",
        ] {
            assert_eq!(spec(entry), None, "{entry}");
        }
    }
}
