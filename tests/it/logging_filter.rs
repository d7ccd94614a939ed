//! `ZEROCLAW_LOG` is checked at startup: a value that is
//! not a filter is reported on the daemon's stderr (sanitized, with why)
//! and the default `info` applies. `infoo` used to be read as a target and
//! turned every log line off, silently.

use crate::common;

use std::time::Duration;

use common::Daemon;

/// The first event `name` in `d`'s log, waited for (bounded).
fn logged(d: &Daemon, name: &str) -> serde_json::Value {
    d.log
        .wait_event(0, name, Duration::from_secs(5))
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no {name} event:\n{}", d.log.text()))
}

/// Starts a daemon with `ZEROCLAW_LOG=value`; its `log_filter_invalid` event.
fn start_with(value: &str) -> (Daemon, serde_json::Value) {
    let d = Daemon::builder().env("ZEROCLAW_LOG", value).spawn();
    let refused = logged(&d, "log_filter_invalid");
    (d, refused)
}

#[test]
fn an_invalid_filter_is_reported_and_info_is_used() {
    for (value, shown, why) in [
        ("infoo", "infoo", "`infoo` is not a level (off, error, warn, info, debug, trace); a target needs TARGET=LEVEL"),
        ("debug,zeroclaw=loud", "debug,zeroclaw=loud", "error parsing level filter"),
        ("\u{1b}]0;owned\u{7}", "␛]0;owned␇", "is not a level"),
    ] {
        let (d, refused) = start_with(value);
        assert_eq!(refused["level"], "WARN", "{refused}");
        assert_eq!(refused["value"], shown, "{refused}");
        let error = refused["error"].as_str().unwrap_or_default();
        assert!(error.contains(why), "{value:?}: {error}");
        assert_eq!(
            refused["message"],
            "ZEROCLAW_LOG is not a valid filter; using info"
        );
        // The default applies: info events are logged, debug ones are not.
        logged(&d, "listening");
        let mut c = d.client();
        c.status();
        logged(&d, "connection_accepted");
        assert!(
            d.log.events().iter().all(|e| e["level"] != "DEBUG"),
            "{}",
            d.log.text()
        );
    }
}

#[test]
fn a_valid_filter_is_taken_without_a_word() {
    let d = Daemon::builder()
        .env("ZEROCLAW_LOG", "warn,zeroclaw::daemon=info")
        .spawn();
    logged(&d, "listening");
    assert!(d.log.events_named("log_filter_invalid").is_empty());
}
