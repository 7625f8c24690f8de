//! The integration tests of `herald-tui`, linked as one binary: one link
//! instead of one per file. Each file under `suite/` is one area.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
