//! `ZEROCLAW_LOG` is checked at startup (issue 25, item 5): a value that is
//! not a filter is reported on the daemon's stderr (sanitized, with why)
//! and the default `info` applies. `infoo` used to be read as a target and
//! turned every log line off, silently.

mod common;

use std::time::Duration;

use common::Daemon;

/// Starts a daemon with `ZEROCLAW_LOG=value`; its `log_filter_invalid`
/// event, and whether `listening` (an info event) was logged.
fn start_with(value: &str) -> (Daemon, serde_json::Value) {
    let d = Daemon::builder().env("ZEROCLAW_LOG", value).spawn();
    let refused = d
        .log
        .wait_event(0, "log_filter_invalid", Duration::from_secs(5))
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no log_filter_invalid for {value:?}:\n{}", d.log.text()));
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
        assert!(
            d.log
                .wait_event(0, "listening", Duration::from_secs(5))
                .is_some(),
            "{}",
            d.log.text()
        );
        let mut c = d.client();
        c.status();
        assert!(
            d.log
                .wait_event(0, "connection_accepted", Duration::from_secs(5))
                .is_some(),
            "{}",
            d.log.text()
        );
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
    d.log
        .wait_event(0, "listening", Duration::from_secs(5))
        .expect("listening, at info for zeroclaw::daemon");
    assert!(d.log.events_named("log_filter_invalid").is_empty());
}
