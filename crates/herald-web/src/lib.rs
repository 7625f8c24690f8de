//! herald's web tools: `web_search` over a configured search backend and
//! `web_extract`, which turns pages, PDFs and text into clean markdown
//! without a model in between. Every fetch passes the SSRF guard
//! ([`guard`]), which the browser tools share.

pub mod guard;

pub use guard::{AddressKind, AddressPolicy, GuardError, GuardedResolver};
