//! Unit tests of `props.rs`: every value rule of §8.15, reads, and the effective config.

use serde_json::json;

use super::*;
use crate::config::paths::{AGENT, DAEMON, GATEWAY, PROFILE, SECURITY, USER};
use crate::config::schema::{AgentConfig, PermissionProfile, UserConfig};

fn base() -> Config {
    Config::from_toml_str(Config::default_file_text()).unwrap()
}

fn reason(c: &mut Config, prop: &str, v: Value) -> PropReason {
    set(c, prop, &v).unwrap_err().reason
}

#[test]
fn descriptor_matches_the_serde_structs() {
    fn keys(v: Value) -> Vec<String> {
        v.as_object().unwrap().keys().cloned().collect()
    }
    fn names(fields: &[paths::Field]) -> Vec<String> {
        fields.iter().map(|(n, _)| n.to_string()).collect()
    }
    let mut full = base();
    full.security.socket_group = Some("g".into());
    full.daemon.advertised_server_version = Some("1.0.0".into());
    full.gateway.tls_cert = Some("c".into());
    full.gateway.tls_key = Some("k".into());
    full.gateway.allowed_hosts = vec!["h".into()];
    full.gateway.allowed_origins = vec!["http://h".into()];
    let agent = AgentConfig {
        backend: Some("echo".into()),
        workspace_dir: Some("/w".into()),
        command: Some(vec!["x".into()]),
        base_url: Some("http://h/v1".into()),
        model: Some("m".into()),
        api_key_env: Some("K".into()),
        api_key_file: Some("/k".into()),
        temperature: Some(crate::config::Temperature(0.5)),
        max_tokens: Some(1),
        request_timeout_secs: Some(1),
        tools: Some(vec![]),
        approval: Some("never".into()),
        max_tool_rounds: Some(1),
        max_retries: Some(0),
        retry_backoff_ms: Some(0),
        ..AgentConfig::default()
    };
    let user = UserConfig {
        uid: Some(1),
        permission_profiles: Some(vec![]),
        principal_id: Some("p".into()),
    };
    let tree = serde_json::to_value(&full).unwrap();
    assert_eq!(keys(tree["daemon"].clone()), names(DAEMON));
    assert_eq!(keys(tree["security"].clone()), names(SECURITY));
    assert_eq!(keys(tree["gateway"].clone()), names(GATEWAY));
    assert_eq!(keys(serde_json::to_value(agent).unwrap()), names(AGENT));
    assert_eq!(keys(serde_json::to_value(user).unwrap()), names(USER));
    let profile = PermissionProfile::default();
    assert_eq!(keys(serde_json::to_value(profile).unwrap()), names(PROFILE));
}

#[test]
fn string_rules() {
    let mut c = base();
    set(&mut c, "agents.echo.system_prompt", &json!("hi")).unwrap();
    assert_eq!(c.agents["echo"].system_prompt, "hi");
    set(&mut c, "agents.echo.system_prompt", &json!(12)).unwrap();
    assert_eq!(c.agents["echo"].system_prompt, "12");
    set(&mut c, "agents.echo.system_prompt", &json!(1.5)).unwrap();
    assert_eq!(c.agents["echo"].system_prompt, "1.5");
    set(&mut c, "security.socket_group", &json!(true)).unwrap();
    assert_eq!(c.security.socket_group.as_deref(), Some("true"));
    let want = PropReason::Type("a string".into());
    assert_eq!(reason(&mut c, "gateway.host", json!(["a"])), want);
    assert_eq!(reason(&mut c, "gateway.host", json!({})), want);
}

#[test]
fn integer_rules() {
    let mut c = base();
    set(&mut c, "agents.echo.chunk_chars", &json!(4)).unwrap();
    assert_eq!(c.agents["echo"].chunk_chars, 4);
    set(&mut c, "agents.echo.chunk_chars", &json!("0007")).unwrap();
    assert_eq!(c.agents["echo"].chunk_chars, 7);
    set(&mut c, "gateway.port", &json!(65535)).unwrap();
    assert_eq!(c.gateway.port, 65535);
    let port = PropReason::Type("an integer in 0..=65535".into());
    assert_eq!(reason(&mut c, "gateway.port", json!(65536)), port);
    let u32r = PropReason::Type("an integer in 0..=4294967295".into());
    for bad in [
        json!(-1),
        json!(1.5),
        json!(4294967296u64),
        json!("-1"),
        json!("+1"),
        json!(""),
        json!("1e3"),
        json!(" 1"),
        json!("99999999999999999999999"),
        json!(true),
        json!([1]),
    ] {
        assert_eq!(
            reason(&mut c, "daemon.ask_timeout_secs", bad.clone()),
            u32r,
            "{bad}"
        );
    }
    assert_eq!(c.daemon.ask_timeout_secs, 120);
}

#[test]
fn bool_rules() {
    let mut c = base();
    set(&mut c, "gateway.enabled", &json!(true)).unwrap();
    assert!(c.gateway.enabled);
    set(&mut c, "gateway.enabled", &json!("false")).unwrap();
    assert!(!c.gateway.enabled);
    set(&mut c, "security.trust_daemon_uid", &json!("false")).unwrap();
    assert!(!c.security.trust_daemon_uid);
    for bad in [json!("True"), json!(1), json!("yes"), json!([])] {
        assert_eq!(
            reason(&mut c, "gateway.enabled", bad),
            PropReason::Type("a boolean".into())
        );
    }
}

#[test]
fn list_and_table_rules() {
    let mut c = base();
    set(&mut c, "agents.echo.command", &json!(["a", "b"])).unwrap();
    assert_eq!(c.agents["echo"].command, Some(vec!["a".into(), "b".into()]));
    set(&mut c, "agents.echo.command", &json!(["c"])).unwrap();
    assert_eq!(c.agents["echo"].command, Some(vec!["c".into()]));
    let list = PropReason::Type("an array of strings".into());
    assert_eq!(reason(&mut c, "agents.echo.command", json!("a")), list);
    assert_eq!(reason(&mut c, "agents.echo.command", json!([1])), list);

    set(&mut c, "agents.echo.env", &json!({"A": "1", "B": "2"})).unwrap();
    set(&mut c, "agents.echo.env", &json!({"C": "3"})).unwrap();
    assert_eq!(c.agents["echo"].env.len(), 1);
    let table = PropReason::Type("an object of string values".into());
    assert_eq!(reason(&mut c, "agents.echo.env", json!({"A": 1})), table);
    assert_eq!(reason(&mut c, "agents.echo.env", json!(["A"])), table);

    let grants = json!({"sessions": ["read"], "files": ["create"]});
    set(&mut c, "permission_profiles.op.grants", &grants).unwrap();
    assert_eq!(c.permission_profiles["op"].grants.len(), 2);
    set(
        &mut c,
        "permission_profiles.op.grants.system",
        &json!(["read"]),
    )
    .unwrap();
    assert_eq!(c.permission_profiles["op"].grants["system"], vec!["read"]);
    let g = PropReason::Type("an object of resource to array of verbs".into());
    assert_eq!(
        reason(
            &mut c,
            "permission_profiles.op.grants",
            json!({"a": "read"})
        ),
        g
    );
    assert_eq!(
        reason(&mut c, "permission_profiles.op.grants", json!([])),
        g
    );
}

#[test]
fn null_read_only_and_unknown() {
    let mut c = base();
    let before = c.clone();
    assert_eq!(
        reason(&mut c, "agents.echo.chunk_chars", Value::Null),
        PropReason::Null
    );
    assert_eq!(
        reason(&mut c, "security.socket_group", Value::Null),
        PropReason::Null
    );
    assert_eq!(
        reason(&mut c, "schema_version", json!(1)),
        PropReason::ReadOnly
    );
    assert_eq!(
        reason(&mut c, "gateway.paired_tokens", json!([])),
        PropReason::PairingManaged
    );
    for p in [
        "agents",
        "agents.echo",
        "daemon",
        "nope",
        "agents.echo.nope",
    ] {
        assert_eq!(reason(&mut c, p, json!(1)), PropReason::Unknown, "{p}");
        assert_eq!(get(&c, p).unwrap_err().reason, PropReason::Unknown, "{p}");
    }
    assert_eq!(c, before);
    let e = set(&mut c, "agents.echo", &json!(1)).unwrap_err();
    assert_eq!(e.to_string(), "agents.echo: unknown prop");
}

#[test]
fn setting_below_a_missing_entry_creates_it_with_defaults() {
    let mut c = base();
    set(&mut c, "users.example.uid", &json!(1001)).unwrap();
    assert_eq!(c.users["example"].uid, Some(1001));
    assert_eq!(c.users["example"].permission_profiles, None);
    set(&mut c, "agents.new.chunk_chars", &json!(3)).unwrap();
    let a = &c.agents["new"];
    assert_eq!(
        (a.chunk_chars, a.timeout_secs, a.backend.clone()),
        (3, 600, None)
    );
    set(
        &mut c,
        "permission_profiles.p.grants.files",
        &json!(["create"]),
    )
    .unwrap();
    assert_eq!(c.permission_profiles["p"].grants["files"], vec!["create"]);
}

#[test]
fn get_reads_typed_values() {
    let mut c = base();
    c.gateway.paired_tokens = vec!["a".repeat(64)];
    set(&mut c, "users.example.uid", &json!(1001)).unwrap();
    set(
        &mut c,
        "permission_profiles.op.grants.files",
        &json!(["create"]),
    )
    .unwrap();
    assert_eq!(get(&c, "users.example.uid").unwrap(), json!(1001));
    assert_eq!(get(&c, "users.example.principal_id").unwrap(), Value::Null);
    assert_eq!(get(&c, "schema_version").unwrap(), json!(1));
    assert_eq!(get(&c, "agents.echo.backend").unwrap(), json!("echo"));
    assert_eq!(get(&c, "agents.echo.env").unwrap(), json!({}));
    assert_eq!(get(&c, "security.socket_group").unwrap(), Value::Null);
    assert_eq!(get(&c, "gateway.paired_tokens").unwrap(), json!(["****"]));
    let g = "permission_profiles.op.grants";
    assert_eq!(get(&c, g).unwrap(), json!({"files": ["create"]}));
    assert_eq!(get(&c, &format!("{g}.files")).unwrap(), json!(["create"]));
    assert_eq!(get(&c, &format!("{g}.sessions")).unwrap(), json!([]));
    assert_eq!(
        get(&c, &format!("{g}.pairing")).unwrap_err().reason,
        PropReason::Unknown
    );
    let missing = get(&c, "agents.nope.chunk_chars").unwrap_err();
    assert_eq!(missing.reason, PropReason::Unknown);
}

#[test]
fn effective_json_has_every_field_sorted_and_masked() {
    let mut c = base();
    c.gateway.paired_tokens = vec!["a".repeat(64), "b".repeat(64)];
    set(&mut c, "agents.a.backend", &json!("echo")).unwrap();
    let v = effective_json(&c);
    assert_eq!(v["gateway"]["paired_tokens"], json!(["****", "****"]));
    assert_eq!(v["gateway"]["tls_cert"], Value::Null);
    assert_eq!(v["security"]["socket_group"], Value::Null);
    assert_eq!(v["daemon"]["upload_idle_secs"], json!(300));
    assert_eq!(v["agents"]["echo"]["command"], Value::Null);
    assert_eq!(v["agents"]["echo"]["chunk_chars"], json!(16));
    let aliases: Vec<&String> = v["agents"].as_object().unwrap().keys().collect();
    assert_eq!(aliases, ["a", "echo"]);
    assert_eq!(v["schema_version"], json!(1));
    assert_eq!(v["users"], json!({}));
    assert_eq!(v["agents"]["echo"].as_object().unwrap().len(), AGENT.len());
    // The running config itself is untouched.
    assert_eq!(c.gateway.paired_tokens[0], "a".repeat(64));
}

#[test]
fn an_added_backends_env_values_read_masked_and_a_v1_backends_as_written() {
    let mut c = base();
    let env = json!({"ANTHROPIC_API_KEY": "sk-ant-secret", "LANG": "C"});
    for (alias, backend) in [("claude", "acp"), ("m", "openai"), ("cmd", "command")] {
        set(&mut c, &format!("agents.{alias}.backend"), &json!(backend)).unwrap();
        set(&mut c, &format!("agents.{alias}.env"), &env).unwrap();
    }
    let masked = json!({"ANTHROPIC_API_KEY": "****", "LANG": "****"});
    let v = effective_json(&c);
    assert_eq!(v["agents"]["claude"]["env"], masked);
    assert_eq!(v["agents"]["m"]["env"], masked);
    assert_eq!(v["agents"]["cmd"]["env"], env);
    assert_eq!(get(&c, "agents.claude.env").unwrap(), masked);
    assert_eq!(get(&c, "agents.cmd.env").unwrap(), env);
    // Reads mask; the running config keeps the values the agent is started with.
    assert_eq!(c.agents["claude"].env["ANTHROPIC_API_KEY"], "sk-ant-secret");
}
