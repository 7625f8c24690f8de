//! Model routing (`[routing]`): which model does which work. Rules pick a
//! model, with its own fallback chain, by role (`root`, `child`, `summary`,
//! `title`, `memory_flush`, `judge`), by agent definition and by toolset;
//! a long conversation moves to a long-window model before it would be
//! compacted; private work (`private = true` on the project or a task) may
//! only use models marked local; and `delegate_task` may name a model only
//! from an allow-list. Every choice carries its reason, sent as a
//! `model.routed` event.

use serde::{Deserialize, Serialize};

/// What a model is being chosen for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The session's top-level agent.
    Root,
    /// A subagent started by `delegate_task`.
    Child,
    /// Compaction summaries.
    Summary,
    /// Session titles.
    Title,
    /// The memory flush at the end of a session.
    MemoryFlush,
    /// Judged checks of an evaluation.
    Judge,
}

impl Role {
    /// The role's word in `[routing]` and events.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Root => "root",
            Self::Child => "child",
            Self::Summary => "summary",
            Self::Title => "title",
            Self::MemoryFlush => "memory_flush",
            Self::Judge => "judge",
        }
    }
}

/// One `[[routing.rules]]` entry: when every condition it sets holds, use
/// `model` (then `fallback`, in order, when it fails).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteRule {
    pub role: Option<Role>,
    /// An agent definition's name (children started from it).
    pub agent: Option<String>,
    /// A toolset the work gets (children whose `toolsets` include it).
    pub toolset: Option<String>,
    pub model: String,
    #[serde(default)]
    pub fallback: Vec<String>,
}

/// `[routing]` as written in `config.toml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RoutingConfig {
    /// Models `delegate_task` may name with its `model` argument (none by
    /// default: children use the routes below).
    pub allow_models: Vec<String>,
    /// Models that run on this machine: the only ones private work may use.
    pub local_models: Vec<String>,
    /// Everything in this project is private (local models only).
    pub private: bool,
    /// The long-window model a conversation moves to when its estimated
    /// context passes `long_context_tokens` (before compaction would run).
    pub long_context_model: String,
    /// 0 = never move.
    pub long_context_tokens: u64,
    /// The first rule whose conditions all hold chooses the model.
    pub rules: Vec<RouteRule>,
}

impl<'a> Facts<'a> {
    /// Work of `role` with no agent, toolset, privacy flag or named model.
    pub fn role(role: Role) -> Self {
        Self {
            role,
            agent: None,
            toolsets: &[],
            private: false,
            requested: None,
        }
    }
}

/// The route `[routing]` gives the session-level work of `role` (root,
/// summary, title, memory flush, judge) in place of `default`.
pub fn side_route(
    settings: &crate::config::Settings,
    role: Role,
    default: &str,
) -> Result<Option<Route>, RouteError> {
    settings.routing.choose(&Facts::role(role), default)
}

/// A client for `route` on the session's endpoint (its credential pool
/// and network settings), with the route's fallback models in order.
pub fn route_client(
    settings: &crate::config::Settings,
    route: &Route,
) -> Result<herald_llm::LlmClient, herald_llm::LlmError> {
    let build = |model: &str| {
        herald_llm::LlmClient::new(herald_llm::ClientConfig {
            model: model.to_owned(),
            ..settings.client_config()
        })
        .map(|client| client.with_keys(settings.api_keys.clone()))
    };
    let fallbacks = route
        .fallback
        .iter()
        .map(|m| build(m))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(build(&route.model)?.with_fallbacks(fallbacks, settings.fallback_cooldown))
}

/// What a choice is made from.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    pub role: Role,
    /// The agent definition a child is started from.
    pub agent: Option<&'a str>,
    /// The toolsets the work gets (empty: all of its parent's).
    pub toolsets: &'a [String],
    /// The task is marked private (the project's flag counts too).
    pub private: bool,
    /// A model the caller named (`delegate_task`'s `model`).
    pub requested: Option<&'a str>,
}

/// A chosen model and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Route {
    pub model: String,
    pub fallback: Vec<String>,
    pub reason: String,
}

/// Why no model may do the work (the text says what to change).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RouteError {
    #[error(
        "model \"{model}\" is not in [routing] allow_models ({allowed}); name one of those, or leave model out"
    )]
    NotAllowed { model: String, allowed: String },
    #[error(
        "this work is private and \"{model}\" is not in [routing] local_models ({local}); use a local model"
    )]
    NotLocal { model: String, local: String },
    #[error(
        "this work is private and [routing] local_models is empty; add the models that run on this machine"
    )]
    NoLocalModel,
}

impl RoutingConfig {
    /// Checks the section: rules need a model; roles of rules with `agent`
    /// or `toolset` can only be `child`.
    pub fn check(&self) -> Result<(), String> {
        for (i, rule) in self.rules.iter().enumerate() {
            if rule.model.trim().is_empty() {
                return Err(format!(
                    "[[routing.rules]] #{}: model is empty; name the model this rule chooses",
                    i + 1
                ));
            }
            let child_only = rule.agent.is_some() || rule.toolset.is_some();
            if child_only && rule.role.is_some_and(|r| r != Role::Child) {
                return Err(format!(
                    "[[routing.rules]] #{}: agent and toolset match subagents only; set role = \"child\" or remove them",
                    i + 1
                ));
            }
        }
        if self.long_context_tokens > 0 && self.long_context_model.trim().is_empty() {
            return Err(
                "[routing] long_context_tokens is set but long_context_model is empty; name the long-window model"
                    .to_owned(),
            );
        }
        Ok(())
    }

    /// Whether any routing is configured.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The model for `facts`, or `None` when nothing routes it (the usual
    /// model, `default`, does the work).
    pub fn choose(&self, facts: &Facts<'_>, default: &str) -> Result<Option<Route>, RouteError> {
        let private = facts.private || self.private;
        if let Some(model) = facts.requested {
            if !self.allow_models.iter().any(|m| m == model) {
                return Err(RouteError::NotAllowed {
                    model: model.to_owned(),
                    allowed: list_or_none(&self.allow_models),
                });
            }
            self.must_be_local(private, model)?;
            return Ok(Some(Route {
                model: model.to_owned(),
                fallback: Vec::new(),
                reason: "named by delegate_task (in [routing] allow_models)".to_owned(),
            }));
        }
        let matching = self
            .rules
            .iter()
            .enumerate()
            .filter(|(_, rule)| rule.matches(facts))
            .find(|(_, rule)| !private || self.is_local(&rule.model));
        if let Some((i, rule)) = matching {
            return Ok(Some(Route {
                model: rule.model.clone(),
                fallback: rule
                    .fallback
                    .iter()
                    .filter(|m| !private || self.is_local(m))
                    .cloned()
                    .collect(),
                reason: format!("[[routing.rules]] #{}: {}", i + 1, rule.describe()),
            }));
        }
        if private && !self.is_local(default) {
            let Some(local) = self.local_models.first() else {
                return Err(RouteError::NoLocalModel);
            };
            return Ok(Some(Route {
                model: local.clone(),
                fallback: self.local_models[1..].to_vec(),
                reason: format!(
                    "private work: \"{default}\" is not local, so the first of [routing] local_models"
                ),
            }));
        }
        Ok(None)
    }

    /// The long-window route once a conversation's estimated context is
    /// `tokens` on `current`, if it should move (not for private work on a
    /// model that is not local).
    pub fn long_context(&self, tokens: u64, current: &str, private: bool) -> Option<Route> {
        let model = self.long_context_model.trim();
        if self.long_context_tokens == 0 || tokens < self.long_context_tokens || model == current {
            return None;
        }
        if (private || self.private) && !self.is_local(model) {
            return None;
        }
        Some(Route {
            model: model.to_owned(),
            fallback: Vec::new(),
            reason: format!(
                "the conversation reached about {tokens} tokens, past [routing] long_context_tokens = {}",
                self.long_context_tokens
            ),
        })
    }

    /// What `herald config show` and `herald context` list: one line per
    /// route.
    pub fn describe(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .rules
            .iter()
            .enumerate()
            .map(|(i, rule)| {
                let fallback = if rule.fallback.is_empty() {
                    String::new()
                } else {
                    format!(" (then {})", rule.fallback.join(", "))
                };
                format!("#{} {} -> {}{fallback}", i + 1, rule.describe(), rule.model)
            })
            .collect();
        if self.long_context_tokens > 0 {
            lines.push(format!(
                "context >= {} tokens -> {}",
                self.long_context_tokens, self.long_context_model
            ));
        }
        if !self.allow_models.is_empty() {
            lines.push(format!(
                "delegate_task may name: {}",
                self.allow_models.join(", ")
            ));
        }
        if self.private || !self.local_models.is_empty() {
            lines.push(format!(
                "local models: {}{}",
                list_or_none(&self.local_models),
                if self.private {
                    " (private project: only these)"
                } else {
                    ""
                }
            ));
        }
        lines
    }

    fn is_local(&self, model: &str) -> bool {
        self.local_models.iter().any(|m| m == model)
    }

    /// Refuses `model` for private work (`private`, or the project's
    /// flag) when it is not local.
    pub fn must_be_local(&self, private: bool, model: &str) -> Result<(), RouteError> {
        let private = private || self.private;
        if !private || self.is_local(model) {
            return Ok(());
        }
        if self.local_models.is_empty() {
            return Err(RouteError::NoLocalModel);
        }
        Err(RouteError::NotLocal {
            model: model.to_owned(),
            local: list_or_none(&self.local_models),
        })
    }
}

impl RouteRule {
    fn matches(&self, facts: &Facts<'_>) -> bool {
        let role = match self.role {
            Some(role) => role == facts.role,
            // Agent and toolset conditions describe children.
            None => !(self.agent.is_some() || self.toolset.is_some()) || facts.role == Role::Child,
        };
        let agent = self
            .agent
            .as_deref()
            .is_none_or(|name| facts.agent == Some(name));
        let toolset = self
            .toolset
            .as_deref()
            .is_none_or(|set| facts.toolsets.iter().any(|s| s == set));
        role && agent && toolset
    }

    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(role) = self.role {
            parts.push(format!("role {}", role.as_str()));
        }
        if let Some(agent) = &self.agent {
            parts.push(format!("agent {agent}"));
        }
        if let Some(toolset) = &self.toolset {
            parts.push(format!("toolset {toolset}"));
        }
        if parts.is_empty() {
            "any work".to_owned()
        } else {
            parts.join(", ")
        }
    }
}

fn list_or_none(models: &[String]) -> String {
    if models.is_empty() {
        "none".to_owned()
    } else {
        models.join(", ")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn config() -> RoutingConfig {
        toml::from_str(
            r#"
allow_models = ["big", "tiny"]
local_models = ["llama"]
long_context_model = "wide"
long_context_tokens = 1000
[[rules]]
role = "child"
agent = "reviewer"
model = "careful"
fallback = ["careful-2"]
[[rules]]
toolset = "web"
model = "researcher"
[[rules]]
role = "summary"
model = "tiny"
[[rules]]
role = "child"
model = "llama"
"#,
        )
        .unwrap()
    }

    fn facts(role: Role) -> Facts<'static> {
        Facts {
            role,
            agent: None,
            toolsets: &[],
            private: false,
            requested: None,
        }
    }

    #[test]
    fn the_first_matching_rule_chooses_with_its_reason() {
        let c = config();
        c.check().unwrap();
        let reviewer = c
            .choose(
                &Facts {
                    agent: Some("reviewer"),
                    ..facts(Role::Child)
                },
                "m",
            )
            .unwrap()
            .unwrap();
        assert_eq!(reviewer.model, "careful");
        assert_eq!(reviewer.fallback, ["careful-2"]);
        assert!(reviewer.reason.contains("#1"), "{}", reviewer.reason);
        let web = ["web".to_owned()];
        let researcher = c
            .choose(
                &Facts {
                    toolsets: &web,
                    ..facts(Role::Child)
                },
                "m",
            )
            .unwrap()
            .unwrap();
        assert_eq!(researcher.model, "researcher");
        assert_eq!(
            c.choose(&facts(Role::Summary), "m").unwrap().unwrap().model,
            "tiny"
        );
        assert_eq!(
            c.choose(&facts(Role::Child), "m").unwrap().unwrap().model,
            "llama"
        );
        // Toolset rules describe children: the root's summary does not match.
        assert_eq!(c.choose(&facts(Role::Title), "m").unwrap(), None);
    }

    #[test]
    fn named_models_must_be_allowed_and_private_work_stays_local() {
        let c = config();
        let named = |model| Facts {
            requested: Some(model),
            ..facts(Role::Child)
        };
        assert_eq!(c.choose(&named("big"), "m").unwrap().unwrap().model, "big");
        let err = c.choose(&named("huge"), "m").unwrap_err();
        assert!(
            err.to_string().contains("allow_models (big, tiny)"),
            "{err}"
        );
        let private = Facts {
            private: true,
            agent: Some("reviewer"),
            ..facts(Role::Child)
        };
        // The reviewer's rule is not local: the local rule wins.
        assert_eq!(c.choose(&private, "m").unwrap().unwrap().model, "llama");
        let err = c
            .choose(
                &Facts {
                    private: true,
                    ..named("big")
                },
                "m",
            )
            .unwrap_err();
        assert!(matches!(err, RouteError::NotLocal { .. }), "{err}");
        // Nothing matches a private title: the first local model does it.
        let title = c
            .choose(
                &Facts {
                    private: true,
                    ..facts(Role::Title)
                },
                "m",
            )
            .unwrap()
            .unwrap();
        assert_eq!(title.model, "llama");
        let none = RoutingConfig {
            private: true,
            ..RoutingConfig::default()
        };
        assert_eq!(
            none.choose(&facts(Role::Root), "m").unwrap_err(),
            RouteError::NoLocalModel
        );
    }

    #[test]
    fn long_conversations_move_to_the_wide_model_once() {
        let c = config();
        assert_eq!(c.long_context(999, "m", false), None);
        assert_eq!(c.long_context(1000, "m", false).unwrap().model, "wide");
        assert_eq!(c.long_context(5000, "wide", false), None);
        assert_eq!(c.long_context(5000, "m", true), None);
    }

    #[test]
    fn bad_sections_say_what_to_fix() {
        let empty: RoutingConfig = toml::from_str("[[rules]]\nmodel = \" \"\n").unwrap();
        assert!(empty.check().unwrap_err().contains("model is empty"));
        let wrong: RoutingConfig =
            toml::from_str("[[rules]]\nrole = \"summary\"\nagent = \"x\"\nmodel = \"m\"\n")
                .unwrap();
        assert!(wrong.check().unwrap_err().contains("role = \"child\""));
        let wide: RoutingConfig = toml::from_str("long_context_tokens = 5\n").unwrap();
        assert!(wide.check().unwrap_err().contains("long_context_model"));
        assert!(
            toml::from_str::<RoutingConfig>("[[rules]]\nrole = \"boss\"\nmodel = \"m\"\n").is_err()
        );
    }
}
