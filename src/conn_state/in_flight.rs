//! A connection's in-flight counters (§3.7, §4): at most 64 requests
//! and 64 MiB of their frames. They are the connection's state, so they
//! live beside it; `layers/limit.rs` is the layer that charges them, as
//! tower's `GlobalConcurrencyLimitLayer` charges a semaphore made outside it.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{LimitName, RpcError};
use crate::limits::{MAX_IN_FLIGHT_BYTES, MAX_IN_FLIGHT_REQUESTS};

/// A connection's in-flight counters.
#[derive(Debug, Default)]
pub struct InFlight {
    requests: AtomicUsize,
    bytes: AtomicUsize,
}

impl InFlight {
    /// Takes one slot and `bytes`, or names the bound that is reached.
    pub(crate) fn try_acquire(&self, bytes: usize) -> Result<(), RpcError> {
        let n = self.requests.fetch_add(1, Ordering::AcqRel);
        if n >= MAX_IN_FLIGHT_REQUESTS {
            self.requests.fetch_sub(1, Ordering::AcqRel);
            return Err(RpcError::LimitExceeded {
                limit: LimitName::RequestsInFlight,
                max: MAX_IN_FLIGHT_REQUESTS as u64,
            });
        }
        let b = self.bytes.fetch_add(bytes, Ordering::AcqRel);
        if b + bytes > MAX_IN_FLIGHT_BYTES {
            self.bytes.fetch_sub(bytes, Ordering::AcqRel);
            self.requests.fetch_sub(1, Ordering::AcqRel);
            return Err(RpcError::LimitExceeded {
                limit: LimitName::RequestBytesInFlight,
                max: MAX_IN_FLIGHT_BYTES as u64,
            });
        }
        Ok(())
    }

    pub(crate) fn release(&self, bytes: usize) {
        self.bytes.fetch_sub(bytes, Ordering::AcqRel);
        self.requests.fetch_sub(1, Ordering::AcqRel);
    }

    /// Requests in flight now.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_byte_bound_is_checked_too() {
        let f = InFlight::default();
        f.try_acquire(MAX_IN_FLIGHT_BYTES - 10).unwrap();
        assert_eq!(
            f.try_acquire(11).unwrap_err(),
            RpcError::LimitExceeded {
                limit: LimitName::RequestBytesInFlight,
                max: MAX_IN_FLIGHT_BYTES as u64
            }
        );
        assert_eq!(f.requests(), 1);
        f.try_acquire(10).unwrap();
    }
}
