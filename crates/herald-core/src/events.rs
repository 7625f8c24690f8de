use std::sync::Arc;

use herald_protocol::{Event, EventKind};

/// Where an agent's events go. Front ends pass a callback that renders or
/// forwards them; the agent never prints anything itself.
#[derive(Clone)]
pub struct EventSink {
    session_id: Arc<str>,
    agent_id: Arc<str>,
    emit: Arc<dyn Fn(Event) + Send + Sync>,
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSink")
            .field("session_id", &self.session_id)
            .field("agent_id", &self.agent_id)
            .finish()
    }
}

impl EventSink {
    /// A sink stamping events with `session_id`/`agent_id` and passing them to `emit`.
    pub fn new(
        session_id: &str,
        agent_id: &str,
        emit: impl Fn(Event) + Send + Sync + 'static,
    ) -> Self {
        Self {
            session_id: session_id.into(),
            agent_id: agent_id.into(),
            emit: Arc::new(emit),
        }
    }

    /// A sink that drops everything.
    pub fn discard() -> Self {
        Self::new("", "root", |_| {})
    }

    /// A sink with the same destination stamping other ids (a subagent's
    /// progress events reach the same output as its root's).
    pub fn for_agent(&self, session_id: &str, agent_id: &str) -> Self {
        Self {
            session_id: session_id.into(),
            agent_id: agent_id.into(),
            emit: Arc::clone(&self.emit),
        }
    }

    /// The agent events are stamped with.
    pub fn agent_id(&self) -> &str {
        &self.agent_id
    }

    /// The session events are stamped with.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Emits one event.
    pub fn emit(&self, kind: EventKind) {
        (self.emit)(Event::new(&self.session_id, &self.agent_id, kind));
    }
}
