//! When a busy answer (429, 5xx) is tried again: after the doubling
//! backoff, or after the server's `Retry-After` in its place (the server
//! knows when it will have room), never past [`MAX_RETRY_DELAY`].

use std::time::Duration;

use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::StatusCode;

/// Bound on one retry's delay, whatever the backoff doubled to or the
/// server asked for.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);

/// Whether an answer with `status` is worth trying again.
pub fn retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

/// The delay before the next try: `Ok` the server's `Retry-After` or else
/// `backoff`, bounded; `Err(asked)` when the server asks for longer than
/// the bound (waiting less would only be refused again, so the turn fails
/// at once and says why).
pub fn delay(headers: &HeaderMap, backoff: Duration) -> Result<Duration, Duration> {
    match retry_after(headers) {
        Some(asked) if asked > MAX_RETRY_DELAY => Err(asked),
        Some(asked) => Ok(asked),
        None => Ok(backoff.min(MAX_RETRY_DELAY)),
    }
}

/// `Retry-After` in its delay-seconds form (RFC 9110 §10.2.3). The
/// HTTP-date form is not read (model servers send seconds; a date needs a
/// clock agreed with the server), nor anything malformed: the backoff applies.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Digits too many for a u64 are still a (very long) delay.
    Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, value.parse().unwrap());
        h
    }

    const BACKOFF: Duration = Duration::from_millis(500);

    #[test]
    fn seconds_replace_the_backoff_up_to_the_bound() {
        assert_eq!(delay(&with("2"), BACKOFF), Ok(Duration::from_secs(2)));
        assert_eq!(delay(&with(" 0 "), BACKOFF), Ok(Duration::ZERO));
        assert_eq!(delay(&with("30"), BACKOFF), Ok(MAX_RETRY_DELAY));
        assert_eq!(delay(&with("31"), BACKOFF), Err(Duration::from_secs(31)));
        assert_eq!(
            delay(&with("99999999999999999999999"), BACKOFF),
            Err(Duration::from_secs(u64::MAX))
        );
    }

    #[test]
    fn dates_and_malformed_values_leave_the_backoff() {
        for v in ["Wed, 21 Oct 2015 07:28:00 GMT", "1.5", "-1", "", "soon"] {
            assert_eq!(delay(&with(v), BACKOFF), Ok(BACKOFF), "{v:?}");
        }
        assert_eq!(delay(&HeaderMap::new(), BACKOFF), Ok(BACKOFF));
        assert_eq!(
            delay(&HeaderMap::new(), Duration::from_secs(3600)),
            Ok(MAX_RETRY_DELAY)
        );
    }
}
