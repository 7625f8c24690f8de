//! The integration tests of herald-browser, one binary (see suite/).
mod suite;
