//! The prop syntax (§8.15, §11.2): which dotted paths exist in the configuration, which of them
//! are props, and what type each prop holds.
//!
//! This is the single description of the config's shape used by everything that handles paths:
//! reading and writing props, the key/type check of a TOML file at startup, and the validity of
//! `config_write_paths` selectors. A unit test keeps it in step with the serde structs.

/// The value type of a leaf, which decides the value rules of §8.15.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// String (optional strings too).
    Str,
    /// Unsigned integer with this inclusive maximum.
    Int(u64),
    /// A finite number (integer or float), e.g. `agents.<alias>.temperature`.
    Num,
    /// Boolean.
    Bool,
    /// Array of strings.
    StrList,
    /// Table of string → string (`agents.<alias>.env`).
    StrTable,
    /// Table of resource → array of verbs (`permission_profiles.<alias>.grants`).
    Grants,
}

/// A node of the configuration tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Node {
    /// The top-level table.
    Root,
    /// `daemon`, `security`, `gateway`: a fixed set of fields.
    Section(&'static [Field]),
    /// `agents`, `permission_profiles`, `users`: named entries sharing these fields.
    Map(&'static [Field]),
    /// One entry of a map.
    Entry(&'static [Field]),
    /// A value: a prop (grants tables have props below them too).
    Leaf {
        /// Its type.
        kind: Kind,
        /// Not writable through `config/set(-many)`.
        read_only: bool,
    },
}

/// A field name and its type.
pub(crate) type Field = (&'static str, Kind);

const U32: Kind = Kind::Int(u32::MAX as u64);

pub(crate) const DAEMON: &[Field] = &[
    ("advertised_server_version", Kind::Str),
    ("approval_timeout_secs", U32),
    ("ask_timeout_secs", U32),
    ("memory_budget_mib", U32),
    ("session_idle_secs", U32),
    ("upload_idle_secs", U32),
];
pub(crate) const SECURITY: &[Field] = &[
    ("socket_group", Kind::Str),
    ("trust_daemon_uid", Kind::Bool),
];
pub(crate) const GATEWAY: &[Field] = &[
    ("allowed_hosts", Kind::StrList),
    ("allowed_origins", Kind::StrList),
    ("enabled", Kind::Bool),
    ("host", Kind::Str),
    ("paired_tokens", Kind::StrList),
    ("port", Kind::Int(u16::MAX as u64)),
    ("require_pairing", Kind::Bool),
    ("tls_cert", Kind::Str),
    ("tls_key", Kind::Str),
];
pub(crate) const AGENT: &[Field] = &[
    ("api_key_env", Kind::Str),
    ("api_key_file", Kind::Str),
    ("approval", Kind::Str),
    ("backend", Kind::Str),
    ("base_url", Kind::Str),
    ("chunk_chars", U32),
    ("chunk_delay_ms", U32),
    ("command", Kind::StrList),
    ("compact_keep_messages", U32),
    ("context_max_messages", U32),
    ("env", Kind::StrTable),
    ("fs", Kind::Str),
    ("input", Kind::Str),
    ("load_session", Kind::Str),
    ("max_retries", U32),
    ("max_tokens", U32),
    ("max_tool_rounds", U32),
    ("model", Kind::Str),
    ("permission_default", Kind::Str),
    ("request_timeout_secs", U32),
    ("retry_backoff_ms", U32),
    ("system_prompt", Kind::Str),
    ("temperature", Kind::Num),
    ("terminal", Kind::Bool),
    ("timeout_secs", U32),
    ("tools", Kind::StrList),
    ("workspace_dir", Kind::Str),
];
pub(crate) const PROFILE: &[Field] = &[
    ("admin", Kind::Bool),
    ("allowed_agents", Kind::StrList),
    ("config_write_paths", Kind::StrList),
    ("grants", Kind::Grants),
];
pub(crate) const USER: &[Field] = &[
    ("permission_profiles", Kind::StrList),
    ("principal_id", Kind::Str),
    ("uid", U32),
];

/// The sections (fixed fields) and maps (named entries) of the top-level table.
pub(crate) const SECTIONS: &[(&str, &[Field])] = &[
    ("daemon", DAEMON),
    ("gateway", GATEWAY),
    ("security", SECURITY),
];
/// The maps of the top-level table and the fields of their entries.
pub(crate) const MAPS: &[(&str, &[Field])] = &[
    ("agents", AGENT),
    ("permission_profiles", PROFILE),
    ("users", USER),
];

fn lookup(table: &[(&'static str, &'static [Field])], name: &str) -> Option<&'static [Field]> {
    table.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

fn field(fields: &'static [Field], name: &str) -> Option<Node> {
    let (_, kind) = fields.iter().find(|(n, _)| *n == name)?;
    Some(Node::Leaf {
        kind: *kind,
        read_only: false,
    })
}

/// The node at `segments`, without checking the name rule of map keys (callers that parse props
/// check it; the file check leaves bad names to validation, which reports them with a path).
pub(crate) fn node(segments: &[&str]) -> Option<Node> {
    match segments {
        [] => Some(Node::Root),
        ["schema_version"] => Some(Node::Leaf {
            kind: U32,
            read_only: true,
        }),
        ["gateway", "paired_tokens"] => Some(Node::Leaf {
            kind: Kind::StrList,
            read_only: true,
        }),
        ["default_agent"] => Some(Node::Leaf {
            kind: Kind::Str,
            read_only: false,
        }),
        [s] => lookup(SECTIONS, s)
            .map(Node::Section)
            .or_else(|| lookup(MAPS, s).map(Node::Map)),
        [s, f] => match lookup(SECTIONS, s) {
            Some(fields) => field(fields, f),
            None => lookup(MAPS, s).map(Node::Entry),
        },
        [m, _, f] => field(lookup(MAPS, m)?, f),
        ["permission_profiles", _, "grants", _] => Some(Node::Leaf {
            kind: Kind::StrList,
            read_only: false,
        }),
        _ => None,
    }
}

/// One prop of a running config, for listings (`config/list`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropInfo {
    /// `agents.echo.chunk_chars`.
    pub path: String,
    /// The top-level section or map it belongs to.
    pub section: &'static str,
    /// zerocode's kind names: `string`, `integer`, `bool`, `string_array`, `object`.
    pub kind: &'static str,
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Str => "string",
        Kind::Int(_) => "integer",
        Kind::Num => "number",
        Kind::Bool => "bool",
        Kind::StrList => "string_array",
        Kind::StrTable | Kind::Grants => "object",
    }
}

/// Every prop of a config whose map keys are `keys(map)`, in path order.
pub fn prop_paths(keys: impl Fn(&str) -> Vec<String>) -> Vec<PropInfo> {
    let mut out = vec![PropInfo {
        path: "default_agent".to_owned(),
        section: "general",
        kind: kind_name(Kind::Str),
    }];
    for (section, fields) in SECTIONS {
        for (name, kind) in *fields {
            out.push(PropInfo {
                path: format!("{section}.{name}"),
                section,
                kind: kind_name(*kind),
            });
        }
    }
    for (map, fields) in MAPS {
        for key in keys(map) {
            for (name, kind) in *fields {
                out.push(PropInfo {
                    path: format!("{map}.{key}.{name}"),
                    section: map,
                    kind: kind_name(*kind),
                });
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// An environment variable a program can be given: a non-empty name without `=` or NUL, a
/// value without NUL (an agent's `env`, an ACP `terminal/create`'s `env`).
pub fn is_env_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['=', '\0'])
}

/// See [`is_env_name`].
pub fn is_env_value(value: &str) -> bool {
    !value.contains('\0')
}

/// The daemon's variables every child process gets when the daemon has them
/// (with every `LC_*`; docs/agents.md "Environment"): what finds programs
/// (`npx`), the user's home and its config/cache directories, the locale,
/// the terminal type, the time zone. Nothing else of the daemon's
/// environment reaches an agent, a terminal or a tool.
pub const CHILD_BASE_VARS: &[&str] = &[
    "HOME",
    "LANG",
    "LANGUAGE",
    "LOGNAME",
    "PATH",
    "SHELL",
    "TERM",
    "TMPDIR",
    "TZ",
    "USER",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR",
    "XDG_STATE_HOME",
];

/// Whether every child gets the daemon's `name` ([`CHILD_BASE_VARS`], `LC_*`).
pub fn is_child_base_var(name: &str) -> bool {
    CHILD_BASE_VARS.contains(&name) || name.starts_with("LC_")
}

/// Agent aliases, user names, profile names and principal ids: `[A-Za-z0-9][A-Za-z0-9_-]{0,63}`.
pub fn is_valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_alphanumeric()
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-')
}

/// Splits a path and resolves it to a node, checking that map keys (and grants resources)
/// follow the name rule. `None` when the path does not exist in the config's shape.
pub(crate) fn resolve(path: &str) -> Option<(Vec<&str>, Node)> {
    let segments: Vec<&str> = path.split('.').collect();
    let named = |i: usize| segments.get(i).is_none_or(|s| is_valid_name(s));
    let keys_ok = match segments.first() {
        Some(first) if lookup(MAPS, first).is_some() => {
            named(1) && (segments.get(2) != Some(&"grants") || named(3))
        }
        _ => true,
    };
    if !keys_ok || segments.iter().any(|s| s.is_empty()) {
        return None;
    }
    let node = node(&segments)?;
    Some((segments, node))
}

/// A parsed prop: a leaf field, a `grants` table or one `grants.<resource>` list (§8.15).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Prop<'a> {
    pub segments: Vec<&'a str>,
    pub kind: Kind,
    pub read_only: bool,
}

/// Parses a prop; `None` for anything else, including maps, map entries and sections.
pub(crate) fn parse_prop(prop: &str) -> Option<Prop<'_>> {
    match resolve(prop)? {
        (segments, Node::Leaf { kind, read_only }) => Some(Prop {
            segments,
            kind,
            read_only,
        }),
        _ => None,
    }
}

/// Whether `selector` is a valid `config_write_paths` entry: `"*"`, a prop, or a prop (or a
/// section, map or map entry, which have props below them) followed by `.*`.
pub(crate) fn is_valid_selector(selector: &str) -> bool {
    if selector == "*" {
        return true;
    }
    match selector.strip_suffix(".*") {
        Some(prefix) => matches!(resolve(prefix), Some((_, node)) if node != Node::Root),
        None => parse_prop(selector).is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn props_are_leaves_grants_tables_and_grant_lists() {
        for p in [
            "schema_version",
            "daemon.session_idle_secs",
            "security.socket_group",
            "gateway.paired_tokens",
            "agents.echo.chunk_chars",
            "agents.echo.env",
            "users.example.permission_profiles",
            "permission_profiles.operator.grants",
            "permission_profiles.operator.grants.sessions",
            "permission_profiles.operator.grants.pairing",
        ] {
            assert!(parse_prop(p).is_some(), "{p}");
        }
        for p in [
            "",
            "agents",
            "agents.echo",
            "daemon",
            "daemon.nope",
            "agents.echo.env.HOME",
            "agents.echo.chunk_chars.x",
            "agents..chunk_chars",
            "agents.-bad.chunk_chars",
            "agents.bad!.chunk_chars",
            "permission_profiles.op.grants.a!",
            "users.x.grants",
            "schema_version.x",
            "nope",
        ] {
            assert!(parse_prop(p).is_none(), "{p}");
        }
        assert!(parse_prop("schema_version").unwrap().read_only);
        assert!(parse_prop("gateway.paired_tokens").unwrap().read_only);
        assert!(!parse_prop("gateway.port").unwrap().read_only);
    }

    #[test]
    fn name_rule() {
        assert!(is_valid_name("a"));
        assert!(is_valid_name("Echo_2-x"));
        assert!(is_valid_name(&"a".repeat(64)));
        assert!(!is_valid_name(&"a".repeat(65)));
        assert!(!is_valid_name(""));
        assert!(!is_valid_name("_a"));
        assert!(!is_valid_name("a.b"));
        assert!(!is_valid_name("a b"));
        assert!(!is_valid_name("é"));
    }

    #[test]
    fn selectors() {
        for s in [
            "*",
            "agents.*",
            "agents.echo.*",
            "agents.echo.chunk_chars",
            "agents.echo.chunk_chars.*",
            "daemon.*",
            "permission_profiles.op.grants.*",
            "permission_profiles.op.grants.files",
        ] {
            assert!(is_valid_selector(s), "{s}");
        }
        for s in [
            "",
            "*.*",
            "agents",
            "agents.echo",
            "agents.*.chunk_chars",
            "nope.*",
            "daemon.nope",
            "agents.echo.*.*",
        ] {
            assert!(!is_valid_selector(s), "{s}");
        }
    }
}
