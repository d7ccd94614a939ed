//! The gateway's one-time pairing code (§6.7, §12), held by the daemon so
//! that both the gateway (`POST /pair` redeems it) and the `pairing/code`
//! method (`zeroclaw pair` prints it, docs/protocol-additions.md) see the
//! same one. At most one code is open at a time; it is single-use.

use tokio::sync::{Mutex, MutexGuard};

use crate::error::RpcError;
use crate::live_config::random_bytes;

/// The open code, if any.
#[derive(Debug, Default)]
pub struct PairingCode {
    /// The async lock also serializes a redemption across its config commit.
    slot: Mutex<Option<String>>,
}

impl PairingCode {
    /// The slot, locked: a redemption holds it until the token is committed.
    pub async fn lock(&self) -> MutexGuard<'_, Option<String>> {
        self.slot.lock().await
    }

    /// Opens a new code, replacing any open one.
    pub async fn issue(&self) -> Result<String, RpcError> {
        let code = new_code()?;
        *self.slot.lock().await = Some(code.clone());
        Ok(code)
    }

    /// The open code, or a new one if none is open; `true` if it is new.
    pub async fn current_or_issue(&self) -> Result<(String, bool), RpcError> {
        let mut slot = self.slot.lock().await;
        if let Some(code) = slot.as_ref() {
            return Ok((code.clone(), false));
        }
        let code = new_code()?;
        *slot = Some(code.clone());
        Ok((code, true))
    }
}

/// A fresh 6-digit code.
pub fn new_code() -> Result<String, RpcError> {
    let b = random_bytes()?;
    let n = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
    // The modulo bias over 2^64 is below 1e-13.
    Ok(format!("{:06}", n % 1_000_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_six_digits() {
        for _ in 0..100 {
            let c = new_code().unwrap();
            assert!(c.len() == 6 && c.bytes().all(|b| b.is_ascii_digit()), "{c}");
        }
    }

    #[tokio::test]
    async fn the_open_code_is_kept_until_replaced() {
        let p = PairingCode::default();
        let (a, new) = p.current_or_issue().await.unwrap();
        assert!(new);
        assert_eq!(p.current_or_issue().await.unwrap(), (a.clone(), false));
        *p.lock().await = None;
        assert!(p.current_or_issue().await.unwrap().1);
    }
}
