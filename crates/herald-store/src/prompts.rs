//! The prompt history of the interactive composer, per working directory:
//! what ↑ and Ctrl-R recall in the next session started in the same place.

use crate::write_unit::WriteUnit;
use rusqlite::{OptionalExtension, params};

use crate::error::{StoreError, sql};
use crate::store::{Store, now_ms};

/// How many prompts are kept per working directory; adding one more deletes
/// the oldest, so the table stays small however long herald is used.
pub const MAX_PROMPTS_PER_CWD: usize = 1_000;

impl Store {
    /// Records a prompt typed in `cwd`. A prompt equal to the previous one
    /// of that directory is not stored again (repeating a command should
    /// not fill ↑ with copies); beyond [`MAX_PROMPTS_PER_CWD`] the oldest
    /// of that directory are deleted. Returns whether a row was added.
    pub fn add_prompt(&mut self, cwd: &str, text: &str) -> Result<bool, StoreError> {
        const CTX: &str = "saving the prompt history";
        let tx = WriteUnit::begin(&self.conn).map_err(sql(&self.path, CTX))?;
        let previous: Option<String> = tx
            .prepare_cached(
                "SELECT text FROM prompt_history WHERE cwd = ?1 ORDER BY id DESC LIMIT 1",
            )
            .and_then(|mut stmt| stmt.query_row([cwd], |row| row.get(0)).optional())
            .map_err(sql(&self.path, CTX))?;
        if previous.as_deref() == Some(text) {
            return Ok(false);
        }
        let keep = i64::try_from(MAX_PROMPTS_PER_CWD).unwrap_or(i64::MAX);
        tx.prepare_cached("INSERT INTO prompt_history (cwd, text, created_at) VALUES (?1, ?2, ?3)")
            .and_then(|mut stmt| stmt.execute(params![cwd, text, now_ms()]))
            .map_err(sql(&self.path, CTX))?;
        tx.prepare_cached(
            "DELETE FROM prompt_history WHERE cwd = ?1 AND id <= \
             (SELECT id FROM prompt_history WHERE cwd = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)",
        )
        .and_then(|mut stmt| stmt.execute(params![cwd, keep]))
        .map_err(sql(&self.path, CTX))?;
        tx.commit().map_err(sql(&self.path, CTX))?;
        Ok(true)
    }

    /// The latest `limit` prompts typed in `cwd`, oldest first (the order
    /// the composer's history walks back through).
    pub fn recent_prompts(&self, cwd: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        const CTX: &str = "reading the prompt history";
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut rows: Vec<String> = self
            .conn
            .prepare_cached(
                "SELECT text FROM prompt_history WHERE cwd = ?1 ORDER BY id DESC LIMIT ?2",
            )
            .and_then(|mut stmt| {
                stmt.query_map(params![cwd, limit], |row| row.get(0))?
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(sql(&self.path, CTX))?;
        rows.reverse();
        Ok(rows)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn prompts_are_kept_per_directory_oldest_first() {
        let mut store = Store::open_in_memory().unwrap();
        assert!(store.add_prompt("/a", "first").unwrap());
        assert!(store.add_prompt("/b", "elsewhere").unwrap());
        assert!(store.add_prompt("/a", "second\nwith two lines").unwrap());
        assert!(store.add_prompt("/a", "third").unwrap());
        assert_eq!(
            store.recent_prompts("/a", 10).unwrap(),
            ["first", "second\nwith two lines", "third"]
        );
        assert_eq!(
            store.recent_prompts("/a", 2).unwrap(),
            ["second\nwith two lines", "third"]
        );
        assert_eq!(store.recent_prompts("/b", 10).unwrap(), ["elsewhere"]);
        assert!(store.recent_prompts("/c", 10).unwrap().is_empty());
    }

    #[test]
    fn a_repeat_of_the_previous_prompt_is_skipped() {
        let mut store = Store::open_in_memory().unwrap();
        assert!(store.add_prompt("/a", "cargo test").unwrap());
        assert!(!store.add_prompt("/a", "cargo test").unwrap());
        // The previous prompt of another directory does not count.
        assert!(store.add_prompt("/b", "cargo test").unwrap());
        assert!(store.add_prompt("/a", "ls").unwrap());
        assert!(store.add_prompt("/a", "cargo test").unwrap());
        assert_eq!(
            store.recent_prompts("/a", 10).unwrap(),
            ["cargo test", "ls", "cargo test"]
        );
    }

    #[test]
    fn only_the_latest_thousand_of_a_directory_are_kept() {
        let mut store = Store::open_in_memory().unwrap();
        store.add_prompt("/other", "keep me").unwrap();
        for i in 0..MAX_PROMPTS_PER_CWD + 5 {
            store.add_prompt("/a", &format!("p{i}")).unwrap();
        }
        let all = store.recent_prompts("/a", usize::MAX).unwrap();
        assert_eq!(all.len(), MAX_PROMPTS_PER_CWD);
        assert_eq!(all[0], "p5");
        assert_eq!(
            all.last().map(String::as_str),
            Some(format!("p{}", MAX_PROMPTS_PER_CWD + 4).as_str())
        );
        assert_eq!(store.recent_prompts("/other", 10).unwrap(), ["keep me"]);
        let rows: i64 = store
            .conn
            .query_row("SELECT count(*) FROM prompt_history", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, MAX_PROMPTS_PER_CWD as i64 + 1);
    }
}
