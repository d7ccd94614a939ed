//! Property tests of `config/set-many` staging (§8.16 steps 5–6):
//! `stage_many` over generated entries equals applying the entries one by
//! one with `props::set` to a copy of the running config and then validating
//! the result — same candidate, same distinct props, or the same error (the
//! first entry that cannot be applied, else the validation failure with the
//! last entry whose prop is the failing path or an ancestor of it). The
//! running config is never changed, a committed candidate survives its own
//! TOML round trip (what the daemon persists is what it reads back), and
//! `config/set` stages like a one-entry `config/set-many`.

use crate::common;

use proptest::prelude::*;
use serde_json::{json, Value};
use zeroclaw::config::{admit, props, stage_many, stage_one, Config, ConfigError};

/// Running configs the entries are staged into.
const RUNNING: &[&str] = &[
    "schema_version = 1\n\n[agents.echo]\nbackend = \"echo\"\n",
    "schema_version = 1\n[daemon]\nask_timeout_secs = 9\n[agents.echo]\nbackend = \"echo\"\n\
     chunk_chars = 3\n[agents.cmd]\nbackend = \"command\"\ncommand = [\"cat\"]\n\
     [permission_profiles.operator]\nallowed_agents = [\"echo\"]\n\
     grants = { sessions = [\"read\"] }\n",
];

/// Props: valid ones of every kind, a new map entry, read-only ones and
/// things that are not props.
const PROPS: &[&str] = &[
    "agents.echo.chunk_chars",
    "agents.echo.chunk_delay_ms",
    "agents.echo.system_prompt",
    "agents.echo.context_max_messages",
    "agents.echo.compact_keep_messages",
    "agents.echo.env",
    "agents.echo.backend",
    "agents.echo.input",
    "agents.echo.command",
    "daemon.ask_timeout_secs",
    "daemon.approval_timeout_secs",
    "daemon.session_idle_secs",
    "security.trust_daemon_uid",
    "gateway.port",
    "agents.extra.backend",
    "agents.extra.chunk_chars",
    "permission_profiles.operator.grants",
    "permission_profiles.operator.grants.sessions",
    "permission_profiles.operator.allowed_agents",
    "users.u1.uid",
    "users.u1.permission_profiles",
    "schema_version",
    "gateway.paired_tokens",
    "agents.echo.nope",
    "agents.echo",
    "daemon",
    "",
];

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop_oneof![
            Just(0u64), Just(1), Just(2), Just(7), Just(10), Just(60), Just(65535),
            Just(65536), Just(u64::from(u32::MAX)), Just(u64::from(u32::MAX) + 1),
        ]
        .prop_map(Value::from),
        1 => Just(json!(-1)),
        1 => Just(json!(1.5)),
        2 => prop_oneof![
            Just("echo"), Just("command"), Just("prompt"), Just("context_json"),
            Just("12"), Just(""), Just("true"), Just("x y"),
        ]
        .prop_map(Value::from),
        1 => "[a-z ]{0,12}".prop_map(Value::String),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => Just(Value::Null),
        1 => Just(json!(["cat", "-n"])),
        1 => Just(json!(["cat", 1])),
        1 => Just(json!({"A": "1", "B": "two"})),
        1 => Just(json!({"A": 1})),
        1 => Just(json!([])),
        1 => Just(json!(["operator"])),
        1 => Just(json!(["echo", "ghost"])),
        1 => Just(json!(["read", "update"])),
        1 => Just(json!(["fly"])),
        1 => Just(json!({"sessions": ["read"], "system": ["read"]})),
        1 => Just(json!({"pairing": ["read"]})),
        1 => Just(json!({"sessions": ["fly"]})),
        1 => Just(json!({"": "x", "B": "y"})),
        1 => Just(json!({"A": "nul\u{0}"})),
    ]
}

fn entry() -> impl Strategy<Value = (String, Value)> {
    (prop::sample::select(PROPS), value()).prop_map(|(p, v)| (p.to_owned(), v))
}

/// An entry whose value has the prop's type, so that it applies.
fn typed_entry() -> impl Strategy<Value = (String, Value)> {
    let int = || (0u64..70).prop_map(Value::from).boxed();
    let pick = |vs: Vec<Value>| prop::sample::select(vs).boxed();
    let by_prop: Vec<(&str, BoxedStrategy<Value>)> = vec![
        ("agents.echo.chunk_chars", int()),
        ("agents.echo.chunk_delay_ms", int()),
        ("agents.echo.context_max_messages", int()),
        ("agents.echo.compact_keep_messages", int()),
        ("agents.extra.chunk_chars", int()),
        ("daemon.ask_timeout_secs", int()),
        ("daemon.approval_timeout_secs", int()),
        ("gateway.port", int()),
        ("users.u1.uid", int()),
        (
            "agents.echo.system_prompt",
            "[a-z ]{0,8}".prop_map(Value::String).boxed(),
        ),
        (
            "security.trust_daemon_uid",
            any::<bool>().prop_map(Value::Bool).boxed(),
        ),
        (
            "agents.echo.env",
            pick(vec![
                json!({"A": "1"}),
                json!({"": "x"}),
                json!({"A": "n\u{0}"}),
            ]),
        ),
        (
            "agents.echo.backend",
            pick(vec![json!("echo"), json!("command"), json!("bogus")]),
        ),
        (
            "agents.extra.backend",
            pick(vec![json!("echo"), json!("command")]),
        ),
        (
            "agents.echo.input",
            pick(vec![json!("prompt"), json!("context_json"), json!("x")]),
        ),
        (
            "agents.echo.command",
            pick(vec![json!(["cat"]), json!([]), json!([""])]),
        ),
        (
            "permission_profiles.operator.grants",
            pick(vec![
                json!({"sessions": ["read"]}),
                json!({"pairing": ["read"]}),
                json!({"sessions": ["fly"]}),
            ]),
        ),
        (
            "permission_profiles.operator.grants.sessions",
            pick(vec![json!(["read"]), json!(["fly"])]),
        ),
        (
            "permission_profiles.operator.allowed_agents",
            pick(vec![json!(["echo"]), json!(["ghost"]), json!(["*"])]),
        ),
        (
            "users.u1.permission_profiles",
            pick(vec![json!(["operator"]), json!([]), json!(["nope"])]),
        ),
    ];
    prop::strategy::Union::new(
        by_prop
            .into_iter()
            .map(|(prop, values)| values.prop_map(move |v| (prop.to_owned(), v))),
    )
}

fn running() -> impl Strategy<Value = Config> {
    prop::sample::select(RUNNING).prop_map(|t| Config::from_toml_str(t).unwrap())
}

/// Whether `prop` is `path` or an ancestor of it (a prefix ending at a `.`).
fn names(prop: &str, path: &str) -> bool {
    path == prop
        || (path.len() > prop.len()
            && path.starts_with(prop)
            && path.as_bytes()[prop.len()] == b'.')
}

/// The model: one `props::set` after another, then validation.
fn sequential(
    running: &Config,
    sets: &[(String, Value)],
) -> Result<(Config, Vec<String>), ConfigError> {
    let mut c = running.clone();
    for (i, (prop, value)) in sets.iter().enumerate() {
        let before = c.clone();
        if let Err(e) = props::set(&mut c, prop, value) {
            assert_eq!(c, before, "a failed props::set changed the config");
            return Err(ConfigError::InvalidEntry {
                index: Some(i),
                prop: prop.clone(),
                message: format!("sets[{i}]: {e}"),
            });
        }
    }
    // Admitted as the daemon admits a config: validated, its agents parsed.
    let c = match admit(c) {
        Ok(c) => c,
        Err(f) => {
            let index = sets.iter().rposition(|(p, _)| names(p, &f.path));
            let text = format!("invalid configuration: {}: {}", f.path, f.reason);
            return Err(ConfigError::Invalid {
                index,
                message: match index {
                    Some(i) => format!("sets[{i}]: {text}"),
                    None => text,
                },
                path: f.path,
            });
        }
    };
    let mut distinct: Vec<String> = Vec::new();
    for (p, _) in sets {
        if !distinct.contains(p) {
            distinct.push(p.clone());
        }
    }
    Ok((c, distinct))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::proptest_cases(), ..ProptestConfig::default() })]

    #[test]
    fn set_many_equals_sequential_sets(
        running in running(),
        sets in proptest::collection::vec(entry(), 1..8),
    ) {
        let before = running.clone();
        let got = stage_many(&running, &sets);
        prop_assert_eq!(&running, &before, "staging changed the running config");
        prop_assert_eq!(&got, &sequential(&running, &sets));
        if let Ok((candidate, _)) = &got {
            let toml = candidate.to_toml_string().unwrap();
            prop_assert_eq!(&Config::from_toml_str(&toml).unwrap(), candidate, "{}", toml);
        }
    }

    /// Batches whose entries all apply (each prop gets a value of its type,
    /// valid or not for validation), so that the success path and the
    /// validation failures, cross-field ones included, are exercised often.
    #[test]
    fn applicable_batches_equal_sequential_sets(
        running in running(),
        sets in proptest::collection::vec(typed_entry(), 1..10),
    ) {
        prop_assert_eq!(stage_many(&running, &sets), sequential(&running, &sets));
    }

    #[test]
    fn set_stages_like_a_one_entry_set_many(running in running(), (prop, value) in entry()) {
        let one = stage_one(&running, &prop, &value);
        let many = stage_many(&running, &[(prop.clone(), value.clone())]);
        match (one, many) {
            (Ok(a), Ok((b, props))) => {
                prop_assert_eq!(a, b);
                prop_assert_eq!(props, vec![prop]);
            }
            (
                Err(ConfigError::InvalidEntry { index: None, prop: p1, message: m1 }),
                Err(ConfigError::InvalidEntry { index: Some(0), prop: p2, message: m2 }),
            ) => {
                prop_assert_eq!(p1, p2);
                prop_assert_eq!(format!("sets[0]: {m1}"), m2);
            }
            (
                Err(ConfigError::Invalid { index: None, path: a, message: m1 }),
                Err(ConfigError::Invalid { index, path: b, message: m2 }),
            ) => {
                prop_assert_eq!(&a, &b);
                match index {
                    Some(0) => prop_assert_eq!(format!("sets[0]: {m1}"), m2),
                    None => prop_assert_eq!(m1, m2),
                    Some(i) => prop_assert!(false, "index {} of a one-entry batch", i),
                }
            }
            (one, many) => prop_assert!(false, "set: {:?}\nset-many: {:?}", one, many),
        }
    }
}
