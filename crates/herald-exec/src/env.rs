//! The script's environment: built from nothing, so only variables known to
//! be harmless reach the child, and never one whose name suggests a secret.
//! API keys stay in herald; tools that need them run in herald, not the script.
//! The configured [`EnvFilter`] applies on top: its `exclude` drops even a
//! harmless name, its `keep` passes a name the user wants the script to see.

use std::ffi::OsString;
use std::path::Path;

use herald_sandbox::EnvFilter;

/// Variables passed through by exact name.
const PASS_EXACT: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "TMPDIR",
    "TEMP",
    "TMP",
    "COLUMNS",
    "LINES",
    "NO_COLOR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYENV_ROOT",
    "PYENV_VERSION",
];

/// Variables passed through by prefix (locale and interpreter settings).
const PASS_PREFIX: &[&str] = &["LC_", "PYTHON"];

/// Interpreter variables herald sets itself or that would change how the
/// script runs (`PYTHONINSPECT` waits for input after the script).
const PYTHON_OWN: &[&str] = &[
    "PYTHONPATH",
    "PYTHONINSPECT",
    "PYTHONSTARTUP",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONUNBUFFERED",
    "PYTHONIOENCODING",
];

/// Name fragments that mark a variable as secret, matched case-insensitively.
const SECRET_MARKERS: &[&str] = &[
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "SESSION",
    "PRIVATE",
];

/// Whether a variable's name suggests it holds a secret (API keys, tokens,
/// passwords, cookies, ...). Such variables never reach a script.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_MARKERS.iter().any(|marker| upper.contains(marker))
}

/// The subset of `vars` a script may see: names in `filter.keep`, and
/// known-harmless names that do not [`looks_secret`]; never a name in
/// `filter.exclude` or one herald sets itself. Names or values that are not
/// UTF-8 are dropped.
pub fn scrubbed_env(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    filter: &EnvFilter,
) -> Vec<(String, String)> {
    vars.into_iter()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .filter(|(name, _)| {
            if PYTHON_OWN.contains(&name.as_str()) || filter.excludes(name) {
                return false;
            }
            let passes = PASS_EXACT.contains(&name.as_str())
                || PASS_PREFIX.iter().any(|prefix| name.starts_with(prefix));
            filter.keeps(name) || (passes && !looks_secret(name))
        })
        .collect()
}

/// What the child needs on top of the scrubbed environment: where the socket
/// is, the run's token, the stub module's directory, unbuffered UTF-8 output
/// and no `__pycache__` litter.
pub(crate) fn run_env(
    base: Vec<(String, String)>,
    socket: &Path,
    token: &str,
    module_dir: &Path,
) -> Vec<(String, String)> {
    let mut env = base;
    env.extend([
        ("HERALD_RPC_SOCKET".to_owned(), socket.display().to_string()),
        ("HERALD_RPC_TOKEN".to_owned(), token.to_owned()),
        ("PYTHONPATH".to_owned(), module_dir.display().to_string()),
        ("PYTHONDONTWRITEBYTECODE".to_owned(), "1".to_owned()),
        ("PYTHONUNBUFFERED".to_owned(), "1".to_owned()),
        ("PYTHONIOENCODING".to_owned(), "utf-8".to_owned()),
    ]);
    env
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

    #[test]
    fn secrets_and_unknown_variables_are_dropped() {
        let kept = scrubbed_env(
            vars(&[
                ("PATH", "/usr/bin"),
                ("HOME", "/home/me"),
                ("LC_ALL", "C.UTF-8"),
                ("PYTHONHASHSEED", "0"),
                ("OPENAI_API_KEY", "sk-1"),
                ("ANTHROPIC_API_KEY", "sk-2"),
                ("GITHUB_TOKEN", "ghp"),
                ("AWS_SECRET_ACCESS_KEY", "x"),
                ("DB_PASSWORD", "x"),
                ("PYTHON_AUTH_HELPER", "x"),
                ("HERALD_HOME", "/h"),
                ("HTTPS_PROXY", "http://user:pw@proxy"),
                ("PYTHONPATH", "/elsewhere"),
                ("PYTHONINSPECT", "1"),
            ]),
            &EnvFilter::default(),
        );
        let names: Vec<&str> = kept.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["PATH", "HOME", "LC_ALL", "PYTHONHASHSEED"]);
    }

    #[test]
    fn keep_and_exclude_of_the_filter_apply() {
        let filter = EnvFilter {
            keep: vec!["GH_TOKEN".into(), "PYTHONPATH".into(), "MY_TOOL_*".into()],
            exclude: vec!["HOME".into()],
        };
        let kept = scrubbed_env(
            vars(&[
                ("PATH", "/usr/bin"),
                ("HOME", "/home/me"),
                ("GH_TOKEN", "ghp"),
                ("OTHER_TOKEN", "x"),
                ("MY_TOOL_HOME", "/opt"),
                ("PYTHONPATH", "/elsewhere"),
            ]),
            &filter,
        );
        let names: Vec<&str> = kept.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["PATH", "GH_TOKEN", "MY_TOOL_HOME"]);
    }

    #[test]
    fn markers_match_any_case() {
        assert!(looks_secret("my_api_key"));
        assert!(looks_secret("SessionCookie"));
        assert!(looks_secret("GH_AUTH"));
        assert!(!looks_secret("PATH"));
        assert!(!looks_secret("LANG"));
    }

    #[test]
    fn run_env_adds_the_rpc_variables() {
        let env = run_env(
            vec![("PATH".into(), "/bin".into())],
            Path::new("/tmp/x/rpc.sock"),
            "abc",
            Path::new("/tmp/x"),
        );
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("HERALD_RPC_SOCKET"), Some("/tmp/x/rpc.sock"));
        assert_eq!(get("HERALD_RPC_TOKEN"), Some("abc"));
        assert_eq!(get("PYTHONPATH"), Some("/tmp/x"));
        assert_eq!(get("PYTHONDONTWRITEBYTECODE"), Some("1"));
        assert_eq!(get("PATH"), Some("/bin"));
    }
}
