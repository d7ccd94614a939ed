//! Pairing over HTTP (§6.7, §12): `POST /pair` with
//! `X-Pairing-Code: <12 digits>` redeems the one-time code the daemon logged
//! at startup, or `pairing/code` issued (`Daemon::pairing_code`), for a new token.
//!
//! - A code is open if, at startup, `gateway.require_pairing` was true and no
//!   token was paired, or once an admin called `pairing/code`. It is
//!   single-use, expires, is burned by a few wrong guesses from all sources
//!   together (`state::pairing_code`), and is redeemable only while
//!   `require_pairing` is true.
//! - The new token's digest is committed exactly as `pairing/create`
//!   commits one: under the config write lock, through `LiveConfig::commit`
//!   (which persists `config.toml` and bumps the policy generation). A
//!   failed commit leaves the code unused.
//! - Every refused attempt (no code left, header missing or malformed,
//!   wrong code) also counts against the client's source (`source::Source`:
//!   all of loopback is one, IPv6 by /64); the 5th within the window locks
//!   that source out for 300 s (HTTP 429). A success clears its count. A
//!   count not renewed for the lockout period is forgotten.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::source::Source;
use crate::config::{token_digest, token_from_bytes, Config, Policy};
use crate::error::RpcError;
use crate::live_config::random_bytes;
use crate::state::{well_formed, Daemon, GuessVerdict};

/// The request header that carries the code.
pub const PAIRING_CODE_HEADER: &str = "X-Pairing-Code";

/// Entries kept before expired ones are swept (bounds the map under a spray of IPs).
const SWEEP_AT: usize = 1024;

/// What one `/pair` request gets.
#[derive(Debug)]
pub(super) enum PairOutcome {
    /// The new token (shown only here).
    Paired(String),
    /// The IP is locked out for this much longer.
    LockedOut(Duration),
    /// No code can be redeemed (none was issued, it was used, or pairing is off).
    Unavailable,
    /// The header is missing or malformed, or the code is wrong.
    Rejected,
    /// The commit failed; the code stays unused.
    Failed(RpcError),
}

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last: Instant,
    locked_until: Option<Instant>,
}

/// The lockout state of one gateway (the code itself is the daemon's).
#[derive(Debug)]
pub(super) struct Pairing {
    failures: Mutex<HashMap<Source, Failures>>,
    max_failures: u32,
    lockout: Duration,
}

impl Pairing {
    pub(super) fn new(max_failures: u32, lockout: Duration) -> Self {
        Self {
            failures: Mutex::new(HashMap::new()),
            max_failures: max_failures.max(1),
            lockout,
        }
    }

    /// Redeems `given` for a token on behalf of `source`.
    pub(super) async fn redeem(
        &self,
        daemon: &Daemon,
        source: Source,
        given: Option<&str>,
    ) -> PairOutcome {
        let now = Instant::now();
        if let Some(left) = self.locked_out(source, now) {
            return PairOutcome::LockedOut(left);
        }
        let mut slot = daemon.pairing_code.lock().await;
        if slot.as_ref().is_some_and(|open| open.expired(now)) {
            *slot = None;
            tracing::info!(event = "pairing_code_expired", source = %source);
        }
        let open = daemon.config.current().gateway.require_pairing;
        let given = given.and_then(well_formed);
        let outcome = match (slot.as_mut(), given) {
            (Some(code), Some(given)) if open && constant_time_eq(&code.code, &given) => {
                match commit_new_token(daemon).await {
                    Ok(token) => {
                        *slot = None;
                        PairOutcome::Paired(token)
                    }
                    Err(e) => PairOutcome::Failed(e),
                }
            }
            (Some(code), Some(_)) if open => {
                // A well-formed wrong code is a guess at this code: the
                // budget every source shares.
                if code.wrong_guess() == GuessVerdict::Burned {
                    tracing::warn!(event = "pairing_code_burned", source = %source, wrong_guesses = code.wrong_guesses, "the pairing code took too many wrong guesses and is gone; open a new one with `zeroclaw pair`");
                    *slot = None;
                }
                PairOutcome::Rejected
            }
            (Some(_), None) if open => PairOutcome::Rejected,
            _ => PairOutcome::Unavailable,
        };
        drop(slot);
        match &outcome {
            PairOutcome::Paired(_) => self.succeeded(source),
            PairOutcome::Rejected | PairOutcome::Unavailable => {
                self.failed(source, Instant::now());
            }
            _ => {}
        }
        outcome
    }

    /// How much longer `source` is locked out, if it is.
    fn locked_out(&self, source: Source, now: Instant) -> Option<Duration> {
        let map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let until = map.get(&source)?.locked_until?;
        (until > now).then(|| until - now)
    }

    /// Counts a refused attempt; returns whether `source` is now locked out.
    fn failed(&self, source: Source, now: Instant) -> bool {
        let mut map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= SWEEP_AT {
            let lockout = self.lockout;
            map.retain(|_, f| !expired(f, now, lockout));
        }
        let entry = map.entry(source).or_insert(Failures {
            count: 0,
            last: now,
            locked_until: None,
        });
        if expired(entry, now, self.lockout) {
            *entry = Failures {
                count: 0,
                last: now,
                locked_until: None,
            };
        }
        entry.count += 1;
        entry.last = now;
        if entry.count >= self.max_failures {
            entry.locked_until = Some(now + self.lockout);
            tracing::warn!(event = "pairing_locked_out", source = %source, secs = self.lockout.as_secs());
            return true;
        }
        false
    }

    fn succeeded(&self, source: Source) {
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&source);
    }
}

/// A lockout that has ended, or a count not renewed for the lockout period.
fn expired(f: &Failures, now: Instant, lockout: Duration) -> bool {
    match f.locked_until {
        Some(until) => now >= until,
        None => now.saturating_duration_since(f.last) >= lockout,
    }
}

fn constant_time_eq(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Steps 2, 8 and 9 of the config pipeline, as `pairing/create` runs them:
/// the write lock, a candidate with one more digest, the commit.
async fn commit_new_token(daemon: &Daemon) -> Result<String, RpcError> {
    let lock = daemon.config.lock().await;
    let token = token_from_bytes(&random_bytes()?);
    let mut candidate: Config = (*daemon.config.current()).clone();
    candidate.gateway.paired_tokens.push(token_digest(&token));
    let policy = Policy::from_config(&candidate);
    daemon.config.commit(&lock, candidate, policy, &[]).await?;
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u8) -> Source {
        Source::V4([10, 0, 0, n].into())
    }

    #[test]
    fn equality() {
        assert!(constant_time_eq("123456", "123456"));
        assert!(!constant_time_eq("123456", "123457"));
        assert!(!constant_time_eq("123456", "12345"));
    }

    #[tokio::test(start_paused = true)]
    async fn five_failures_lock_an_ip_out_for_the_lockout() {
        let p = Pairing::new(5, Duration::from_secs(300));
        let t0 = Instant::now();
        for i in 1..5 {
            assert!(!p.failed(ip(1), t0), "attempt {i}");
            assert!(p.locked_out(ip(1), t0).is_none());
        }
        assert!(p.failed(ip(1), t0));
        assert_eq!(p.locked_out(ip(1), t0), Some(Duration::from_secs(300)));
        // Another IP is not affected.
        assert!(p.locked_out(ip(2), t0).is_none());
        let later = t0 + Duration::from_secs(299);
        assert_eq!(p.locked_out(ip(1), later), Some(Duration::from_secs(1)));
        let after = t0 + Duration::from_secs(300);
        assert!(p.locked_out(ip(1), after).is_none());
        // After the lockout the count starts over.
        assert!(!p.failed(ip(1), after));
    }

    #[tokio::test(start_paused = true)]
    async fn old_failures_are_forgotten_and_success_clears() {
        let p = Pairing::new(2, Duration::from_secs(300));
        let t0 = Instant::now();
        assert!(!p.failed(ip(1), t0));
        assert!(!p.failed(ip(1), t0 + Duration::from_secs(300)));
        p.succeeded(ip(1));
        assert!(!p.failed(ip(1), t0 + Duration::from_secs(301)));
        assert!(p.failed(ip(1), t0 + Duration::from_secs(302)));
    }

    #[tokio::test(start_paused = true)]
    async fn the_map_is_swept() {
        let p = Pairing::new(5, Duration::from_secs(1));
        let t0 = Instant::now();
        for n in 0..SWEEP_AT as u32 {
            p.failed(Source::V4(n.into()), t0);
        }
        p.failed(ip(1), t0 + Duration::from_secs(2));
        assert_eq!(p.failures.lock().unwrap().len(), 1);
    }
}
