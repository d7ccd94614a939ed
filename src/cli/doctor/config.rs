//! `config.toml` as the daemon would read it, every fault at once: a syntax
//! error is one (nothing after it can be read); otherwise every unknown key,
//! wrong type and failed validation check, each naming its path, one line
//! each. The daemon itself (startup, `config/set`) still names only the
//! first by path order; doctor lists them all so one run shows all there is
//! to fix (docs/operations.md, "doctor").

use std::collections::BTreeSet;
use std::path::Path;

use super::Check;
use crate::config::admit_all;
use crate::config::shape::check_toml_shape_all;
use crate::config::store::read_config;
use crate::config::validate::Failure;
use crate::config::{toml_error, Config};

const NAME: &str = "config.toml";
const FIX: &str = "correct it (the daemon will not start with it)";

/// The checks of the file, and the config when it is valid.
pub fn read(path: &Path) -> (Vec<Check>, Option<Config>) {
    // Read as the daemon reads it: a FIFO, a device or a huge file is a fault to report, not
    // something to wait on or to fill memory with.
    let read = read_config(path).and_then(|bytes| {
        String::from_utf8(bytes)
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8").into())
    });
    let text = match read {
        Ok(t) => t,
        Err(e) if e.is_not_found() => {
            let detail = format!(
                "{} does not exist yet (the daemon writes a default one)",
                path.display()
            );
            return (
                vec![Check::pass(NAME, detail)],
                Config::from_toml_str(Config::default_file_text()).ok(),
            );
        }
        Err(e) => {
            let detail = format!("cannot read {}: {e}", path.display());
            return (
                vec![Check::fail(NAME, detail, "make it readable by this user")],
                None,
            );
        }
    };
    match faults(&text) {
        Ok(c) => {
            let detail = format!("{} is valid ({} agents)", path.display(), c.agents.len());
            (vec![Check::pass(NAME, detail)], Some(c))
        }
        Err(faults) => {
            let checks = faults
                .into_iter()
                .map(|f| Check::fail(NAME, format!("{} is invalid: {f}", path.display()), FIX))
                .collect();
            (checks, None)
        }
    }
}

/// The valid config, or every fault found (never empty).
fn faults(text: &str) -> Result<Config, Vec<String>> {
    // toml's own message quotes the line, which may hold a secret: place and key instead.
    let mut table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| vec![toml_error(text, &e)])?;
    let shape = check_toml_shape_all(&table);
    // What remains without the bad keys is still checked for the rest.
    let bad: BTreeSet<&str> = shape.iter().map(|f| f.path.as_str()).collect();
    prune(&mut table, "", &bad);
    let mut out: Vec<String> = shape.iter().map(shown).collect();
    match toml::Value::Table(table).try_into::<Config>() {
        Ok(config) => match admit_all(config) {
            Ok(config) if out.is_empty() => return Ok(config),
            Ok(_) => {}
            // A required key removed above is not reported twice.
            Err(rest) => out.extend(
                rest.iter()
                    .filter(|f| !bad.contains(f.path.as_str()))
                    .map(shown),
            ),
        },
        Err(e) => out.push(format!("invalid configuration: {e}")),
    }
    Err(out)
}

/// The daemon's wording: `invalid configuration: PATH: REASON`.
fn shown(f: &Failure) -> String {
    format!("invalid configuration: {}: {}", f.path, f.reason)
}

/// Removes every key whose dotted path is in `bad`.
fn prune(table: &mut toml::Table, prefix: &str, bad: &BTreeSet<&str>) {
    table.retain(|key, _| !bad.contains(join(prefix, key).as_str()));
    for (key, value) in table.iter_mut() {
        if let Some(t) = value.as_table_mut() {
            prune(t, &join(prefix, key), bad);
        }
    }
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_owned()
    } else {
        format!("{prefix}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fault_is_named_by_path() {
        let text = "schema_version = 2\nbogus = 1\n[daemon]\napproval_timeout_secs = \"x\"\nask_timeout_secs = 0\n[agents.a]\nbackend = \"nope\"\n";
        let all = faults(text).err().unwrap_or_default();
        assert_eq!(
            all,
            [
                "invalid configuration: bogus: unknown key",
                "invalid configuration: daemon.approval_timeout_secs: expected an integer in 0..=4294967295",
                "invalid configuration: agents.a.backend: unknown backend \"nope\" (expected \"echo\", \"command\", \"acp\" or \"openai\")",
                "invalid configuration: daemon.ask_timeout_secs: must be at least 1",
                "invalid configuration: schema_version: unsupported schema version 2 (expected 1)",
            ]
        );
        assert_eq!(faults("a = [").err().map(|v| v.len()), Some(1));
        assert!(faults(Config::default_file_text()).is_ok());
    }
}
