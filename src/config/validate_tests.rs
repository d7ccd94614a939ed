//! Unit tests of `validate.rs`: each rule of §11.3 and the smallest-path choice.

use super::*;
use crate::config::shape::check_toml_shape;

/// The path and reason `validate` reports for the config parsed from `extra` appended to a
/// minimal valid file (parsed without validation).
fn failure(extra: &str) -> Option<(String, String)> {
    let text = format!("schema_version = 1\n[agents.echo]\nbackend = \"echo\"\n{extra}");
    let table: toml::Table = toml::from_str(&text).unwrap();
    check_toml_shape(&table).unwrap();
    let config: Config = table.try_into().unwrap();
    validate(&config).err().map(|f| (f.path, f.reason))
}

fn path_of(extra: &str) -> String {
    failure(extra).unwrap_or_else(|| panic!("valid: {extra}")).0
}

#[test]
fn minimal_and_example_configs_are_valid() {
    assert_eq!(failure(""), None);
    let ok = "[permission_profiles.op]\nallowed_agents = [\"echo\", \"*\"]\n\
              config_write_paths = [\"*\", \"agents.echo.*\", \"daemon.ask_timeout_secs\"]\n\
              grants = { sessions = [\"create\", \"execute\"], config = [] }\n\
              [users.a]\nuid = 1\npermission_profiles = [\"op\"]\n\
              [users.b]\nuid = 2\npermission_profiles = [\"op\"]\nprincipal_id = \"bee\"\n\
              [daemon]\nsession_idle_secs = 0\n[gateway]\nenabled = true\n";
    assert_eq!(failure(ok), None);
}

#[test]
fn integer_ranges() {
    assert_eq!(
        path_of("[daemon]\napproval_timeout_secs = 0"),
        "daemon.approval_timeout_secs"
    );
    assert_eq!(
        path_of("[daemon]\nask_timeout_secs = 0"),
        "daemon.ask_timeout_secs"
    );
    assert_eq!(
        path_of("[daemon]\nupload_idle_secs = 0"),
        "daemon.upload_idle_secs"
    );
    assert_eq!(path_of("[gateway]\nport = 0"), "gateway.port");
    let agent = |field: &str| path_of(&format!("[agents.a]\nbackend = \"echo\"\n{field}"));
    for (field, path) in [
        ("chunk_chars = 0", "agents.a.chunk_chars"),
        ("timeout_secs = 0", "agents.a.timeout_secs"),
        (
            "context_max_messages = 10",
            "agents.a.compact_keep_messages",
        ),
        (
            "compact_keep_messages = 50",
            "agents.a.compact_keep_messages",
        ),
    ] {
        assert_eq!(agent(field), path, "{field}");
    }
    assert_eq!(
        failure("[agents.a]\nbackend = \"echo\"\ncompact_keep_messages = 49"),
        None
    );
}

#[test]
fn agents() {
    let command = "[agents.x]\nbackend = \"command\"";
    for (text, path) in [
        ("[agents.x]\nchunk_chars = 3", "agents.x.backend"),
        ("[agents.x]\nbackend = \"llm\"", "agents.x.backend"),
        (command, "agents.x.command"),
        (&format!("{command}\ncommand = []"), "agents.x.command"),
        (&format!("{command}\ncommand = [\"\"]"), "agents.x.command"),
        (
            "[agents.x]\nbackend = \"echo\"\ninput = \"stdin\"",
            "agents.x.input",
        ),
        (
            "[agents.x]\nbackend = \"echo\"\nenv = { \"A=B\" = \"1\" }",
            "agents.x.env",
        ),
        (
            "[agents.\"bad name\"]\nbackend = \"echo\"",
            "agents.bad name",
        ),
        ("[agents._x]\nbackend = \"echo\"", "agents._x"),
    ] {
        assert_eq!(path_of(text), path, "{text}");
    }
    let input = "[agents.x]\nbackend = \"echo\"\ninput = \"context_json\"";
    assert_eq!(failure(input), None);
}

#[test]
fn users() {
    let op = "[permission_profiles.op]\n";
    let (p, r) = failure(&format!("{op}[users.u]\npermission_profiles = [\"op\"]")).unwrap();
    assert_eq!((p.as_str(), r.as_str()), ("users.u.uid", "required"));
    let (p, r) = failure(&format!("{op}[users.u]\nuid = 1")).unwrap();
    assert_eq!(
        (p.as_str(), r.as_str()),
        ("users.u.permission_profiles", "required")
    );
    let empty = format!("{op}[users.u]\nuid = 1\npermission_profiles = []");
    assert_eq!(path_of(&empty), "users.u.permission_profiles");
    let unknown = "[users.u]\nuid = 1\npermission_profiles = [\"nope\"]";
    assert_eq!(
        failure(unknown).unwrap().1,
        "unknown permission profile \"nope\""
    );
    let dup = format!(
        "{op}[users.a]\nuid = 1\npermission_profiles = [\"op\"]\n\
         [users.b]\nuid = 1\npermission_profiles = [\"op\"]"
    );
    assert_eq!(
        failure(&dup).unwrap(),
        (
            "users.b.uid".into(),
            "duplicate uid 1 (also users.a)".into()
        )
    );
    let dup_id = format!(
        "{op}[users.a]\nuid = 1\npermission_profiles = [\"op\"]\n\
         [users.b]\nuid = 2\npermission_profiles = [\"op\"]\nprincipal_id = \"a\""
    );
    assert_eq!(path_of(&dup_id), "users.b.principal_id");
    let bad_id =
        format!("{op}[users.a]\nuid = 1\npermission_profiles = [\"op\"]\nprincipal_id = \"a:b\"");
    assert_eq!(path_of(&bad_id), "users.a.principal_id");
}

#[test]
fn profiles() {
    let pp = |body: &str| path_of(&format!("[permission_profiles.p]\n{body}"));
    assert_eq!(
        pp("allowed_agents = [\"nope\"]"),
        "permission_profiles.p.allowed_agents"
    );
    assert_eq!(
        pp("grants = { pairing = [\"read\"] }"),
        "permission_profiles.p.grants.pairing"
    );
    assert_eq!(
        pp("grants = { sessions = [\"Read\"] }"),
        "permission_profiles.p.grants.sessions"
    );
    for sel in ["agents.echo", "agents.*.chunk_chars", "nope.*", ""] {
        let body = format!("config_write_paths = [{sel:?}]");
        assert_eq!(
            pp(&body),
            "permission_profiles.p.config_write_paths",
            "{sel}"
        );
    }
    assert_eq!(
        path_of("[permission_profiles.\"a.b\"]"),
        "permission_profiles.a.b"
    );
}

#[test]
fn gateway() {
    let tokens = "[gateway]\npaired_tokens = [\"abc\"]";
    assert_eq!(path_of(tokens), "gateway.paired_tokens");
    let open = "[gateway]\nenabled = true\nrequire_pairing = false";
    assert_eq!(path_of(open), "gateway.enabled");
    let paired = format!("{open}\npaired_tokens = [\"{}\"]", "A".repeat(64));
    assert_eq!(failure(&paired), None);
}

#[test]
fn a_wrong_paired_token_is_named_by_position_not_quoted() {
    // Found by the fuzz target `config_toml`: the refusal quoted the entry,
    // which `config/get` masks as a secret.
    let pasted = "zc_0123456789abcdef0123456789abcdef";
    let good = "a".repeat(64);
    let (path, reason) = failure(&format!(
        "[gateway]\npaired_tokens = [\"{good}\", \"{pasted}\"]"
    ))
    .unwrap();
    assert_eq!(path, "gateway.paired_tokens");
    assert_eq!(reason, "entry 2 (counting from 1) is not 64 hex digits");
    assert!(!reason.contains(pasted));
}

#[test]
fn schema_version_must_be_one() {
    let table: toml::Table = toml::from_str("schema_version = 2").unwrap();
    let config: Config = table.try_into().unwrap();
    assert_eq!(validate(&config).unwrap_err().path, "schema_version");
}

#[test]
fn the_smallest_path_wins_whatever_the_check_order() {
    let many = "[users.z]\nuid = 1\n\
                [agents.b]\nbackend = \"command\"\nchunk_chars = 0\n\
                [daemon]\nask_timeout_secs = 0\n\
                [gateway]\nport = 0\n";
    assert_eq!(path_of(many), "agents.b.chunk_chars");
}

#[test]
fn shape_check_reports_unknown_keys_and_types() {
    let shape = |text: &str| {
        let table: toml::Table = toml::from_str(text).unwrap();
        check_toml_shape(&table).err().map(|f| (f.path, f.reason))
    };
    assert_eq!(
        shape("nope = 1"),
        Some(("nope".into(), "unknown key".into()))
    );
    // The path of the first bad key, in byte order.
    let grants = "[permission_profiles.p]\ngrants = { sessions = \"read\" }";
    for (text, path) in [
        ("[agents.a]\nfoo = 1\n[daemon]\nx = 1", "agents.a.foo"),
        ("[users.u]\nuid = -1", "users.u.uid"),
        ("[agents]\necho = 1", "agents.echo"),
        (grants, "permission_profiles.p.grants.sessions"),
    ] {
        assert_eq!(shape(text).map(|f| f.0).as_deref(), Some(path), "{text}");
    }
    // Why the value is refused.
    for (text, reason) in [
        (
            "schema_version = \"1\"",
            "expected an integer in 0..=4294967295",
        ),
        (
            "[users.u]\npermission_profiles = [1]",
            "expected an array of strings",
        ),
        (
            "[security]\ntrust_daemon_uid = \"yes\"",
            "expected a boolean",
        ),
        ("agents = 1", "expected a table"),
        (
            "[permission_profiles.p.grants.sessions]\nx = 1",
            "expected an array of strings",
        ),
    ] {
        assert_eq!(shape(text).map(|f| f.1).as_deref(), Some(reason), "{text}");
    }
    assert_eq!(shape("[agents.a.env]\nA = \"1\""), None);
}

#[test]
fn failure_into_error() {
    let f = Failure {
        path: "a.b".into(),
        reason: "bad".into(),
    };
    assert_eq!(
        f.clone().into_error(Some(3)).to_string(),
        "sets[3]: invalid configuration: a.b: bad"
    );
    assert_eq!(
        f.into_error(None).to_string(),
        "invalid configuration: a.b: bad"
    );
}
