//! MCP prompts: the prompt templates a server offers (`prompts/list`),
//! which front ends show as slash commands `/<server>:<prompt>`, and
//! filling one in (`prompts/get`) to the text of a user turn.
//!
//! Arguments come from the rest of the command line: `key=value` words for
//! named arguments, or the words in the prompt's argument order (the last
//! argument takes the rest of the line). A missing required argument is an
//! error naming it and the usage.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::hub::{McpHub, ServerState};

/// One argument of an MCP prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpPromptArgument {
    pub name: String,
    pub description: String,
    pub required: bool,
}

/// One prompt template of an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpPrompt {
    /// The configured server name.
    pub server: String,
    pub name: String,
    /// The server's description (or its title when it gave none).
    pub description: String,
    pub arguments: Vec<McpPromptArgument>,
}

impl McpPrompt {
    /// The slash command that fills it in, without the slash:
    /// `<server>:<prompt>`.
    pub fn command(&self) -> String {
        format!("{}:{}", self.server, self.name)
    }

    /// Its arguments as a usage hint: `CITY [STATE]`.
    pub fn usage(&self) -> String {
        self.arguments
            .iter()
            .map(|a| {
                let name = a.name.to_uppercase();
                if a.required {
                    name
                } else {
                    format!("[{name}]")
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Reads one entry of a `prompts/list` answer; `None` without a name.
    fn from_listing(server: &str, entry: &Value) -> Option<McpPrompt> {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").trim().to_owned();
        let name = text(entry.get("name"));
        if name.is_empty() || name.chars().any(char::is_whitespace) {
            return None;
        }
        let mut description = text(entry.get("description"));
        if description.is_empty() {
            description = text(entry.get("title"));
        }
        let arguments = entry
            .get("arguments")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|a| {
                        let name = text(a.get("name"));
                        (!name.is_empty()).then(|| McpPromptArgument {
                            name,
                            description: text(a.get("description")),
                            required: a.get("required").and_then(Value::as_bool).unwrap_or(false),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        Some(McpPrompt {
            server: server.to_owned(),
            name,
            description,
            arguments,
        })
    }

    /// The arguments `line` gives (see the module documentation).
    pub fn bind(&self, line: &str) -> Result<BTreeMap<String, String>, McpPromptError> {
        let line = line.trim();
        let mut bound = BTreeMap::new();
        fn named<'w>(prompt: &McpPrompt, word: &'w str) -> Option<(&'w str, &'w str)> {
            word.split_once('=')
                .filter(|(key, _)| prompt.arguments.iter().any(|a| a.name == *key))
        }
        if line
            .split_whitespace()
            .next()
            .is_some_and(|w| named(self, w).is_some())
        {
            let mut current: Option<String> = None;
            for word in line.split_whitespace() {
                if let Some((key, value)) = named(self, word) {
                    bound.insert(key.to_owned(), value.to_owned());
                    current = Some(key.to_owned());
                } else if let Some(value) = current.as_ref().and_then(|key| bound.get_mut(key)) {
                    value.push(' ');
                    value.push_str(word);
                }
            }
        } else if !line.is_empty() {
            let mut rest = line;
            let count = self.arguments.len();
            for (i, argument) in self.arguments.iter().enumerate() {
                if rest.is_empty() {
                    break;
                }
                let (value, after) = if i + 1 == count {
                    (rest, "")
                } else {
                    rest.split_once(char::is_whitespace).unwrap_or((rest, ""))
                };
                bound.insert(argument.name.clone(), value.to_owned());
                rest = after.trim_start();
            }
            if !rest.is_empty() || count == 0 {
                return Err(McpPromptError::TooManyWords {
                    command: self.command(),
                    usage: self.usage(),
                });
            }
        }
        if let Some(missing) = self
            .arguments
            .iter()
            .find(|a| a.required && bound.get(&a.name).is_none_or(|v| v.is_empty()))
        {
            return Err(McpPromptError::MissingArgument {
                command: self.command(),
                argument: missing.name.clone(),
                usage: self.usage(),
            });
        }
        Ok(bound)
    }
}

/// Why a prompt could not be filled in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpPromptError {
    #[error("no MCP server `{0}` is running in this session")]
    UnknownServer(String),
    #[error("MCP server `{server}` offers no prompt `{prompt}`")]
    UnknownPrompt { server: String, prompt: String },
    #[error("/{command} needs `{argument}`: /{command} {usage}")]
    MissingArgument {
        command: String,
        argument: String,
        usage: String,
    },
    #[error("/{command} takes no more words than its arguments: /{command} {usage}")]
    TooManyWords { command: String, usage: String },
    #[error("{0}")]
    Server(String),
    #[error("MCP prompt `{0}` gave no text to send")]
    Empty(String),
}

impl McpHub {
    /// The prompts of every running server that offers some, by server
    /// and name (waits for servers still starting). A server whose listing
    /// fails is left out with a log line.
    pub async fn prompts(&self) -> Vec<McpPrompt> {
        let mut all = Vec::new();
        for handle in self.servers() {
            let ServerState::Ready(server) = handle.settled().await else {
                continue;
            };
            if !server.offers_prompts() {
                continue;
            }
            match server.list_prompts(&CancellationToken::new()).await {
                Ok(listing) => all.extend(
                    listing
                        .iter()
                        .filter_map(|entry| McpPrompt::from_listing(handle.name(), entry)),
                ),
                Err(err) => tracing::warn!(server = handle.name(), "cannot list prompts: {err}"),
            }
        }
        all.sort_by(|a, b| (&a.server, &a.name).cmp(&(&b.server, &b.name)));
        all
    }

    /// Fills in prompt `command` (`<server>:<prompt>`) with the arguments
    /// of `line` and returns the text to send as a user turn.
    pub async fn prompt_text(
        self: &Arc<Self>,
        command: &str,
        line: &str,
        cancel: &CancellationToken,
    ) -> Result<String, McpPromptError> {
        let (server_name, prompt_name) = command
            .split_once(':')
            .ok_or_else(|| McpPromptError::UnknownServer(command.to_owned()))?;
        let handle = self
            .servers()
            .iter()
            .find(|s| s.name() == server_name)
            .ok_or_else(|| McpPromptError::UnknownServer(server_name.to_owned()))?;
        let server = handle.server().await.map_err(McpPromptError::Server)?;
        let listing = server
            .list_prompts(cancel)
            .await
            .map_err(McpPromptError::Server)?;
        let prompt = listing
            .iter()
            .filter_map(|entry| McpPrompt::from_listing(server_name, entry))
            .find(|p| p.name == prompt_name)
            .ok_or_else(|| McpPromptError::UnknownPrompt {
                server: server_name.to_owned(),
                prompt: prompt_name.to_owned(),
            })?;
        let arguments = prompt.bind(line)?;
        let messages = server
            .get_prompt(prompt_name, &arguments, cancel)
            .await
            .map_err(McpPromptError::Server)?;
        let text = render_messages(&messages);
        if text.trim().is_empty() {
            return Err(McpPromptError::Empty(command.to_owned()));
        }
        Ok(text)
    }
}

/// The messages of a filled-in prompt as one text: the user messages'
/// content as it is, an assistant message marked as such, embedded text
/// resources with their URI, other content named.
fn render_messages(messages: &[Value]) -> String {
    let mut parts = Vec::new();
    for message in messages {
        let content = match message.get("content") {
            Some(Value::Array(items)) => items.iter().map(render_content).collect(),
            Some(item) => vec![render_content(item)],
            None => Vec::new(),
        };
        let text = content.join("\n\n");
        if text.trim().is_empty() {
            continue;
        }
        if message.get("role").and_then(Value::as_str) == Some("assistant") {
            parts.push(format!("(assistant) {text}"));
        } else {
            parts.push(text);
        }
    }
    parts.join("\n\n")
}

fn render_content(item: &Value) -> String {
    let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    match item.get("type").and_then(Value::as_str) {
        Some("text") => field(item, "text"),
        Some("resource") => {
            let resource = item.get("resource").cloned().unwrap_or(Value::Null);
            let uri = field(&resource, "uri");
            match resource.get("text").and_then(Value::as_str) {
                Some(text) => format!("{uri}:\n{text}"),
                None => format!("[resource {uri} ({})]", field(&resource, "mimeType")),
            }
        }
        Some("resource_link") => format!("[resource {}]", field(item, "uri")),
        Some(kind) => format!("[{kind}: {}]", field(item, "mimeType")),
        None => String::new(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn weather() -> McpPrompt {
        McpPrompt::from_listing(
            "ev",
            &json!({"name": "args-prompt", "title": "Arguments Prompt", "arguments": [
                {"name": "city", "description": "Name of the city", "required": true},
                {"name": "state", "description": "Name of the state"}
            ]}),
        )
        .unwrap()
    }

    #[test]
    fn a_listing_entry_becomes_a_command_with_its_usage() {
        let prompt = weather();
        assert_eq!(prompt.command(), "ev:args-prompt");
        assert_eq!(prompt.description, "Arguments Prompt");
        assert_eq!(prompt.usage(), "CITY [STATE]");
        assert!(McpPrompt::from_listing("ev", &json!({"title": "no name"})).is_none());
        assert!(McpPrompt::from_listing("ev", &json!({"name": "two words"})).is_none());
    }

    #[test]
    fn words_fill_the_arguments_in_order_or_by_name() {
        let prompt = weather();
        let bound = prompt.bind("Paris").unwrap();
        assert_eq!(bound, BTreeMap::from([("city".into(), "Paris".into())]));
        let bound = prompt.bind("Austin Texas of America").unwrap();
        assert_eq!(bound["city"], "Austin");
        assert_eq!(
            bound["state"], "Texas of America",
            "the last takes the rest"
        );
        let bound = prompt.bind("state=New York city=Buffalo").unwrap();
        assert_eq!(bound["state"], "New York");
        assert_eq!(bound["city"], "Buffalo");
    }

    #[test]
    fn a_missing_required_argument_or_extra_words_are_errors() {
        let prompt = weather();
        let err = prompt.bind("").unwrap_err();
        assert_eq!(
            err.to_string(),
            "/ev:args-prompt needs `city`: /ev:args-prompt CITY [STATE]"
        );
        assert!(matches!(
            prompt.bind("state=Texas"),
            Err(McpPromptError::MissingArgument { .. })
        ));
        let bare = McpPrompt::from_listing("ev", &json!({"name": "simple"})).unwrap();
        assert!(bare.bind("").unwrap().is_empty());
        assert!(matches!(
            bare.bind("extra"),
            Err(McpPromptError::TooManyWords { .. })
        ));
    }

    #[test]
    fn messages_render_to_one_text() {
        let text = render_messages(&[
            json!({"role": "user", "content": {"type": "text", "text": "Look at this:"}}),
            json!({"role": "user", "content": {"type": "resource", "resource": {"uri": "demo://a", "text": "A"}}}),
            json!({"role": "assistant", "content": {"type": "text", "text": "I see."}}),
            json!({"role": "user", "content": {"type": "image", "mimeType": "image/png", "data": "xx"}}),
        ]);
        assert_eq!(
            text,
            "Look at this:\n\ndemo://a:\nA\n\n(assistant) I see.\n\n[image: image/png]"
        );
    }
}
