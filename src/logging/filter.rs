//! `ZEROCLAW_LOG`: the log filter a person sets, checked strictly. A value
//! that is not a filter is refused whole, said in the log at startup (the
//! value sanitized, and why), and the default `info` applies: a typo must
//! not turn logging off. `EnvFilter` reads a bare word as a target
//! (`infoo` = "everything of target infoo", so nothing of ours), hence the
//! rule here: a directive without `=` must be a level; `TARGET=LEVEL` names
//! a target.

use tracing_subscriber::EnvFilter;

use crate::shown::Shown;

/// The variable.
pub const VAR: &str = "ZEROCLAW_LOG";
/// The filter when the variable is unset, empty or refused.
pub const DEFAULT: &str = "info";
const LEVELS: &[&str] = &["off", "error", "warn", "info", "debug", "trace"];

/// A value refused: what it was (sanitized, one line) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub value: String,
    pub why: String,
}

/// The filter `ZEROCLAW_LOG` names, or the default and why the value was refused.
pub fn from_env() -> (EnvFilter, Option<Refused>) {
    match std::env::var_os(VAR) {
        None => (EnvFilter::new(DEFAULT), None),
        Some(v) => match v.to_str() {
            Some(s) => parse(s),
            None => (
                EnvFilter::new(DEFAULT),
                Some(Refused {
                    value: Shown::line(&v.to_string_lossy()).as_str().to_owned(),
                    why: "not UTF-8".to_owned(),
                }),
            ),
        },
    }
}

/// `value` as a filter (empty: the default), or the default and why not.
pub fn parse(value: &str) -> (EnvFilter, Option<Refused>) {
    if value.trim().is_empty() {
        return (EnvFilter::new(DEFAULT), None);
    }
    let refused = |why: String| Refused {
        value: Shown::line(value).as_str().to_owned(),
        why,
    };
    // Spaces around a directive are forgiven (`EnvFilter` would refuse them).
    let directives: Vec<&str> = value
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .collect();
    for &d in &directives {
        let bare = !d.contains('=') && !d.contains('[');
        // `EnvFilter` also takes 0-5 for a level.
        let level = LEVELS.iter().any(|l| l.eq_ignore_ascii_case(d))
            || matches!(d, "0" | "1" | "2" | "3" | "4" | "5");
        if bare && !level {
            let why = format!(
                "`{}` is not a level ({}); a target needs TARGET=LEVEL",
                Shown::line(d),
                LEVELS.join(", ")
            );
            return (EnvFilter::new(DEFAULT), Some(refused(why)));
        }
    }
    match EnvFilter::builder().parse(directives.join(",")) {
        Ok(f) => (f, None),
        Err(e) => (
            EnvFilter::new(DEFAULT),
            Some(refused(Shown::line(&e.to_string()).as_str().to_owned())),
        ),
    }
}

/// Logs a refused value (once the subscriber is installed, so it reaches
/// stderr in the daemon's log format and the capture `logs/*` reads).
pub fn report(refused: Option<&Refused>) {
    if let Some(r) = refused {
        tracing::warn!(
            event = "log_filter_invalid",
            value = %r.value,
            error = %r.why,
            "{VAR} is not a valid filter; using {DEFAULT}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(v: &str) -> Option<String> {
        parse(v).1.map(|r| r.why)
    }

    #[test]
    fn filters_are_checked() {
        for ok in [
            "",
            "info",
            "DEBUG",
            "warn,zeroclaw=debug",
            "zeroclaw::daemon=trace",
            " info , tower=warn",
        ] {
            assert_eq!(refused(ok), None, "{ok}");
        }
        assert!(refused("infoo").is_some_and(|w| w.contains("`infoo` is not a level")));
        assert!(refused("debug,zeroclaw=loud").is_some());
        assert_eq!(
            parse("\u{1b}[2J").1.map(|r| r.value),
            Some("␛[2J".to_owned())
        );
    }
}
