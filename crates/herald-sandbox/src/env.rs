//! The environment tool processes inherit: herald's own, minus variables
//! whose names suggest a secret, minus the configured exclusions, plus the
//! configured exceptions.

use std::ffi::{OsStr, OsString};

use crate::EnvFilter;

/// Name fragments that mark a variable as secret, matched case-insensitively
/// (`API_KEY`, `GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `PGPASSWORD`, ...).
const SECRET_MARKERS: &[&str] = &["KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL"];

/// Shortest value of a secret-named variable treated as a known secret.
const MIN_SECRET_LEN: usize = 8;

/// Whether a variable's name suggests it holds a secret.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_MARKERS.iter().any(|marker| upper.contains(marker))
}

/// `name` matches `pattern`: equal, or `pattern` ends in `*` and `name`
/// starts with the rest.
fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

impl EnvFilter {
    /// Whether a tool process may inherit the variable `name`: not
    /// excluded, and either kept or not named like a secret. Exclusion wins
    /// over `keep`.
    pub fn allows(&self, name: &str) -> bool {
        !self.excludes(name) && (self.keeps(name) || !looks_secret(name))
    }

    /// Whether `name` is in `keep` (passed on even if it looks secret).
    pub fn keeps(&self, name: &str) -> bool {
        self.keep.iter().any(|p| matches(p, name))
    }

    /// Whether `name` is in `exclude` (never passed on).
    pub fn excludes(&self, name: &str) -> bool {
        self.exclude.iter().any(|p| matches(p, name))
    }

    /// [`EnvFilter::allows`] for a name that may not be UTF-8 (judged on
    /// its lossy form, so a non-UTF-8 `..._TOKEN` is still dropped).
    pub fn allows_os(&self, name: &OsStr) -> bool {
        self.allows(&name.to_string_lossy())
    }

    /// The variables of `vars` a tool process may inherit.
    pub fn filter(
        &self,
        vars: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Vec<(OsString, OsString)> {
        vars.into_iter()
            .filter(|(name, _)| self.allows_os(name))
            .collect()
    }

    /// Names in herald's environment that a tool process must not inherit.
    pub fn removed(&self) -> Vec<OsString> {
        std::env::vars_os()
            .map(|(name, _)| name)
            .filter(|name| !self.allows_os(name))
            .collect()
    }

    /// Makes `cmd` inherit herald's environment minus what this filter
    /// drops (variables set on `cmd` itself afterwards still apply), and
    /// marks it as started by this herald process ([`crate::OWNER_VAR`]):
    /// every tool process gets its environment here, so every one carries
    /// the mark a later run finds it by after a crash.
    pub fn apply(&self, cmd: &mut tokio::process::Command) {
        for name in self.removed() {
            cmd.env_remove(name);
        }
        crate::mark_command(cmd);
    }

    /// [`EnvFilter::apply`] for a `std` command.
    pub fn apply_std(&self, cmd: &mut std::process::Command) {
        for name in self.removed() {
            cmd.env_remove(name);
        }
        crate::mark_command_std(cmd);
    }
}

/// Values of herald's own secret-named variables (at least 8 characters,
/// not paths): known secrets for the [`crate::Redactor`].
pub fn secret_env_values() -> Vec<String> {
    secret_values(std::env::vars_os())
}

pub(crate) fn secret_values(vars: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<String> {
    vars.into_iter()
        .filter(|(name, _)| looks_secret(&name.to_string_lossy()))
        .filter_map(|(_, value)| value.into_string().ok())
        .filter(|value| {
            let value = value.trim();
            value.len() >= MIN_SECRET_LEN && !value.starts_with('/') && !value.starts_with("~/")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    fn names(kept: &[(OsString, OsString)]) -> Vec<&str> {
        kept.iter().filter_map(|(k, _)| k.to_str()).collect()
    }

    #[test]
    fn secret_looking_names_are_dropped_in_any_case() {
        let filter = EnvFilter::default();
        let kept = filter.filter(vars(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/root"),
            ("OPENAI_API_KEY", "sk-x"),
            ("anthropic_api_key", "sk-y"),
            ("GITHUB_TOKEN", "ghp"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
            ("PGPASSWORD", "x"),
            ("FTP_PASSWD", "x"),
            ("GOOGLE_APPLICATION_CREDENTIALS", "/k.json"),
            ("HERALD_HOME", "/h"),
            ("SSH_AUTH_SOCK", "/run/ssh"),
            ("LANG", "C.UTF-8"),
        ]));
        assert_eq!(
            names(&kept),
            ["PATH", "HOME", "HERALD_HOME", "SSH_AUTH_SOCK", "LANG"]
        );
    }

    #[test]
    fn keep_overrides_the_markers_and_exclude_wins_over_everything() {
        let filter = EnvFilter {
            keep: vec!["GH_TOKEN".into(), "MY_KEY*".into(), "EDITOR".into()],
            exclude: vec!["EDITOR".into(), "DATABASE_URL".into(), "CORP_*".into()],
        };
        assert!(filter.allows("GH_TOKEN"));
        assert!(!filter.allows("gh_token"), "keep is case-sensitive");
        assert!(filter.allows("MY_KEYRING_DIR"));
        assert!(!filter.allows("EDITOR"));
        assert!(!filter.allows("DATABASE_URL"));
        assert!(!filter.allows("CORP_PROXY"));
        assert!(!filter.allows("OTHER_TOKEN"));
        assert!(filter.allows("PATH"));
    }

    #[test]
    fn apply_removes_variables_from_a_command() {
        // The test process has PATH; a filter excluding it must unset it.
        let filter = EnvFilter {
            keep: Vec::new(),
            exclude: vec!["PATH".into()],
        };
        let mut cmd = std::process::Command::new("true");
        filter.apply_std(&mut cmd);
        let removed: Vec<_> = cmd
            .get_envs()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k.to_owned())
            .collect();
        assert!(removed.contains(&OsString::from("PATH")), "{removed:?}");
    }

    #[test]
    fn apply_marks_the_command_with_this_process_as_its_owner() {
        let mut cmd = std::process::Command::new("true");
        EnvFilter::default().apply_std(&mut cmd);
        let mark = cmd
            .get_envs()
            .find(|(k, _)| *k == crate::OWNER_VAR)
            .and_then(|(_, v)| v.map(ToOwned::to_owned));
        assert_eq!(mark, Some(OsString::from(crate::Owner::current().mark())));
    }

    #[test]
    fn secret_values_skip_short_values_and_paths() {
        let values = secret_values(vars(&[
            ("OPENAI_API_KEY", "sk-abcdefgh12345678"),
            ("SHORT_TOKEN", "abc"),
            ("TOKEN_FILE", "/run/secrets/token"),
            ("PATH", "/usr/bin:/bin:/usr/local/bin"),
            ("DB_PASSWORD", "correct horse battery"),
        ]));
        assert_eq!(values, ["sk-abcdefgh12345678", "correct horse battery"]);
    }
}
