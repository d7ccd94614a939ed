//! Steps 4–6 of the config pipeline (§8.16): the write-path check, staging the entries into a
//! candidate, and whole-candidate validation.
//!
//! Staging never touches the running config: it works on a clone and returns it only when the
//! whole candidate is valid, so a failing request changes nothing. `config/set` runs the same
//! code with one entry; its messages name the prop instead of an index.

use serde_json::Value;

use super::admit::admit;
use super::error::ConfigError;
use super::policy::Principal;
use super::props;
use super::schema::Config;

/// Step 4 for `config/set-many`: the lowest-indexed prop the principal may not write, if any.
pub fn check_write_paths<'a, I>(principal: &Principal, props: I) -> Result<(), ConfigError>
where
    I: IntoIterator<Item = &'a str>,
{
    match props
        .into_iter()
        .enumerate()
        .find(|(_, p)| !principal.may_write(p))
    {
        Some((i, prop)) => Err(ConfigError::Forbidden {
            index: Some(i),
            prop: prop.to_owned(),
        }),
        None => Ok(()),
    }
}

/// Step 4 for `config/set`.
pub fn check_write_path(principal: &Principal, prop: &str) -> Result<(), ConfigError> {
    if principal.may_write(prop) {
        Ok(())
    } else {
        Err(ConfigError::Forbidden {
            index: None,
            prop: prop.to_owned(),
        })
    }
}

/// Steps 5–6 for `config/set-many`: the valid candidate and the distinct props in order of first
/// appearance.
pub fn stage_many(
    running: &Config,
    sets: &[(String, Value)],
) -> Result<(Config, Vec<String>), ConfigError> {
    let candidate = stage(running, sets, true)?;
    let mut distinct: Vec<String> = Vec::new();
    for (prop, _) in sets {
        if !distinct.contains(prop) {
            distinct.push(prop.clone());
        }
    }
    Ok((candidate, distinct))
}

/// Steps 5–6 for `config/set`: the valid candidate.
pub fn stage_one(running: &Config, prop: &str, value: &Value) -> Result<Config, ConfigError> {
    stage(running, &[(prop.to_owned(), value.clone())], false)
}

fn stage(running: &Config, sets: &[(String, Value)], many: bool) -> Result<Config, ConfigError> {
    let mut candidate = running.clone();
    // Applying in order makes a later entry for the same prop override an earlier one.
    for (i, (prop, value)) in sets.iter().enumerate() {
        if let Err(e) = props::set(&mut candidate, prop, value) {
            return Err(ConfigError::InvalidEntry {
                index: many.then_some(i),
                prop: prop.clone(),
                message: if many {
                    format!("sets[{i}]: {e}")
                } else {
                    e.to_string()
                },
            });
        }
    }
    admit(candidate).map_err(|failure| {
        let index = sets
            .iter()
            .rposition(|(prop, _)| is_same_or_ancestor(prop, &failure.path));
        failure.into_error(index.filter(|_| many))
    })
}

/// Whether `prop` equals `path` or is an ancestor of it.
fn is_same_or_ancestor(prop: &str, path: &str) -> bool {
    path.strip_prefix(prop)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn sets(entries: &[(&str, Value)]) -> Vec<(String, Value)> {
        entries
            .iter()
            .map(|(p, v)| ((*p).to_owned(), v.clone()))
            .collect()
    }

    fn with_operator() -> Config {
        let text = "schema_version = 1\n[agents.echo]\nbackend = \"echo\"\n\
                    [permission_profiles.operator]\nallowed_agents = [\"echo\"]\n\
                    grants = { sessions = [\"read\"] }\n";
        Config::from_toml_str(text).unwrap()
    }

    #[test]
    fn seed_example_creates_a_user_in_one_request() {
        let running = with_operator();
        let s = sets(&[
            ("users.example.uid", json!(1001)),
            ("users.example.permission_profiles", json!(["operator"])),
        ]);
        let (candidate, props) = stage_many(&running, &s).unwrap();
        assert_eq!(
            props,
            ["users.example.uid", "users.example.permission_profiles"]
        );
        assert_eq!(candidate.users["example"].uid, Some(1001));
        assert!(running.users.is_empty());
        // The same user through config/set alone is incomplete.
        let e = stage_one(&running, "users.example.uid", &json!(1001)).unwrap_err();
        assert_eq!(
            e,
            ConfigError::Invalid {
                index: None,
                path: "users.example.permission_profiles".into(),
                message: "invalid configuration: users.example.permission_profiles: required"
                    .into(),
            }
        );
    }

    #[test]
    fn an_entry_that_cannot_be_applied_names_its_index() {
        let s = sets(&[
            ("agents.echo.chunk_chars", json!(4)),
            ("agents.echo.chunk_chars", json!("four")),
        ]);
        let e = stage_many(&with_operator(), &s).unwrap_err();
        assert_eq!(
            e,
            ConfigError::InvalidEntry {
                index: Some(1),
                prop: "agents.echo.chunk_chars".into(),
                message: "sets[1]: agents.echo.chunk_chars: expected an integer in 0..=4294967295"
                    .into(),
            }
        );
        let e = stage_one(&with_operator(), "schema_version", &json!(2)).unwrap_err();
        assert_eq!(e.to_string(), "schema_version: read-only prop");
        assert!(matches!(e, ConfigError::InvalidEntry { index: None, .. }));
    }

    #[test]
    fn a_later_entry_for_the_same_prop_wins() {
        let s = sets(&[
            ("agents.echo.chunk_chars", json!(0)),
            ("daemon.ask_timeout_secs", json!(5)),
            ("agents.echo.chunk_chars", json!(7)),
        ]);
        let (c, props) = stage_many(&with_operator(), &s).unwrap();
        assert_eq!(c.agents["echo"].chunk_chars, 7);
        assert_eq!(
            props,
            ["agents.echo.chunk_chars", "daemon.ask_timeout_secs"]
        );
    }

    #[test]
    fn validation_reports_the_smallest_path_and_the_last_matching_entry() {
        let s = sets(&[
            ("daemon.ask_timeout_secs", json!(0)),
            ("agents.echo.chunk_chars", json!(0)),
            ("agents.echo.timeout_secs", json!(0)),
        ]);
        let e = stage_many(&with_operator(), &s).unwrap_err();
        let message = "sets[1]: invalid configuration: agents.echo.chunk_chars: must be at least 1";
        assert_eq!(
            e,
            ConfigError::Invalid {
                index: Some(1),
                path: "agents.echo.chunk_chars".into(),
                message: message.into(),
            }
        );
        // An ancestor prop (a grants table) identifies the entry; the last one wins.
        let s = sets(&[
            (
                "permission_profiles.operator.grants",
                json!({"pairing": ["read"]}),
            ),
            ("daemon.ask_timeout_secs", json!(3)),
            (
                "permission_profiles.operator.grants",
                json!({"pairing": ["read"]}),
            ),
        ]);
        match stage_many(&with_operator(), &s).unwrap_err() {
            ConfigError::Invalid { index, path, .. } => {
                assert_eq!(index, Some(2));
                assert_eq!(path, "permission_profiles.operator.grants.pairing");
            }
            other => panic!("{other:?}"),
        }
        // A cross-field failure on a prop not in the request identifies no entry.
        let s = sets(&[("agents.echo.context_max_messages", json!(5))]);
        match stage_many(&with_operator(), &s).unwrap_err() {
            ConfigError::Invalid { index, message, .. } => {
                assert_eq!(index, None);
                assert!(message.starts_with("invalid configuration: agents.echo.compact_keep"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn prefix_that_is_not_an_ancestor_does_not_match() {
        assert!(is_same_or_ancestor("agents.echo.env", "agents.echo.env"));
        assert!(is_same_or_ancestor("a.b", "a.b.c"));
        assert!(!is_same_or_ancestor("agents.e", "agents.echo.env"));
    }

    #[test]
    fn write_paths_report_the_lowest_forbidden_index() {
        let p = Principal::writer(&["agents.echo.*"]);
        let props = [
            "agents.echo.chunk_chars",
            "security.trust_daemon_uid",
            "daemon.x",
        ];
        let e = check_write_paths(&p, props).unwrap_err();
        assert_eq!(
            e,
            ConfigError::Forbidden {
                index: Some(1),
                prop: "security.trust_daemon_uid".into()
            }
        );
        assert!(check_write_paths(&p, ["agents.echo.chunk_chars"]).is_ok());
        assert!(check_write_path(&p, "agents.echo.backend").is_err());
        assert!(check_write_path(&Principal::shared_operator(), "users.a.uid").is_ok());
    }
}
