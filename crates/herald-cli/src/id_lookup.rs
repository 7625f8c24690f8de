//! Session and agent ids typed on the command line: the whole id or a
//! unique start of it (`ses_19a8f3c2b10`, or `19a8f3c2b10` without the
//! kind). An ambiguous start is a usage error naming the candidates; an
//! unknown one is passed on unchanged, so each command reports it as it
//! always has. Only the command line resolves prefixes: the HTTP API keeps
//! exact ids.

use herald_core::StoreHandle;
use herald_store::IdMatch;

use crate::CliError;
use crate::sessions_cmd::call;

/// The session id `text` names (see the module documentation).
pub(crate) async fn session_id(store: &StoreHandle, text: &str) -> Result<String, CliError> {
    let typed = text.to_owned();
    let found = call(store, move |s| s.resolve_session_id(&typed)).await?;
    settle(found, text, "session")
}

/// The agent id `text` names (see the module documentation).
pub(crate) async fn agent_id(store: &StoreHandle, text: &str) -> Result<String, CliError> {
    let typed = text.to_owned();
    let found = call(store, move |s| s.resolve_agent_id(&typed)).await?;
    settle(found, text, "agent")
}

fn settle(found: IdMatch, text: &str, what: &str) -> Result<String, CliError> {
    match found {
        IdMatch::One(id) => Ok(id),
        IdMatch::NoMatch => Ok(text.to_owned()),
        IdMatch::Ambiguous { candidates, more } => Err(CliError::usage(anyhow::anyhow!(
            "'{text}' is the start of several {what} ids: {}{}; type more characters of the id",
            candidates.join(", "),
            if more { ", …" } else { "" }
        ))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_ambiguous_prefix_names_the_candidates_and_what_to_do() {
        let err = settle(
            IdMatch::Ambiguous {
                candidates: vec!["ses_a1".into(), "ses_a2".into()],
                more: true,
            },
            "ses_a",
            "session",
        )
        .unwrap_err();
        assert_eq!(err.exit, crate::Exit::Usage);
        let text = err.error.to_string();
        assert!(text.contains("ses_a1, ses_a2, …"), "{text}");
        assert!(text.contains("type more characters"), "{text}");
        assert_eq!(
            settle(IdMatch::NoMatch, "ses_x", "session").unwrap(),
            "ses_x"
        );
        assert_eq!(
            settle(IdMatch::One("ses_full".into()), "ses_f", "session").unwrap(),
            "ses_full"
        );
    }
}
