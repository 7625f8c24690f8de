//! Checkpoints (schema v14): one row per user turn of a session, naming the
//! snapshot of the working tree taken before the turn and how many stored
//! messages preceded it, so a rewind can put both back. The snapshots
//! themselves live in a shadow git repository (herald-core's
//! `checkpoints` module); this is only their index.

use crate::write_unit::WriteUnit;
use herald_protocol::Message;
use rusqlite::{OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};

use crate::error::{StoreError, sql};
use crate::messages::{MESSAGE_COLUMNS, insert_messages, query_messages};
use crate::records::StoredMessage;
use crate::sessions::require_session;
use crate::store::{Store, now_ms, to_i64, to_u64};

/// A checkpoint about to be recorded, before user turn `turn` starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCheckpoint {
    pub session_id: String,
    /// The user turn this checkpoint precedes (1-based).
    pub turn: u32,
    /// Stored messages of the session before the turn.
    pub message_count: u64,
    /// The working tree the snapshot is of.
    pub cwd: String,
    /// The snapshot commit in the shadow repository; `None` when none was taken.
    pub commit_id: Option<String>,
    /// Why no snapshot was taken (with `commit_id` `None`).
    pub note: Option<String>,
}

/// What a turn changed in the working tree: its end snapshot and the
/// difference to the snapshot before it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeStats {
    pub files_changed: u64,
    pub insertions: u64,
    pub deletions: u64,
}

/// A stored checkpoint, as `herald checkpoints list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointRecord {
    pub id: i64,
    pub session_id: String,
    pub turn: u32,
    pub message_count: u64,
    pub cwd: String,
    pub commit_id: Option<String>,
    /// The snapshot at the end of the turn (`None` while it runs, or when
    /// no snapshot was taken).
    pub end_commit_id: Option<String>,
    /// What the turn changed (end snapshot against `commit_id`).
    pub changes: ChangeStats,
    pub note: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    /// When a rewind to this turn or an earlier one left it out of the
    /// conversation; `None` while the turn is part of it.
    pub rewound_at: Option<i64>,
    /// The first user message of the turn (the prompt), when stored.
    pub prompt: Option<String>,
}

const COLUMNS: &str = "c.id, c.session_id, c.turn, c.message_count, c.cwd, c.commit_id, \
     c.end_commit_id, c.files_changed, c.insertions, c.deletions, c.note, c.created_at, \
     c.rewound_at, m.content";

/// `checkpoints` joined with the turn's first message (the prompt).
const FROM: &str = "FROM checkpoints c LEFT JOIN messages m \
     ON m.session_id = c.session_id AND m.seq = c.message_count + 1 AND m.role = 'user'";

fn from_row(row: &Row<'_>) -> rusqlite::Result<CheckpointRecord> {
    Ok(CheckpointRecord {
        id: row.get(0)?,
        session_id: row.get(1)?,
        turn: u32::try_from(row.get::<_, i64>(2)?).unwrap_or(0),
        message_count: to_u64(row.get(3)?),
        cwd: row.get(4)?,
        commit_id: row.get(5)?,
        end_commit_id: row.get(6)?,
        changes: ChangeStats {
            files_changed: to_u64(row.get(7)?),
            insertions: to_u64(row.get(8)?),
            deletions: to_u64(row.get(9)?),
        },
        note: row.get(10)?,
        created_at: row.get(11)?,
        rewound_at: row.get(12)?,
        prompt: row.get(13)?,
    })
}

impl Store {
    /// Records the checkpoint before a turn and returns its id. A live row
    /// of the same or a later turn (left by a rewind that did not reach the
    /// store) is marked rewound first, so only one row per turn is live.
    pub fn add_checkpoint(&mut self, new: &NewCheckpoint) -> Result<i64, StoreError> {
        const CTX: &str = "recording a checkpoint";
        let path = &self.path;
        let tx = WriteUnit::begin(&self.conn).map_err(sql(path, CTX))?;
        require_session(&tx, path, &new.session_id)?;
        let now = now_ms();
        tx.prepare_cached(
            "UPDATE checkpoints SET rewound_at = ?3 \
             WHERE session_id = ?1 AND turn >= ?2 AND rewound_at IS NULL",
        )
        .and_then(|mut s| s.execute(params![new.session_id, new.turn, now]))
        .map_err(sql(path, CTX))?;
        let id = tx
            .prepare_cached(
                "INSERT INTO checkpoints (session_id, turn, message_count, cwd, commit_id, note, \
                 created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
            )
            .and_then(|mut s| {
                s.query_row(
                    params![
                        new.session_id,
                        new.turn,
                        to_i64(new.message_count),
                        new.cwd,
                        new.commit_id,
                        new.note,
                        now
                    ],
                    |r| r.get(0),
                )
            })
            .map_err(sql(path, CTX))?;
        tx.commit().map_err(sql(path, CTX))?;
        Ok(id)
    }

    /// Records the snapshot taken for checkpoint `id` (it is taken while
    /// the turn starts), or why there is none.
    pub fn set_checkpoint_snapshot(
        &mut self,
        id: i64,
        commit_id: Option<&str>,
        note: Option<&str>,
    ) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("UPDATE checkpoints SET commit_id = ?2, note = ?3 WHERE id = ?1")
            .and_then(|mut s| s.execute(params![id, commit_id, note]))
            .map_err(sql(&self.path, "recording a checkpoint's snapshot"))?;
        Ok(())
    }

    /// Records the end of checkpoint `id`'s turn: the snapshot after it
    /// and what the turn changed.
    pub fn finish_checkpoint(
        &mut self,
        id: i64,
        end_commit_id: Option<&str>,
        changes: ChangeStats,
    ) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "UPDATE checkpoints SET end_commit_id = ?2, files_changed = ?3, insertions = ?4, \
                 deletions = ?5 WHERE id = ?1",
            )
            .and_then(|mut s| {
                s.execute(params![
                    id,
                    end_commit_id,
                    to_i64(changes.files_changed),
                    to_i64(changes.insertions),
                    to_i64(changes.deletions)
                ])
            })
            .map_err(sql(&self.path, "recording the end of a checkpoint"))?;
        Ok(())
    }

    /// The checkpoints of a session by turn, oldest first: the live ones,
    /// or with `include_rewound` also those a rewind left out.
    pub fn checkpoints(
        &self,
        session_id: &str,
        include_rewound: bool,
    ) -> Result<Vec<CheckpointRecord>, StoreError> {
        require_session(&self.conn, &self.path, session_id)?;
        let filter = if include_rewound {
            ""
        } else {
            "AND c.rewound_at IS NULL"
        };
        self.conn
            .prepare(&format!(
                "SELECT {COLUMNS} {FROM} WHERE c.session_id = ?1 {filter} ORDER BY c.turn, c.id"
            ))
            .and_then(|mut s| {
                s.query_map([session_id], from_row)?
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(sql(&self.path, "reading checkpoints"))
    }

    /// The live checkpoint before user turn `turn` of a session, if any.
    pub fn checkpoint_for_turn(
        &self,
        session_id: &str,
        turn: u32,
    ) -> Result<Option<CheckpointRecord>, StoreError> {
        require_session(&self.conn, &self.path, session_id)?;
        self.conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} {FROM} WHERE c.session_id = ?1 AND c.turn = ?2 \
                 AND c.rewound_at IS NULL"
            ))
            .and_then(|mut s| s.query_row(params![session_id, turn], from_row).optional())
            .map_err(sql(&self.path, "reading a checkpoint"))
    }

    /// The highest live turn with a checkpoint (0 when none).
    pub fn last_checkpoint_turn(&self, session_id: &str) -> Result<u32, StoreError> {
        let last: Option<i64> = self
            .conn
            .prepare_cached(
                "SELECT max(turn) FROM checkpoints WHERE session_id = ?1 AND rewound_at IS NULL",
            )
            .and_then(|mut s| s.query_row([session_id], |r| r.get(0)))
            .map_err(sql(&self.path, "reading checkpoints"))?;
        Ok(last.map_or(0, |t| u32::try_from(t).unwrap_or(0)))
    }

    /// How many messages a session has stored (its next message's
    /// position minus one).
    pub fn stored_message_count(&self, session_id: &str) -> Result<u64, StoreError> {
        let last: Option<i64> = self
            .conn
            .prepare_cached("SELECT max(seq) FROM messages WHERE session_id = ?1")
            .and_then(|mut s| s.query_row([session_id], |r| r.get(0)))
            .map_err(sql(&self.path, "counting messages"))?;
        Ok(last.map_or(0, to_u64))
    }

    /// The first `count` stored messages of a session, in order.
    pub fn messages_up_to(
        &self,
        session_id: &str,
        count: u64,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        require_session(&self.conn, &self.path, session_id)?;
        query_messages(
            &self.conn,
            &self.path,
            &format!(
                "SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ?1 AND seq <= ?2 \
                 ORDER BY seq"
            ),
            params![session_id, to_i64(count)],
        )
    }

    /// Rewinds a session's conversation to before user turn `turn`, in one
    /// transaction and without deleting anything: `record` (the rewind
    /// marker) and `history` (the conversation as it was before the turn)
    /// are appended, so resuming starts after the marker, and the
    /// checkpoints of turns `turn` and later are marked rewound. Returns
    /// how many messages were appended.
    pub fn rewind_conversation(
        &mut self,
        session_id: &str,
        turn: u32,
        record: &Message,
        history: &[Message],
    ) -> Result<usize, StoreError> {
        const CTX: &str = "rewinding the conversation";
        let path = &self.path;
        let tx = WriteUnit::begin(&self.conn).map_err(sql(path, CTX))?;
        let mut rows = Vec::with_capacity(history.len() + 1);
        rows.push(record.clone());
        rows.extend_from_slice(history);
        let ids = insert_messages(&tx, path, session_id, &rows)?;
        tx.prepare_cached(
            "UPDATE checkpoints SET rewound_at = ?3 \
             WHERE session_id = ?1 AND turn >= ?2 AND rewound_at IS NULL",
        )
        .and_then(|mut s| s.execute(params![session_id, turn, now_ms()]))
        .map_err(sql(path, CTX))?;
        tx.commit().map_err(sql(path, CTX))?;
        Ok(ids.len())
    }
}

/// What the remaining checkpoints still need from the shadow
/// repositories, for pruning: every snapshot a row names and every session
/// that has a row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckpointReferences {
    /// Commit ids (`commit_id` and `end_commit_id` of every row).
    pub commits: std::collections::HashSet<String>,
    /// Sessions with at least one checkpoint row.
    pub sessions: std::collections::HashSet<String>,
}

impl Store {
    /// Deletes every checkpoint recorded before `cutoff_ms` (Unix
    /// milliseconds), rewound or not, and returns how many went. Their
    /// turns can no longer be rewound; the conversation is untouched.
    pub fn delete_checkpoints_before(&mut self, cutoff_ms: i64) -> Result<u64, StoreError> {
        let deleted = self
            .conn
            .prepare_cached("DELETE FROM checkpoints WHERE created_at < ?1")
            .and_then(|mut s| s.execute([cutoff_ms]))
            .map_err(sql(&self.path, "pruning checkpoints"))?;
        Ok(deleted as u64)
    }

    /// The snapshots and sessions the stored checkpoints refer to.
    pub fn checkpoint_references(&self) -> Result<CheckpointReferences, StoreError> {
        let mut references = CheckpointReferences::default();
        let mut statement = self
            .conn
            .prepare("SELECT session_id, commit_id, end_commit_id FROM checkpoints")
            .map_err(sql(&self.path, "reading checkpoints"))?;
        let rows = statement
            .query_map([], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, Option<String>>(1)?,
                    row.get::<_, Option<String>>(2)?,
                ))
            })
            .map_err(sql(&self.path, "reading checkpoints"))?;
        for row in rows {
            let (session, start, end) = row.map_err(sql(&self.path, "reading checkpoints"))?;
            references.sessions.insert(session);
            references.commits.extend(start);
            references.commits.extend(end);
        }
        Ok(references)
    }

    /// How many checkpoints are stored, and when the one at position
    /// `index` of them, oldest first, was recorded (`None` past the end).
    pub fn checkpoint_age_at(&self, index: u64) -> Result<(u64, Option<i64>), StoreError> {
        const CTX: &str = "reading checkpoints";
        let count: i64 = self
            .conn
            .prepare_cached("SELECT count(*) FROM checkpoints")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .map_err(sql(&self.path, CTX))?;
        let at = self
            .conn
            .prepare_cached(
                "SELECT created_at FROM checkpoints ORDER BY created_at LIMIT 1 OFFSET ?1",
            )
            .and_then(|mut s| s.query_row([to_i64(index)], |r| r.get(0)).optional())
            .map_err(sql(&self.path, CTX))?;
        Ok((to_u64(count), at))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::NewSession;
    use herald_protocol::Role;

    fn store_with_session() -> Store {
        let mut store = Store::open_in_memory().unwrap();
        store
            .create_session(&NewSession::for_test("ses_a"))
            .unwrap();
        store
    }

    fn checkpoint(turn: u32, message_count: u64) -> NewCheckpoint {
        NewCheckpoint {
            session_id: "ses_a".into(),
            turn,
            message_count,
            cwd: "/w".into(),
            commit_id: Some(format!("c{turn}")),
            note: None,
        }
    }

    #[test]
    fn checkpoints_list_by_turn_with_their_prompt_and_stats() {
        let mut store = store_with_session();
        let first = store.add_checkpoint(&checkpoint(1, 0)).unwrap();
        store
            .append_messages(
                "ses_a",
                &[
                    Message::user("edit a.txt"),
                    Message::assistant("done", vec![]),
                ],
            )
            .unwrap();
        store
            .finish_checkpoint(
                first,
                Some("e1"),
                ChangeStats {
                    files_changed: 1,
                    insertions: 2,
                    deletions: 3,
                },
            )
            .unwrap();
        store.add_checkpoint(&checkpoint(2, 2)).unwrap();
        store
            .append_messages("ses_a", &[Message::user("second")])
            .unwrap();
        let list = store.checkpoints("ses_a", false).unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].prompt.as_deref(), Some("edit a.txt"));
        assert_eq!(list[0].end_commit_id.as_deref(), Some("e1"));
        assert_eq!(list[0].changes.insertions, 2);
        assert_eq!(list[1].prompt.as_deref(), Some("second"));
        assert_eq!(list[1].message_count, 2);
        assert_eq!(store.last_checkpoint_turn("ses_a").unwrap(), 2);
        assert_eq!(store.stored_message_count("ses_a").unwrap(), 3);
        assert_eq!(store.messages_up_to("ses_a", 2).unwrap().len(), 2);
        assert!(matches!(
            store.checkpoints("ses_nope", false),
            Err(StoreError::UnknownSession(_))
        ));
    }

    #[test]
    fn pruning_deletes_old_rows_and_names_what_the_rest_refers_to() {
        let mut store = store_with_session();
        let first = store.add_checkpoint(&checkpoint(1, 0)).unwrap();
        store
            .finish_checkpoint(first, Some("e1"), ChangeStats::default())
            .unwrap();
        store.add_checkpoint(&checkpoint(2, 0)).unwrap();
        // Make turn 1 ten days old.
        store
            .conn
            .execute(
                "UPDATE checkpoints SET created_at = created_at - 864000000 WHERE id = ?1",
                [first],
            )
            .unwrap();
        let (count, oldest) = store.checkpoint_age_at(0).unwrap();
        assert_eq!(count, 2);
        let oldest = oldest.unwrap();
        assert_eq!(store.checkpoint_age_at(2).unwrap(), (2, None));
        let references = store.checkpoint_references().unwrap();
        assert!(references.commits.contains("c1") && references.commits.contains("e1"));
        assert!(references.sessions.contains("ses_a"));
        // Nothing is older than the oldest row.
        assert_eq!(store.delete_checkpoints_before(oldest).unwrap(), 0);
        assert_eq!(store.delete_checkpoints_before(oldest + 1).unwrap(), 1);
        let references = store.checkpoint_references().unwrap();
        assert_eq!(
            references.commits,
            std::collections::HashSet::from(["c2".to_owned()])
        );
        assert_eq!(store.checkpoints("ses_a", true).unwrap().len(), 1);
        assert_eq!(store.delete_checkpoints_before(i64::MAX).unwrap(), 1);
        assert!(store.checkpoint_references().unwrap().sessions.is_empty());
    }

    #[test]
    fn a_rewind_appends_the_history_and_keeps_later_turns_marked() {
        let mut store = store_with_session();
        store.add_checkpoint(&checkpoint(1, 0)).unwrap();
        store
            .append_messages(
                "ses_a",
                &[Message::user("one"), Message::assistant("1", vec![])],
            )
            .unwrap();
        store.add_checkpoint(&checkpoint(2, 2)).unwrap();
        store
            .append_messages(
                "ses_a",
                &[Message::user("two"), Message::assistant("2", vec![])],
            )
            .unwrap();
        let mut record = Message::user("[herald:rewind] x");
        record.role = Role::System;
        let before = store.messages_up_to("ses_a", 2).unwrap();
        let history: Vec<Message> = before.into_iter().map(|m| m.message).collect();
        let added = store
            .rewind_conversation("ses_a", 2, &record, &history)
            .unwrap();
        assert_eq!(added, 3);
        // Nothing was deleted: 4 old messages, the record, 2 copied.
        assert_eq!(store.load_messages("ses_a").unwrap().len(), 7);
        let live = store.checkpoints("ses_a", false).unwrap();
        assert_eq!(live.iter().map(|c| c.turn).collect::<Vec<_>>(), vec![1]);
        let all = store.checkpoints("ses_a", true).unwrap();
        assert_eq!(all.len(), 2);
        assert!(all[1].rewound_at.is_some());
        assert!(store.checkpoint_for_turn("ses_a", 2).unwrap().is_none());
        // The turn can be recorded again.
        store.add_checkpoint(&checkpoint(2, 7)).unwrap();
        assert_eq!(store.checkpoints("ses_a", true).unwrap().len(), 3);
        assert_eq!(
            store
                .checkpoint_for_turn("ses_a", 2)
                .unwrap()
                .unwrap()
                .message_count,
            7
        );
    }
}
