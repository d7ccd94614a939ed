//! Fault points for black-box tests of storage failures (§8.20).
//!
//! Only a daemon started with `--test-faults` serves `debug/set-faults`;
//! without it no fault can ever become active. Checking a point is one
//! relaxed atomic load.

use std::sync::atomic::{AtomicU32, Ordering};

/// A named place where storage can be made to fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPoint {
    TurnBegin,
    CheckpointAppend,
    TurnFinalize,
    SnapshotWrite,
    Recovery,
    Tombstone,
    AcpDelete,
    ChatAppend,
    ChatDelete,
    ConfigCommit,
    UploadWrite,
}

impl FaultPoint {
    /// Every point, in the spec's order.
    pub const ALL: [FaultPoint; 11] = [
        Self::TurnBegin,
        Self::CheckpointAppend,
        Self::TurnFinalize,
        Self::SnapshotWrite,
        Self::Recovery,
        Self::Tombstone,
        Self::AcpDelete,
        Self::ChatAppend,
        Self::ChatDelete,
        Self::ConfigCommit,
        Self::UploadWrite,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TurnBegin => "turn_begin",
            Self::CheckpointAppend => "checkpoint_append",
            Self::TurnFinalize => "turn_finalize",
            Self::SnapshotWrite => "snapshot_write",
            Self::Recovery => "recovery",
            Self::Tombstone => "tombstone",
            Self::AcpDelete => "acp_delete",
            Self::ChatAppend => "chat_append",
            Self::ChatDelete => "chat_delete",
            Self::ConfigCommit => "config_commit",
            Self::UploadWrite => "upload_write",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

/// The active set of fault points.
#[derive(Debug, Default)]
pub struct Faults(AtomicU32);

impl Faults {
    /// Replaces the active set.
    pub fn set(&self, points: &[FaultPoint]) {
        self.0
            .store(points.iter().fold(0, |m, p| m | p.bit()), Ordering::Relaxed);
    }

    /// Replaces the active set by wire names (`debug/set-faults`): all or
    /// none, so an unknown name (the first, returned) changes nothing. The
    /// names now active, in the spec's order.
    pub fn set_named<'a>(&self, names: &'a [String]) -> Result<Vec<&'static str>, &'a str> {
        let points = names
            .iter()
            .map(|name| FaultPoint::parse(name).ok_or(name.as_str()))
            .collect::<Result<Vec<_>, _>>()?;
        self.set(&points);
        Ok(self.active().into_iter().map(FaultPoint::as_str).collect())
    }

    /// Whether `p` is active.
    pub fn is_active(&self, p: FaultPoint) -> bool {
        self.0.load(Ordering::Relaxed) & p.bit() != 0
    }

    /// The active points, in the spec's order.
    pub fn active(&self) -> Vec<FaultPoint> {
        FaultPoint::ALL
            .into_iter()
            .filter(|p| self.is_active(*p))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sets_replace() {
        for p in FaultPoint::ALL {
            assert_eq!(FaultPoint::parse(p.as_str()), Some(p));
        }
        let f = Faults::default();
        f.set(&[FaultPoint::SnapshotWrite, FaultPoint::Recovery]);
        assert!(f.is_active(FaultPoint::Recovery));
        f.set(&[FaultPoint::TurnBegin]);
        assert_eq!(f.active(), vec![FaultPoint::TurnBegin]);
        let names = ["recovery".to_owned(), "nope".to_owned()];
        assert_eq!(f.set_named(&names), Err("nope"), "all or none");
        assert_eq!(f.active(), vec![FaultPoint::TurnBegin]);
        assert_eq!(f.set_named(&names[..1]), Ok(vec!["recovery"]));
    }
}
