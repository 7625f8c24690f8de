//! Finding a session or an agent by the start of its id, so a person can
//! type `ses_19a8f3c2b10` (or `19a8f3c2b10`) instead of the whole
//! `ses_19a8f3c2b10_3fa2c1`. Each lookup is a range scan of the table's
//! primary-key index (`id >= prefix AND id < prefix + U+10FFFF`), so it
//! costs the same however many sessions are stored.

use rusqlite::params;

use crate::error::{StoreError, sql};
use crate::store::Store;

/// How many candidates an ambiguous prefix reports.
pub const PREFIX_CANDIDATES: usize = 5;

/// Session ids begin with one of these (`ses_` from the runtime, `imp_`
/// from `herald sessions import`); a prefix typed without one is tried
/// with each.
const SESSION_KINDS: &[&str] = &["ses_", "imp_"];

/// Agent ids begin with this.
const AGENT_KINDS: &[&str] = &["ag_"];

/// What a typed id (whole, or the start of one) names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdMatch {
    /// One id: the text is that id, or the start of no other.
    One(String),
    /// Several ids start with the text: the first [`PREFIX_CANDIDATES`] in
    /// id order, and whether more exist. The caller asks for more characters.
    Ambiguous {
        /// The first matching ids, sorted.
        candidates: Vec<String>,
        /// More ids than `candidates` match.
        more: bool,
    },
    /// No id is or starts with the text.
    NoMatch,
}

/// The tables whose primary key is an id a person types.
#[derive(Debug, Clone, Copy)]
enum IdTable {
    Sessions,
    Agents,
}

impl IdTable {
    fn name(self) -> &'static str {
        match self {
            IdTable::Sessions => "sessions",
            IdTable::Agents => "agents",
        }
    }

    fn kinds(self) -> &'static [&'static str] {
        match self {
            IdTable::Sessions => SESSION_KINDS,
            IdTable::Agents => AGENT_KINDS,
        }
    }
}

impl Store {
    /// The session `text` names: its whole id, a unique start of it, or a
    /// unique start without the `ses_`/`imp_` kind (`19a8f3c2` for
    /// `ses_19a8f3c2…`). Subagent sessions count too.
    pub fn resolve_session_id(&self, text: &str) -> Result<IdMatch, StoreError> {
        self.resolve_id(IdTable::Sessions, text)
    }

    /// The agent `text` names: its whole id, a unique start of it, or a
    /// unique start without the `ag_` kind.
    pub fn resolve_agent_id(&self, text: &str) -> Result<IdMatch, StoreError> {
        self.resolve_id(IdTable::Agents, text)
    }

    fn resolve_id(&self, table: IdTable, text: &str) -> Result<IdMatch, StoreError> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(IdMatch::NoMatch);
        }
        let exact = format!("SELECT id FROM {} WHERE id = ?1", table.name());
        let found = self
            .conn
            .prepare_cached(&exact)
            .and_then(|mut stmt| stmt.exists([text]))
            .map_err(sql(&self.path, "looking up an id"))?;
        if found {
            return Ok(IdMatch::One(text.to_owned()));
        }
        let mut prefixes = vec![text.to_owned()];
        if !table.kinds().iter().any(|kind| text.starts_with(kind)) {
            prefixes.extend(table.kinds().iter().map(|kind| format!("{kind}{text}")));
        }
        let mut ids = Vec::new();
        for prefix in &prefixes {
            ids.extend(self.ids_starting_with(table, prefix)?);
        }
        ids.sort();
        ids.dedup();
        Ok(match ids.len() {
            0 => IdMatch::NoMatch,
            1 => IdMatch::One(ids.remove(0)),
            n => {
                ids.truncate(PREFIX_CANDIDATES);
                IdMatch::Ambiguous {
                    candidates: ids,
                    more: n > PREFIX_CANDIDATES,
                }
            }
        })
    }

    /// Up to one more id than [`PREFIX_CANDIDATES`] that start with
    /// `prefix`, through the primary-key index.
    fn ids_starting_with(&self, table: IdTable, prefix: &str) -> Result<Vec<String>, StoreError> {
        let query = format!(
            "SELECT id FROM {} WHERE id >= ?1 AND id < ?2 ORDER BY id LIMIT ?3",
            table.name()
        );
        // Ids are ASCII: every id starting with `prefix` sorts below
        // `prefix` followed by the largest code point.
        let upper = format!("{prefix}\u{10FFFF}");
        let limit = i64::try_from(PREFIX_CANDIDATES + 1).unwrap_or(i64::MAX);
        let mut stmt = self
            .conn
            .prepare_cached(&query)
            .map_err(sql(&self.path, "looking up an id prefix"))?;
        let rows = stmt
            .query_map(params![prefix, upper, limit], |row| row.get::<_, String>(0))
            .map_err(sql(&self.path, "looking up an id prefix"))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(sql(&self.path, "looking up an id prefix"))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::{NewSession, SessionSource};

    fn session(store: &mut Store, id: &str) {
        store
            .create_session(&NewSession {
                id: id.to_owned(),
                parent_session_id: None,
                agent_id: Some("root".to_owned()),
                source: SessionSource::Cli,
                cwd: "/w".to_owned(),
                model: "m".to_owned(),
                provider: "openai".to_owned(),
                system_prompt: "s".to_owned(),
            })
            .unwrap();
    }

    #[test]
    fn whole_ids_unique_prefixes_and_prefixes_without_the_kind_resolve() {
        let mut store = Store::open_in_memory().unwrap();
        session(&mut store, "ses_19a8f3c2b10_3fa2c1");
        session(&mut store, "ses_19a8f3c2b10_3fa2c2");
        session(&mut store, "ses_19b000000aa_000001");
        session(&mut store, "imp_19c0000000a_00000001");
        let one = |id: &str| IdMatch::One(id.to_owned());
        assert_eq!(
            store.resolve_session_id("ses_19a8f3c2b10_3fa2c1").unwrap(),
            one("ses_19a8f3c2b10_3fa2c1")
        );
        assert_eq!(
            store.resolve_session_id("ses_19b").unwrap(),
            one("ses_19b000000aa_000001")
        );
        assert_eq!(
            store.resolve_session_id("19b0").unwrap(),
            one("ses_19b000000aa_000001")
        );
        assert_eq!(
            store.resolve_session_id("19c").unwrap(),
            one("imp_19c0000000a_00000001")
        );
        assert_eq!(
            store.resolve_session_id("ses_19a8f3c2b10_3fa2c").unwrap(),
            IdMatch::Ambiguous {
                candidates: vec![
                    "ses_19a8f3c2b10_3fa2c1".to_owned(),
                    "ses_19a8f3c2b10_3fa2c2".to_owned()
                ],
                more: false
            }
        );
        // Without the kind, matches of every kind count.
        assert!(matches!(
            store.resolve_session_id("19").unwrap(),
            IdMatch::Ambiguous { ref candidates, more: false } if candidates.len() == 4
        ));
        assert_eq!(store.resolve_session_id("ses_2").unwrap(), IdMatch::NoMatch);
        assert_eq!(store.resolve_session_id("").unwrap(), IdMatch::NoMatch);
        // LIKE wildcards are plain characters here.
        assert_eq!(store.resolve_session_id("ses_%").unwrap(), IdMatch::NoMatch);
    }

    #[test]
    fn agent_ids_resolve_by_prefix_with_or_without_ag() {
        let mut store = Store::open_in_memory().unwrap();
        for id in ["ag_19a0_11", "ag_19a0_12", "ag_19b0_13"] {
            store
                .insert_agent(&crate::NewAgent {
                    id: id.to_owned(),
                    parent_agent_id: "root".to_owned(),
                    parent_session_id: "ses_p".to_owned(),
                    root_session_id: "ses_p".to_owned(),
                    session_id: format!("ses_of_{id}"),
                    depth: 1,
                    role: "leaf".to_owned(),
                    goal: "g".to_owned(),
                    context: None,
                    background: false,
                    model: "m".to_owned(),
                    spec: "{}".to_owned(),
                    call_id: None,
                })
                .unwrap();
        }
        assert_eq!(
            store.resolve_agent_id("19b").unwrap(),
            IdMatch::One("ag_19b0_13".to_owned())
        );
        assert_eq!(
            store.resolve_agent_id("ag_19a0_12").unwrap(),
            IdMatch::One("ag_19a0_12".to_owned())
        );
        assert!(matches!(
            store.resolve_agent_id("ag_19a").unwrap(),
            IdMatch::Ambiguous { ref candidates, .. } if candidates.len() == 2
        ));
        // Session ids are not agent ids.
        assert_eq!(store.resolve_agent_id("ses_p").unwrap(), IdMatch::NoMatch);
    }

    #[test]
    fn an_ambiguous_prefix_reports_the_first_few_and_that_there_are_more() {
        let mut store = Store::open_in_memory().unwrap();
        for i in 0..8 {
            session(&mut store, &format!("ses_abc_{i}"));
        }
        let IdMatch::Ambiguous { candidates, more } = store.resolve_session_id("ses_abc").unwrap()
        else {
            panic!("expected an ambiguous match");
        };
        assert_eq!(candidates.len(), PREFIX_CANDIDATES);
        assert_eq!(candidates[0], "ses_abc_0");
        assert!(more);
    }

    #[test]
    fn prefix_lookups_search_the_primary_key_index() {
        let store = Store::open_in_memory().unwrap();
        for table in ["sessions", "agents"] {
            let plan: String = store
                .conn
                .query_row(
                    &format!(
                        "EXPLAIN QUERY PLAN SELECT id FROM {table} WHERE id >= ?1 AND id < ?2 ORDER BY id LIMIT ?3"
                    ),
                    params!["a", "b", 6],
                    |row| row.get(3),
                )
                .unwrap();
            assert!(
                plan.starts_with("SEARCH") && plan.contains("INDEX") && plan.contains("id>?"),
                "{table}: {plan}"
            );
        }
    }
}
