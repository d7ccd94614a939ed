//! Arbitrary bytes as `config.toml`, through the daemon's own ways in
//! (src/config/): the startup load (`ConfigStore::open`: UTF-8, not empty,
//! then `Config::from_toml_str`) and the reload and `config edit` check
//! (`Config::check_toml_text`, every error listed).
//!
//! Checked for every input: nothing panics; the two agree (both accept,
//! with the same config, or both refuse); an accepted config is valid
//! (`validate`) and survives its own round trip (`to_toml_string`, then
//! loaded again to the same config); and a refusal after the TOML parsed
//! does not quote a secret of the file (a `gateway.paired_tokens` entry or
//! an agent `env` value of 16+ bytes) in any error message, since refusals
//! are logged and answered to clients. A TOML syntax error quotes the line
//! by design (the `toml` crate's message), so it is not checked.

#![no_main]

use libfuzzer_sys::fuzz_target;
use zeroclaw::config::{validate, Config};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if text.trim().is_empty() {
        return;
    }
    let startup = Config::from_toml_str(text);
    let reload = Config::check_toml_text(text);
    match (&startup, &reload) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b, "the two loads differ");
            validate(a).expect("an accepted config validates");
            let out = a.to_toml_string().expect("an accepted config serializes");
            let again = Config::from_toml_str(&out)
                .unwrap_or_else(|e| panic!("own output refused: {e}\n{out}"));
            assert_eq!(&again, a, "round trip changed the config:\n{out}");
        }
        (Err(_), Err(errors)) => {
            assert!(!errors.is_empty());
            check_no_secret(text, &startup.unwrap_err().to_string(), errors);
        }
        _ => panic!(
            "startup and reload disagree: {:?} vs {:?}",
            startup.as_ref().err().map(ToString::to_string),
            reload.as_ref().err()
        ),
    }
});

/// The secrets of the file when it is TOML at all: paired tokens and
/// agent env values, the strings of 16 bytes or more.
fn secrets(text: &str) -> Vec<String> {
    let Ok(table) = toml::from_str::<toml::Table>(text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut push = |v: &toml::Value| {
        if let Some(s) = v.as_str() {
            if s.len() >= 16 {
                out.push(s.to_owned());
            }
        }
    };
    if let Some(toml::Value::Array(tokens)) =
        table.get("gateway").and_then(|g| g.get("paired_tokens"))
    {
        tokens.iter().for_each(&mut push);
    }
    if let Some(toml::Value::Table(agents)) = table.get("agents") {
        for agent in agents.values() {
            if let Some(toml::Value::Table(env)) = agent.get("env") {
                env.values().for_each(&mut push);
            }
        }
    }
    out
}

fn check_no_secret(text: &str, startup: &str, errors: &[String]) {
    for s in secrets(text) {
        // A secret that is also a key name or the text of a key path is
        // not something a message could avoid.
        if s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            continue;
        }
        // Written more than once, it may also be a key, which messages name.
        if text.matches(s.as_str()).count() > 1 {
            continue;
        }
        let quoted = startup.contains(&s) || errors.iter().any(|e| e.contains(&s));
        // A secret that the message holds anyway, whatever the secret is
        // (the fuzzer spells the message's own words), is not quoted:
        // check by replacing it with other bytes of the same length.
        if quoted && !holds_anyway(text, &s) {
            panic!("an error quotes the secret {s:?}: {startup} / {errors:?}");
        }
    }
}

fn holds_anyway(text: &str, secret: &str) -> bool {
    let other = text.replace(secret, &"Q".repeat(secret.len()));
    let startup = Config::from_toml_str(&other).err().map(|e| e.to_string());
    let reload = Config::check_toml_text(&other).err().unwrap_or_default();
    startup.is_some_and(|e| e.contains(secret)) || reload.iter().any(|e| e.contains(secret))
}
