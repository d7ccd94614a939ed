//! The shape of a raw `config.toml` table: every key known (`paths::node`)
//! and every value of the type its prop declares. Checked before the typed
//! [`Config`](super::schema::Config) exists, which cannot hold a bad key.

use super::paths::{self, Kind, Node};
use super::validate::{Failure, Report};

/// Checks that every key of a parsed `config.toml` is known and has the right type.
pub fn check_toml_shape(root: &toml::Table) -> Result<(), Failure> {
    shape_report(root).finish()
}

/// Every failure of [`check_toml_shape`], by path.
pub fn check_toml_shape_all(root: &toml::Table) -> Vec<Failure> {
    shape_report(root).all()
}

fn shape_report(root: &toml::Table) -> Report {
    let mut r = Report::default();
    walk(&mut r, &mut Vec::new(), root);
    r
}

fn walk<'a>(r: &mut Report, segments: &mut Vec<&'a str>, table: &'a toml::Table) {
    for (key, value) in table {
        segments.push(key);
        let path = segments.join(".");
        match paths::node(segments) {
            None | Some(Node::Root) => r.fail(path, "unknown key"),
            Some(Node::Section(_) | Node::Map(_) | Node::Entry(_))
            | Some(Node::Leaf {
                kind: Kind::Grants, ..
            }) => match value.as_table() {
                Some(t) => walk(r, segments, t),
                None => r.fail(path, "expected a table"),
            },
            Some(Node::Leaf { kind, .. }) => {
                if let Err(expected) = check_value(kind, value) {
                    r.fail(path, format!("expected {expected}"));
                }
            }
        }
        segments.pop();
    }
}

fn check_value(kind: Kind, value: &toml::Value) -> Result<(), String> {
    let ok = match kind {
        Kind::Str => value.is_str(),
        Kind::Int(max) => value
            .as_integer()
            .is_some_and(|i| u64::try_from(i).is_ok_and(|n| n <= max)),
        Kind::Num => value.as_float().is_some_and(f64::is_finite) || value.is_integer(),
        Kind::Bool => value.is_bool(),
        Kind::StrList => value
            .as_array()
            .is_some_and(|items| items.iter().all(toml::Value::is_str)),
        Kind::StrTable | Kind::Grants => value
            .as_table()
            .is_some_and(|t| t.values().all(toml::Value::is_str)),
    };
    if ok {
        return Ok(());
    }
    Err(match kind {
        Kind::Str => "a string".into(),
        Kind::Int(max) => format!("an integer in 0..={max}"),
        Kind::Num => "a number".into(),
        Kind::Bool => "a boolean".into(),
        Kind::StrList => "an array of strings".into(),
        Kind::StrTable | Kind::Grants => "a table of strings".into(),
    })
}
