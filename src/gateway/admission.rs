//! Who the gateway lets in, and whom it lets go first when strangers crowd
//! the door (docs/security.md, "Limits per source and in total").
//!
//! Two pools hold the connections that have not shown a credential yet:
//! HTTP connections (TLS, request heads, the page, `/pair`, a `POST /rpc`
//! before its token is checked) and WebSocket sessions before `initialize`
//! bound a token. Each pool has a bound in total and a bound per
//! [`Source`]. A newcomer over a bound is not refused: the oldest waiting
//! connection of that source (or of the pool) is evicted for it. A
//! stranger who holds sockets open gains nothing by it, since his own
//! oldest sockets are the first to go, and a person loading the page or
//! pairing always gets in.
//!
//! A connection that proves a credential leaves its pool ([`Ticket::trust`]):
//! it is never evicted. Bound WebSocket sessions are counted against
//! `max_sessions`; when that many are bound, a new upgrade is refused (503).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

use super::source::Source;

/// The two pools of connections that have shown no credential yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Pool {
    /// HTTP connections: TLS, request heads and bodies, the page, `/pair`.
    Connections,
    /// WebSocket sessions before `initialize` bound a token.
    UnboundSessions,
}

impl Pool {
    fn as_str(self) -> &'static str {
        match self {
            Self::Connections => "connections",
            Self::UnboundSessions => "unbound_sessions",
        }
    }
}

/// The bounds of [`Admission`].
#[derive(Debug, Clone, Copy)]
pub(super) struct Bounds {
    /// Unauthenticated HTTP connections in total.
    pub connections: usize,
    /// Unauthenticated HTTP connections of one source.
    pub connections_per_source: usize,
    /// WebSocket sessions in total, bound or not.
    pub sessions: usize,
    /// Unbound WebSocket sessions in total.
    pub unbound_sessions: usize,
    /// Unbound WebSocket sessions of one source.
    pub unbound_sessions_per_source: usize,
}

impl Bounds {
    fn total(&self, pool: Pool) -> usize {
        match pool {
            Pool::Connections => self.connections,
            Pool::UnboundSessions => self.unbound_sessions,
        }
    }

    fn per_source(&self, pool: Pool) -> usize {
        match pool {
            Pool::Connections => self.connections_per_source,
            Pool::UnboundSessions => self.unbound_sessions_per_source,
        }
    }
}

/// Why an upgrade was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SessionsFull;

#[derive(Debug)]
struct Waiting {
    source: Source,
    pool: Pool,
    evict: CancellationToken,
}

#[derive(Debug, Default)]
struct State {
    next: u64,
    /// Every connection without a credential, oldest first.
    waiting: BTreeMap<u64, Waiting>,
    /// How many of `waiting` each pool and source holds.
    counts: HashMap<(Pool, Source), usize>,
    connections: usize,
    unbound_sessions: usize,
    bound_sessions: usize,
}

impl State {
    fn total(&self, pool: Pool) -> usize {
        match pool {
            Pool::Connections => self.connections,
            Pool::UnboundSessions => self.unbound_sessions,
        }
    }

    fn total_mut(&mut self, pool: Pool) -> &mut usize {
        match pool {
            Pool::Connections => &mut self.connections,
            Pool::UnboundSessions => &mut self.unbound_sessions,
        }
    }

    fn count(&self, pool: Pool, source: Source) -> usize {
        self.counts.get(&(pool, source)).copied().unwrap_or(0)
    }

    /// Takes `id` out of the waiting set; whether it was there.
    fn remove(&mut self, id: u64) -> Option<Waiting> {
        let w = self.waiting.remove(&id)?;
        *self.total_mut(w.pool) -= 1;
        if let Some(n) = self.counts.get_mut(&(w.pool, w.source)) {
            *n -= 1;
            if *n == 0 {
                self.counts.remove(&(w.pool, w.source));
            }
        }
        Some(w)
    }

    /// Evicts the oldest waiting connection that `pick` accepts.
    fn evict_oldest(&mut self, why: &'static str, pick: impl Fn(&Waiting) -> bool) -> bool {
        let Some(id) = self
            .waiting
            .iter()
            .find(|(_, w)| pick(w))
            .map(|(id, _)| *id)
        else {
            return false;
        };
        if let Some(w) = self.remove(id) {
            tracing::info!(event = "connection_evicted", pool = w.pool.as_str(), source = %w.source, reason = why);
            w.evict.cancel();
        }
        true
    }
}

/// The gateway's admission state.
#[derive(Debug)]
pub(super) struct Admission {
    bounds: Bounds,
    state: Mutex<State>,
}

impl Admission {
    pub fn new(bounds: Bounds) -> Arc<Self> {
        Arc::new(Self {
            bounds,
            state: Mutex::new(State::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every mutation is complete before anything can panic: a poisoned
        // state is still consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits a new HTTP connection from `source`, evicting older waiting
    /// ones over the bounds.
    pub fn admit_connection(self: &Arc<Self>, source: Source) -> Ticket {
        let mut st = self.lock();
        self.make_room(&mut st, Pool::Connections, source);
        self.enter(st, Pool::Connections, source)
    }

    /// Admits a new WebSocket session from `source`, or refuses it when
    /// every session place is held by a bound session.
    pub fn admit_session(self: &Arc<Self>, source: Source) -> Result<Ticket, SessionsFull> {
        let mut st = self.lock();
        self.make_room(&mut st, Pool::UnboundSessions, source);
        if st.bound_sessions + st.unbound_sessions >= self.bounds.sessions
            && !st.evict_oldest("sessions", |w| w.pool == Pool::UnboundSessions)
        {
            return Err(SessionsFull);
        }
        Ok(self.enter(st, Pool::UnboundSessions, source))
    }

    fn make_room(&self, st: &mut State, pool: Pool, source: Source) {
        if st.count(pool, source) >= self.bounds.per_source(pool) {
            st.evict_oldest("per_source", |w| w.pool == pool && w.source == source);
        }
        if st.total(pool) >= self.bounds.total(pool) {
            st.evict_oldest("total", |w| w.pool == pool);
        }
    }

    fn enter(
        self: &Arc<Self>,
        mut st: MutexGuard<'_, State>,
        pool: Pool,
        source: Source,
    ) -> Ticket {
        let id = st.next;
        st.next += 1;
        let evict = CancellationToken::new();
        st.waiting.insert(
            id,
            Waiting {
                source,
                pool,
                evict: evict.clone(),
            },
        );
        *st.total_mut(pool) += 1;
        *st.counts.entry((pool, source)).or_insert(0) += 1;
        Ticket {
            admission: self.clone(),
            id,
            pool,
            evict,
            bound: AtomicBool::new(false),
        }
    }

    /// Bound WebSocket sessions now (for tests and `status`).
    #[cfg(test)]
    fn bound_sessions(&self) -> usize {
        self.lock().bound_sessions
    }
}

/// One admitted connection's place; dropping it gives the place back.
#[derive(Debug)]
pub(super) struct Ticket {
    admission: Arc<Admission>,
    id: u64,
    pool: Pool,
    evict: CancellationToken,
    /// Set once a session's place was moved to the bound count.
    bound: AtomicBool,
}

impl Ticket {
    /// Cancelled when the connection was evicted: it must close.
    pub fn evicted(&self) -> &CancellationToken {
        &self.evict
    }

    /// The connection proved a credential: it leaves its pool and is never
    /// evicted. `false` if it was evicted first.
    pub fn trust(&self) -> bool {
        let mut st = self.admission.lock();
        if st.remove(self.id).is_none() {
            return self.bound.load(Ordering::Relaxed) || !self.evict.is_cancelled();
        }
        if self.pool == Pool::UnboundSessions {
            st.bound_sessions += 1;
            self.bound.store(true, Ordering::Relaxed);
        }
        true
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut st = self.admission.lock();
        st.remove(self.id);
        if self.bound.load(Ordering::Relaxed) {
            st.bound_sessions -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds() -> Bounds {
        Bounds {
            connections: 4,
            connections_per_source: 2,
            sessions: 3,
            unbound_sessions: 2,
            unbound_sessions_per_source: 2,
        }
    }

    fn v4(n: u8) -> Source {
        Source::V4([10, 0, 0, n].into())
    }

    #[test]
    fn a_source_over_its_bound_loses_its_own_oldest() {
        let a = Admission::new(bounds());
        let other = a.admit_connection(v4(9));
        let first = a.admit_connection(v4(1));
        let second = a.admit_connection(v4(1));
        let third = a.admit_connection(v4(1));
        assert!(first.evicted().is_cancelled());
        assert!(!second.evicted().is_cancelled());
        assert!(!third.evicted().is_cancelled());
        assert!(
            !other.evicted().is_cancelled(),
            "another source is untouched"
        );
    }

    #[test]
    fn over_the_total_the_oldest_of_the_pool_goes() {
        let a = Admission::new(bounds());
        let t: Vec<_> = (1..=4).map(|n| a.admit_connection(v4(n))).collect();
        let session = a.admit_session(v4(1)).unwrap();
        let fifth = a.admit_connection(v4(5));
        assert!(t[0].evicted().is_cancelled());
        assert!(t[1..].iter().all(|t| !t.evicted().is_cancelled()));
        assert!(
            !session.evicted().is_cancelled(),
            "the other pool is untouched"
        );
        assert!(!fifth.evicted().is_cancelled());
    }

    #[test]
    fn trusted_connections_are_never_evicted_and_free_their_place() {
        let a = Admission::new(bounds());
        let trusted = a.admit_connection(v4(1));
        assert!(trusted.trust());
        let others: Vec<_> = (0..10).map(|_| a.admit_connection(v4(1))).collect();
        assert!(!trusted.evicted().is_cancelled());
        assert_eq!(
            others
                .iter()
                .filter(|t| !t.evicted().is_cancelled())
                .count(),
            2
        );
    }

    #[test]
    fn bound_sessions_hold_their_places_and_full_refuses() {
        let a = Admission::new(bounds());
        let bound: Vec<_> = (0..3)
            .map(|n| {
                let t = a.admit_session(v4(n)).unwrap();
                assert!(t.trust());
                t
            })
            .collect();
        assert_eq!(a.bound_sessions(), 3);
        assert_eq!(a.admit_session(v4(7)).unwrap_err(), SessionsFull);
        drop(bound);
        assert_eq!(a.bound_sessions(), 0);
        let unbound: Vec<_> = (0..3).map(|n| a.admit_session(v4(n)).unwrap()).collect();
        assert!(unbound[0].evicted().is_cancelled());
        assert!(!unbound[0].trust(), "an evicted session cannot be trusted");
        assert!(unbound[1].trust());
    }
}
