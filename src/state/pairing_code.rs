//! The gateway's one-time pairing code (§6.7, §12), held by the daemon so
//! that both the gateway (`POST /pair` redeems it) and the `pairing/code`
//! method (`zeroclaw pair` prints it, docs/protocol-additions.md) see the
//! same one.
//!
//! At most one code is open at a time. It is single-use, it expires
//! [`PAIRING_CODE_TTL`] after it was issued, and it is burned by
//! [`PAIRING_CODE_MAX_GUESSES`] wrong guesses in total, whatever address
//! they came from: no choice of source escapes that budget. A burned or
//! expired code is gone; only the local user opens a new one (`zeroclaw
//! pair`). A code has [`PAIRING_CODE_DIGITS`] digits, so even a guesser
//! that no limiter stopped would need about 10^12 tries (docs/security.md).

use tokio::sync::{Mutex, MutexGuard};
use tokio::time::Instant;

use crate::error::RpcError;
use crate::limits::{PAIRING_CODE_DIGITS, PAIRING_CODE_MAX_GUESSES, PAIRING_CODE_TTL};
use crate::live_config::random_bytes;

/// The code that is open, and what is left of it.
#[derive(Debug, Clone)]
pub struct OpenCode {
    /// The digits, exactly as issued.
    pub code: String,
    /// After this the code is refused and dropped.
    pub expires: Instant,
    /// Wrong guesses so far.
    pub wrong_guesses: u32,
}

/// What happened to the open code on one wrong guess.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuessVerdict {
    /// The code stays open.
    StillOpen,
    /// That was the last guess the code allowed: it is gone.
    Burned,
}

impl OpenCode {
    /// Whether the code is past its lifetime at `now`.
    pub fn expired(&self, now: Instant) -> bool {
        now >= self.expires
    }

    /// Counts one wrong guess.
    pub fn wrong_guess(&mut self) -> GuessVerdict {
        self.wrong_guesses += 1;
        if self.wrong_guesses >= PAIRING_CODE_MAX_GUESSES {
            GuessVerdict::Burned
        } else {
            GuessVerdict::StillOpen
        }
    }
}

/// The open code, if any.
#[derive(Debug, Default)]
pub struct PairingCode {
    /// The async lock also serializes a redemption across its config commit.
    slot: Mutex<Option<OpenCode>>,
}

impl PairingCode {
    /// The slot, locked: a redemption holds it until the token is committed.
    pub async fn lock(&self) -> MutexGuard<'_, Option<OpenCode>> {
        self.slot.lock().await
    }

    /// Opens a new code, replacing any open one.
    pub async fn issue(&self) -> Result<String, RpcError> {
        let open = open_code()?;
        let code = open.code.clone();
        *self.slot.lock().await = Some(open);
        Ok(code)
    }

    /// The open code, or a new one if none is open (or the open one
    /// expired); `true` if it is new.
    pub async fn current_or_issue(&self) -> Result<(String, bool), RpcError> {
        let mut slot = self.slot.lock().await;
        if let Some(open) = slot.as_ref().filter(|o| !o.expired(Instant::now())) {
            return Ok((open.code.clone(), false));
        }
        let open = open_code()?;
        let code = open.code.clone();
        *slot = Some(open);
        Ok((code, true))
    }
}

fn open_code() -> Result<OpenCode, RpcError> {
    Ok(OpenCode {
        code: new_code()?,
        expires: Instant::now() + PAIRING_CODE_TTL,
        wrong_guesses: 0,
    })
}

/// A fresh code of [`PAIRING_CODE_DIGITS`] decimal digits.
pub fn new_code() -> Result<String, RpcError> {
    let b = random_bytes()?;
    let n = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
    let space = 10u64.pow(PAIRING_CODE_DIGITS as u32);
    // The modulo bias over 2^64 is below 1e-7 for a space of 10^12.
    Ok(format!(
        "{:0width$}",
        n % space,
        width = PAIRING_CODE_DIGITS
    ))
}

/// The code in `given` if it is well formed: exactly [`PAIRING_CODE_DIGITS`]
/// ASCII digits, with surrounding whitespace and `-` or space separators
/// between groups allowed (the way a person copies a long number).
pub fn well_formed(given: &str) -> Option<String> {
    let digits: String = given
        .trim()
        .chars()
        .filter(|c| *c != '-' && *c != ' ')
        .collect();
    (digits.len() == PAIRING_CODE_DIGITS && digits.bytes().all(|b| b.is_ascii_digit()))
        .then_some(digits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_have_the_configured_digits() {
        for _ in 0..100 {
            let c = new_code().unwrap();
            assert!(
                c.len() == PAIRING_CODE_DIGITS && c.bytes().all(|b| b.is_ascii_digit()),
                "{c}"
            );
        }
    }

    #[test]
    fn only_the_full_digit_count_is_well_formed() {
        assert_eq!(
            well_formed(" 012345678901 ").as_deref(),
            Some("012345678901")
        );
        assert_eq!(
            well_formed("0123-4567-8901").as_deref(),
            Some("012345678901")
        );
        for bad in [
            "",
            "123456",
            "0123456789012",
            "01234567890a",
            "١٢٣٤٥٦٧٨٩٠١٢",
        ] {
            assert_eq!(well_formed(bad), None, "{bad}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_open_code_is_kept_until_replaced_or_expired() {
        let p = PairingCode::default();
        let (a, new) = p.current_or_issue().await.unwrap();
        assert!(new);
        assert_eq!(p.current_or_issue().await.unwrap(), (a.clone(), false));
        *p.lock().await = None;
        assert!(p.current_or_issue().await.unwrap().1);
        tokio::time::advance(PAIRING_CODE_TTL).await;
        assert!(
            p.current_or_issue().await.unwrap().1,
            "an expired code is replaced"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn wrong_guesses_burn_the_code() {
        let mut open = open_code().unwrap();
        for _ in 1..PAIRING_CODE_MAX_GUESSES {
            assert_eq!(open.wrong_guess(), GuessVerdict::StillOpen);
        }
        assert_eq!(open.wrong_guess(), GuessVerdict::Burned);
        assert!(!open.expired(Instant::now()));
        tokio::time::advance(PAIRING_CODE_TTL).await;
        assert!(open.expired(Instant::now()));
    }
}
