//! A connection's in-flight places (§3.7, §4): at most 64 requests and
//! 64 MiB of their frames. They are the connection's state, so they live
//! beside it; `layers/limit.rs` is the layer that charges them, as tower's
//! `GlobalConcurrencyLimitLayer` charges a semaphore made outside it.
//!
//! The 64 places are the bits of one word, each with a count of its uses:
//! a request holds a [`Place`] (which bit, which use), and whoever gives it
//! back first (the request's future, or a handler that answers itself)
//! moves the count on, so every later release of the same place is a no-op
//! even once the bit serves another request. No allocation per request.

use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::error::{LimitName, RpcError};
use crate::limits::{MAX_IN_FLIGHT_BYTES, MAX_IN_FLIGHT_REQUESTS};

const _: () = assert!(MAX_IN_FLIGHT_REQUESTS <= 64, "one bit a place");

/// A connection's in-flight places and bytes.
#[derive(Debug)]
pub struct InFlight {
    /// Bit `i` set: place `i` is held.
    held: AtomicU64,
    bytes: AtomicUsize,
    /// How many times each place was given back, modulo 2^57.
    uses: [AtomicU64; MAX_IN_FLIGHT_REQUESTS],
}

impl Default for InFlight {
    fn default() -> Self {
        Self {
            held: AtomicU64::new(0),
            bytes: AtomicUsize::new(0),
            uses: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

/// What a request holds while it is in flight: its place, and the bytes
/// charged for it to the daemon's memory budget (`crate::memory`), given
/// back together by the first [`Hold::release`]. Either the request's
/// future gives it back when it ends or is dropped, or a handler that
/// writes its own answer does so before queueing it: the place is free
/// before the answer's bytes can reach the client, so a client that sends
/// its next request the moment it reads an answer is never refused for a
/// place that answer still held. A plain value: copies share the one
/// release.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hold(Option<Place>);

impl Hold {
    /// The hold of an admitted request whose bytes are charged to the
    /// budget too (`memory::Charge::hand_over`).
    pub(crate) fn admitted(place: Place) -> Self {
        Self(Some(place))
    }

    /// Gives the place and its bytes in the budget back, the first time only.
    /// `in_flight` must be the table of the connection that admitted it.
    pub(crate) fn release(&self, in_flight: &InFlight) {
        if let Some(place) = self.0 {
            if in_flight.release(place) {
                crate::memory::budget().sub(place.bytes());
            }
        }
    }
}

/// One admitted request's place: which one in which use (a ticket), for how
/// many bytes. Sixteen bytes: every request carries one through the stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// `use_count * 64 + index + 1`.
    ticket: NonZeroU64,
    bytes: u32,
}

impl Place {
    fn new(index: usize, use_count: u64, bytes: usize) -> Self {
        let ticket = use_count.wrapping_mul(64).wrapping_add(index as u64 + 1);
        Self {
            ticket: NonZeroU64::new(ticket).unwrap_or(NonZeroU64::MIN),
            // Within the bound of 64 MiB, checked before.
            bytes: u32::try_from(bytes).unwrap_or(u32::MAX),
        }
    }

    fn index(self) -> usize {
        ((self.ticket.get() - 1) % 64) as usize
    }

    fn use_count(self) -> u64 {
        (self.ticket.get() - 1) / 64
    }

    /// The frame bytes it holds.
    pub fn bytes(self) -> usize {
        self.bytes as usize
    }
}

impl InFlight {
    /// Takes a place for `bytes`, or names the bound that is reached.
    pub(crate) fn try_acquire(&self, bytes: usize) -> Result<Place, RpcError> {
        let full = u64::MAX >> (64 - MAX_IN_FLIGHT_REQUESTS);
        let mut held = self.held.load(Ordering::Acquire);
        let index = loop {
            let free = !held & full;
            if free == 0 {
                return Err(RpcError::LimitExceeded {
                    limit: LimitName::RequestsInFlight,
                    max: MAX_IN_FLIGHT_REQUESTS as u64,
                });
            }
            let index = free.trailing_zeros();
            match self.held.compare_exchange_weak(
                held,
                held | 1 << index,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break index as usize,
                Err(now) => held = now,
            }
        };
        let b = self.bytes.fetch_add(bytes, Ordering::AcqRel);
        if b + bytes > MAX_IN_FLIGHT_BYTES {
            self.bytes.fetch_sub(bytes, Ordering::AcqRel);
            self.held.fetch_and(!(1 << index), Ordering::AcqRel);
            return Err(RpcError::LimitExceeded {
                limit: LimitName::RequestBytesInFlight,
                max: MAX_IN_FLIGHT_BYTES as u64,
            });
        }
        // The last release moved the count before it freed the bit.
        let use_count = self.uses[index].load(Ordering::Acquire);
        Ok(Place::new(index, use_count, bytes))
    }

    /// Gives `place` back; `false` if it was already given back.
    pub(crate) fn release(&self, place: Place) -> bool {
        let (index, use_count) = (place.index(), place.use_count());
        let Some(uses) = self.uses.get(index) else {
            return false;
        };
        // A count wraps at 57 bits, so a ticket never overflows.
        let next = use_count.wrapping_add(1) & (u64::MAX >> 7);
        if uses
            .compare_exchange(use_count, next, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        self.bytes.fetch_sub(place.bytes(), Ordering::AcqRel);
        self.held.fetch_and(!(1 << index), Ordering::AcqRel);
        true
    }

    /// Requests in flight now.
    pub fn requests(&self) -> usize {
        self.held.load(Ordering::Acquire).count_ones() as usize
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

    #[test]
    fn a_place_is_given_back_once_even_after_it_serves_another_request() {
        let f = InFlight::default();
        let first = f.try_acquire(100).unwrap();
        assert!(f.release(first));
        // The same bit, in its next use.
        let second = f.try_acquire(7).unwrap();
        assert_eq!(second.index(), first.index());
        assert_eq!(second.use_count(), first.use_count() + 1);
        // A late release of the first use frees nothing of the second.
        assert!(!f.release(first));
        assert_eq!(f.requests(), 1);
        assert_eq!(f.bytes.load(Ordering::Acquire), 7);
        assert!(f.release(second));
        assert!(!f.release(second));
        assert_eq!((f.requests(), f.bytes.load(Ordering::Acquire)), (0, 0));
    }

    #[test]
    fn a_place_is_sixteen_bytes_and_so_is_a_hold() {
        assert_eq!(std::mem::size_of::<Place>(), 16);
        assert_eq!(std::mem::size_of::<Hold>(), 16);
    }

    #[test]
    fn the_65th_place_is_refused_and_a_freed_one_is_taken_again() {
        let f = InFlight::default();
        let places: Vec<Place> = (0..MAX_IN_FLIGHT_REQUESTS)
            .map(|_| f.try_acquire(1).unwrap())
            .collect();
        assert_eq!(
            f.try_acquire(1).unwrap_err(),
            RpcError::LimitExceeded {
                limit: LimitName::RequestsInFlight,
                max: MAX_IN_FLIGHT_REQUESTS as u64
            }
        );
        assert!(f.release(places[17]));
        assert_eq!(f.try_acquire(1).unwrap().index(), 17);
        assert_eq!(f.requests(), MAX_IN_FLIGHT_REQUESTS);
    }

    #[test]
    fn releases_racing_from_threads_free_each_place_once() {
        let f = std::sync::Arc::new(InFlight::default());
        for _ in 0..200 {
            let place = f.try_acquire(3).unwrap();
            let racers: Vec<_> = (0..4)
                .map(|_| {
                    let f = f.clone();
                    std::thread::spawn(move || f.release(place))
                })
                .collect();
            let won = racers
                .into_iter()
                .map(|r| r.join().unwrap_or(false))
                .filter(|w| *w)
                .count();
            assert_eq!(won, 1);
            assert_eq!((f.requests(), f.bytes.load(Ordering::Acquire)), (0, 0));
        }
    }
}
