//! An account of a built system prompt, layer by layer, for `herald context`:
//! it comes from the same builder a session uses, so what it shows is what a
//! new session here would send.

use serde::Serialize;

use super::context_layer::ContextReport;

/// One layer of the system prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayerReport {
    /// `identity`, `working rules`, `project context`, `memory`,
    /// `skills index` or `environment`.
    pub name: &'static str,
    /// Where its text comes from.
    pub source: String,
    /// Characters of the layer in the prompt (0 when it is absent).
    pub chars: usize,
    /// Its character budget, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<usize>,
    /// Characters left out to fit the budget.
    pub cut_chars: usize,
}

/// The system prompt and how it was put together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptReport {
    /// The prompt itself, exactly as a new session stores and sends it.
    #[serde(skip)]
    pub text: String,
    /// Its length in characters.
    pub chars: usize,
    /// Its length in UTF-8 bytes.
    pub bytes: usize,
    /// Each layer, in prompt order.
    pub layers: Vec<LayerReport>,
    /// The project-context layer in detail: files, budgets, cuts, imports.
    pub context: ContextReport,
}
