//! Unit tests of `policy.rs`: the §5.2 rows, grants, selectors, admin-only props, tokens.

use super::*;
use crate::config::grant::{RESOURCES, VERBS};

fn config(extra: &str) -> Config {
    let text = format!(
        "schema_version = 1\n[agents.echo]\nbackend = \"echo\"\n\
         [agents.llm]\nbackend = \"command\"\ncommand = [\"llm\"]\n{extra}"
    );
    Config::from_toml_str(&text).unwrap()
}

const ROSTER: &str = r#"
[permission_profiles.operator]
allowed_agents = ["echo"]
config_write_paths = ["agents.echo.*", "daemon.ask_timeout_secs"]
grants = { sessions = ["create", "read"], files = ["create"] }
[permission_profiles.viewer]
grants = { system = ["read"] }
allowed_agents = ["llm"]
config_write_paths = ["agents.echo.*"]
[permission_profiles.nothing]
[permission_profiles.boss]
admin = true
[users.alice]
uid = 1001
permission_profiles = ["operator", "viewer"]
principal_id = "al"
[users.bob]
uid = 1002
permission_profiles = ["nothing"]
[users.root]
uid = 0
permission_profiles = ["boss"]
"#;

fn bound(r: Resolution) -> Principal {
    match r {
        Resolution::Bound(p) => p,
        other => panic!("{other:?}"),
    }
}

#[test]
fn resolve_uid_rows() {
    let p = Policy::from_config(&config(ROSTER));
    // Daemon uid, trusted: shared operator.
    assert_eq!(bound(p.resolve_uid(500, 500)), Principal::shared_operator());
    // Mapped by exactly one entry.
    let alice = bound(p.resolve_uid(1001, 500));
    assert_eq!(alice.id, "user:al");
    assert!(!alice.admin);
    let bob = bound(p.resolve_uid(1002, 500));
    assert_eq!(bob.id, "user:bob");
    assert!(!bob.has_any_grant());
    // Root is mapped only through the roster.
    assert!(bound(p.resolve_uid(0, 500)).admin);
    // Otherwise rejected.
    let rejected = p.resolve_uid(4242, 500);
    assert_eq!(rejected, Resolution::CredentialRejected);
    assert_eq!(rejected.reason(), Some("credential_rejected"));
    assert_eq!(
        Policy::from_config(&config("")).resolve_uid(0, 500),
        Resolution::CredentialRejected
    );
    // With trust_daemon_uid = false the daemon's uid needs a roster entry.
    let untrusted = config(&format!("[security]\ntrust_daemon_uid = false\n{ROSTER}"));
    let p = Policy::from_config(&untrusted);
    assert_eq!(p.resolve_uid(500, 500), Resolution::CredentialRejected);
    assert_eq!(bound(p.resolve_uid(1001, 1001)).id, "user:al");
}

#[test]
fn resolve_without_uid() {
    let none = Policy::from_config(&config(""));
    assert_eq!(bound(none.resolve_no_uid()), Principal::shared_operator());
    let roster = Policy::from_config(&config(ROSTER));
    assert_eq!(roster.resolve_no_uid(), Resolution::RosterRequired);
    assert_eq!(roster.resolve_no_uid().reason(), Some("roster_required"));
}

#[test]
fn profiles_merge_by_union() {
    let p = Policy::from_config(&config(ROSTER));
    let alice = bound(p.resolve_uid(1001, 500));
    assert!(alice.has(Grant(Resource::Sessions, Verb::Create)));
    assert!(alice.has(Grant(Resource::System, Verb::Read)));
    assert!(alice.has(Grant(Resource::Files, Verb::Create)));
    assert!(!alice.has(Grant(Resource::Sessions, Verb::Delete)));
    assert!(!alice.has(Grant(Resource::Config, Verb::Update)));
    assert!(alice.may_use_agent("echo") && alice.may_use_agent("llm"));
    assert!(!alice.may_use_agent("other"));
    assert_eq!(
        alice.write_paths,
        ["agents.echo.*", "daemon.ask_timeout_secs"]
    );
    let admin = Principal::shared_operator();
    assert!(admin.has(Grant(Resource::Config, Verb::Delete)));
    assert!(admin.may_use_agent("anything") && admin.has_any_grant());
}

#[test]
fn wildcard_agents_and_policy_equality() {
    let c = config(
        "[permission_profiles.p]\nallowed_agents = [\"echo\", \"*\"]\n\
         [users.u]\nuid = 7\npermission_profiles = [\"p\"]\n",
    );
    let u = bound(Policy::from_config(&c).resolve_uid(7, 1));
    assert_eq!(u.allowed_agents, AgentSelector::All);
    assert!(!u.has_any_grant());
    let mut changed = c.clone();
    changed.daemon.ask_timeout_secs = 9;
    assert_eq!(Policy::from_config(&c), Policy::from_config(&changed));
    changed.security.trust_daemon_uid = false;
    assert_ne!(Policy::from_config(&c), Policy::from_config(&changed));
}

#[test]
fn grant_bits_are_distinct() {
    let mut all = GrantSet::default();
    let mut n = 0;
    for (r, _) in RESOURCES {
        for (v, _) in VERBS {
            let g = Grant(r, v);
            assert!(!all.contains(g));
            all.insert(g);
            n += 1;
        }
    }
    assert_eq!((n, all), (20, GrantSet::all()));
    assert_eq!(
        Grant(Resource::Config, Verb::Update).to_string(),
        "config:update"
    );
    assert_eq!(Resource::parse("Config"), None);
    assert_eq!(Verb::parse("execute"), Some(Verb::Execute));
}

#[test]
fn selector_matching() {
    assert!(selector_matches("*", "daemon.ask_timeout_secs"));
    assert!(selector_matches("agents.echo.*", "agents.echo.chunk_chars"));
    assert!(selector_matches("agents.echo.*", "agents.echo"));
    assert!(!selector_matches(
        "agents.echo.*",
        "agents.echo2.chunk_chars"
    ));
    assert!(!selector_matches("agents.echo.*", "agents"));
    assert!(selector_matches("agents.*", "agents.llm.input"));
    assert!(selector_matches(
        "agents.echo.chunk_chars",
        "agents.echo.chunk_chars"
    ));
    assert!(!selector_matches(
        "agents.echo.chunk_chars",
        "agents.echo.chunk_chars_x"
    ));
    assert!(!selector_matches("agents.echo", "agents.echo.chunk_chars"));
}

#[test]
fn admin_only_props() {
    for p in [
        "security.trust_daemon_uid",
        "security.socket_group",
        "users.a.uid",
        "permission_profiles.p.grants.sessions",
        "gateway.port",
        "agents.echo.backend",
        "agents.echo.command",
        "agents.echo.env",
        "agents.echo.workspace_dir",
        "daemon.memory_budget_mib",
    ] {
        assert!(is_admin_only_prop(p), "{p}");
    }
    for p in [
        "agents.echo.chunk_chars",
        "agents.echo.system_prompt",
        "agents.echo.input",
        "daemon.ask_timeout_secs",
        "schema_version",
    ] {
        assert!(!is_admin_only_prop(p), "{p}");
    }
    let star = Principal::writer(&["*"]);
    assert!(star.may_write("agents.echo.chunk_chars"));
    assert!(!star.may_write("agents.echo.backend"));
    assert!(!star.may_write("security.trust_daemon_uid"));
    assert!(!star.may_write("gateway.enabled"));
    assert!(Principal::shared_operator().may_write("agents.echo.env"));
    let none = Principal::writer(&[]);
    assert!(!none.may_write("agents.echo.chunk_chars"));
}

#[test]
fn token_digests() {
    // SHA-256("abc").
    assert_eq!(
        token_digest("abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    let token = token_from_bytes(&[0xab; 32]);
    assert_eq!(token.len(), 67);
    assert!(token.starts_with("zc_abab"));
    let mut c = config("");
    assert!(!is_paired(&c, &token));
    c.gateway.paired_tokens = vec![token_digest(&token).to_uppercase()];
    assert!(is_paired(&c, &token));
    assert!(!is_paired(&c, &token[3..]));
}
