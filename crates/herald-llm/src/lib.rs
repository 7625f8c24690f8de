//! LLM clients.
