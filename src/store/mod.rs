//! The SQLite store (SPEC §9): being written.
