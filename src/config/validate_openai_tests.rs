//! Unit tests of the `backend = "openai"` keys: each rule, its
//! exact path and reason, and the key/type check of the new kinds.

use super::*;
use crate::config::shape::check_toml_shape;

/// The path and reason reported for `[agents.m]` with `body`, or `None`.
fn failure(body: &str) -> Option<(String, String)> {
    let text = format!("schema_version = 1\n[agents.m]\n{body}");
    let table: toml::Table = toml::from_str(&text).unwrap();
    if let Err(f) = check_toml_shape(&table) {
        return Some((f.path, f.reason));
    }
    let config: Config = table.try_into().unwrap();
    validate(&config).err().map(|f| (f.path, f.reason))
}

fn fails(body: &str, path: &str, reason: &str) {
    assert_eq!(
        failure(body),
        Some((path.to_owned(), reason.to_owned())),
        "{body}"
    );
}

const OK: &str = "backend = \"openai\"\nmodel = \"qwen3\"\n";

/// An absolute key file path on this platform, as a TOML string.
const ABS_KEY: &str = if cfg!(windows) { "'C:\\k'" } else { "\"/k\"" };

#[test]
fn a_full_openai_agent_is_valid() {
    assert_eq!(failure(OK), None);
    let full = format!(
        "{OK}base_url = \"https://api.example.com/v1\"\napi_key_env = \"OPENAI_API_KEY\"\n\
         temperature = 0.2\nmax_tokens = 512\nrequest_timeout_secs = 30\n\
         tools = [\"read_file\", \"shell\"]\napproval = \"always\"\nmax_tool_rounds = 3\n\
         max_retries = 0\nretry_backoff_ms = 10\nsystem_prompt = \"be brief\"\n"
    );
    assert_eq!(failure(&full), None);
    assert_eq!(failure(&format!("{OK}temperature = 1")), None);
    assert_eq!(failure(&format!("{OK}tools = []")), None);
}

#[test]
fn each_rule_has_its_path_and_reason() {
    fails(
        "backend = \"openai\"",
        "agents.m.model",
        "required and non-empty for backend \"openai\"",
    );
    fails(
        "backend = \"openai\"\nmodel = \"\"",
        "agents.m.model",
        "required and non-empty for backend \"openai\"",
    );
    let url = "must be an http:// or https:// URL with a host";
    for bad in [
        "ftp://h",
        "http://",
        "localhost:11434",
        "http:///v1",
        "http://a b",
    ] {
        fails(
            &format!("{OK}base_url = \"{bad}\""),
            "agents.m.base_url",
            url,
        );
    }
    let env = "must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)";
    for bad in ["", "1KEY", "A-B", "A=B"] {
        fails(
            &format!("{OK}api_key_env = \"{bad}\""),
            "agents.m.api_key_env",
            env,
        );
    }
    // Every child gets PATH, HOME, LC_*: a key there would reach them all.
    for base in ["PATH", "HOME", "LC_ALL"] {
        fails(
            &format!("{OK}api_key_env = \"{base}\""),
            "agents.m.api_key_env",
            "must not name a variable every child process gets (PATH, HOME, LC_*, …)",
        );
    }
    fails(
        &format!("{OK}api_key_file = \"key.txt\""),
        "agents.m.api_key_file",
        "must be an absolute path",
    );
    fails(
        &format!("{OK}api_key_env = \"K\"\napi_key_file = {ABS_KEY}"),
        "agents.m.api_key_file",
        "set either api_key_env or api_key_file, not both",
    );
    fails(
        &format!("{OK}temperature = 2.5"),
        "agents.m.temperature",
        "must be a number in 0-2",
    );
    fails(
        &format!("{OK}temperature = \"hot\""),
        "agents.m.temperature",
        "expected a number",
    );
    for key in ["max_tokens", "request_timeout_secs", "max_tool_rounds"] {
        fails(
            &format!("{OK}{key} = 0"),
            &format!("agents.m.{key}"),
            "must be at least 1",
        );
    }
    fails(
        &format!("{OK}tools = [\"rm\"]"),
        "agents.m.tools",
        "unknown tool \"rm\" (expected some of read_file, write_file, list_dir, search_text, shell)",
    );
    fails(
        &format!("{OK}tools = [\"shell\", \"shell\"]"),
        "agents.m.tools",
        "duplicate tool \"shell\"",
    );
    fails(
        &format!("{OK}approval = \"sometimes\""),
        "agents.m.approval",
        "unknown approval \"sometimes\" (expected \"always\", \"writes\" or \"never\")",
    );
    fails(
        "backend = \"gpt\"",
        "agents.m.backend",
        "unknown backend \"gpt\" (expected \"echo\", \"command\", \"acp\" or \"openai\")",
    );
}

#[test]
fn the_sensitive_keys_are_admin_only() {
    use crate::config::is_admin_only_prop;
    for key in ["base_url", "api_key_env", "tools", "approval"] {
        assert!(is_admin_only_prop(&format!("agents.m.{key}")), "{key}");
    }
    for key in ["model", "temperature", "max_tokens", "max_tool_rounds"] {
        assert!(!is_admin_only_prop(&format!("agents.m.{key}")), "{key}");
    }
}
