//! Input a running tool asks the user for (an MCP server's elicitation):
//! the request, and the answer that goes back to the tool.

use serde::{Deserialize, Serialize};

/// A tool's request for input from the user.
#[derive(Debug, Clone, PartialEq)]
pub struct Elicitation {
    /// Who asks (the MCP server's configured name).
    pub server: String,
    /// What the input is for, in the server's words.
    pub message: String,
    /// JSON schema of the answer: an object of flat properties.
    pub schema: serde_json::Value,
}

/// How the user answered an [`Elicitation`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// The user gave the input (in [`ElicitAnswer::content`]).
    Accept,
    /// The user refused; the tool continues without the input.
    Decline,
    /// The user dismissed the request; the tool should stop.
    Cancel,
}

impl ElicitAction {
    /// `accept`, `decline` or `cancel` (the words of events and operations).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accept => "accept",
            Self::Decline => "decline",
            Self::Cancel => "cancel",
        }
    }

    /// Parses `accept`, `decline` or `cancel`; the error says what fits.
    pub fn parse(word: &str) -> Result<Self, String> {
        match word.trim().to_ascii_lowercase().as_str() {
            "accept" => Ok(Self::Accept),
            "decline" => Ok(Self::Decline),
            "cancel" => Ok(Self::Cancel),
            other => Err(format!(
                "unknown elicitation action '{other}'; answer accept (with content), decline or cancel"
            )),
        }
    }
}

impl From<herald_protocol::ElicitationAction> for ElicitAction {
    fn from(action: herald_protocol::ElicitationAction) -> Self {
        use herald_protocol::ElicitationAction as Action;
        match action {
            Action::Accept => Self::Accept,
            Action::Decline => Self::Decline,
            Action::Cancel => Self::Cancel,
        }
    }
}

impl From<ElicitAction> for herald_protocol::ElicitationAction {
    fn from(action: ElicitAction) -> Self {
        match action {
            ElicitAction::Accept => Self::Accept,
            ElicitAction::Decline => Self::Decline,
            ElicitAction::Cancel => Self::Cancel,
        }
    }
}

/// The answer to an [`Elicitation`].
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitAnswer {
    pub action: ElicitAction,
    /// The input (a JSON object matching the schema) when accepted.
    pub content: Option<serde_json::Value>,
}

impl ElicitAnswer {
    /// A refusal without content.
    pub fn decline() -> Self {
        Self {
            action: ElicitAction::Decline,
            content: None,
        }
    }

    /// A dismissal without content.
    pub fn cancel() -> Self {
        Self {
            action: ElicitAction::Cancel,
            content: None,
        }
    }

    /// The operation a front end submits to give this answer to request
    /// `request_id`.
    pub fn into_op(self, request_id: &str) -> herald_protocol::Op {
        herald_protocol::Op::ElicitationAnswer {
            request_id: request_id.to_owned(),
            action: self.action.into(),
            content: self.content,
        }
    }
}
