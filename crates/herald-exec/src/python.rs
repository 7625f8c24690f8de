//! Finding the Python interpreter. Registration only looks the file up (a few
//! `stat` calls, so start-up stays fast); the first run and `herald doctor`
//! start it once to learn its version and real executable, which also skips
//! launcher shims such as pyenv's on every later run.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::env::scrubbed_env;

/// The interpreter used when the configuration names none.
const DEFAULT_PYTHON: &str = "python3";
/// How long the version probe may take (a cold pyenv shim needs ~100 ms).
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// Prints major, minor, the version string and the real executable.
const PROBE_SCRIPT: &str = "import sys; print(sys.version_info[0]); print(sys.version_info[1]); print(sys.version.split()[0]); print(sys.executable)";

/// What a working interpreter reported about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonInfo {
    /// The path that was started (may be a launcher or shim).
    pub path: PathBuf,
    /// `sys.executable`: the interpreter itself, used for every run.
    pub executable: PathBuf,
    /// `sys.version`'s first word, e.g. `3.11.7`.
    pub version: String,
}

/// Why `execute_code` cannot run scripts.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PythonError {
    /// Nothing executable by that name.
    #[error(
        "{name} was not found on PATH; install Python 3 or set code_execution.python in config.toml to its path"
    )]
    NotFound { name: String },
    /// The interpreter could not be started or answered nonsense.
    #[error(
        "{path} does not work as a Python interpreter ({detail}); fix it or set code_execution.python to another one"
    )]
    Broken { path: PathBuf, detail: String },
    /// Python 2 or a Python 3 older than the generated module needs.
    #[error(
        "{path} is Python {version}; execute_code needs Python 3.6 or newer (set code_execution.python)"
    )]
    TooOld { path: PathBuf, version: String },
}

/// Resolves `configured` (empty = `python3`) to an executable file without
/// running it: a name is searched on `PATH`, a path is checked as given.
pub fn find_python(configured: &str) -> Result<PathBuf, PythonError> {
    let name = match configured.trim() {
        "" => DEFAULT_PYTHON,
        other => other,
    };
    let not_found = || PythonError::NotFound {
        name: name.to_owned(),
    };
    if name.contains('/') {
        let path = PathBuf::from(name);
        return if is_executable(&path) {
            Ok(path)
        } else {
            Err(not_found())
        };
    }
    let path_var = std::env::var_os("PATH").ok_or_else(not_found)?;
    std::env::split_paths(&path_var)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(not_found)
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Starts `path` once, in `cwd` with the scripts' scrubbed environment, and
/// reports its version and real executable.
pub async fn probe_python(path: &Path, cwd: &Path) -> Result<PythonInfo, PythonError> {
    let broken = |detail: String| PythonError::Broken {
        path: path.to_owned(),
        detail,
    };
    let child = tokio::process::Command::new(path)
        // -S: no site imports, which the answer does not depend on.
        .args(["-S", "-c", PROBE_SCRIPT])
        .current_dir(cwd)
        .env_clear()
        .envs(scrubbed_env(
            std::env::vars_os(),
            &herald_sandbox::EnvFilter::default(),
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| broken(format!("cannot start it: {err}")))?;
    let output = tokio::time::timeout(PROBE_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| broken(format!("no answer within {} s", PROBE_TIMEOUT.as_secs())))?
        .map_err(|err| broken(err.to_string()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(broken(format!(
            "it exited with {}: {}",
            output.status,
            stderr.trim()
        )));
    }
    parse_probe(path, &String::from_utf8_lossy(&output.stdout))
}

/// Reads the probe's four lines.
fn parse_probe(path: &Path, stdout: &str) -> Result<PythonInfo, PythonError> {
    let mut lines = stdout.lines().map(str::trim);
    let (Some(major), Some(minor), Some(version), executable) =
        (lines.next(), lines.next(), lines.next(), lines.next())
    else {
        return Err(PythonError::Broken {
            path: path.to_owned(),
            detail: format!("unexpected version output {stdout:?}"),
        });
    };
    let number = |text: &str| text.parse::<u32>().unwrap_or(0);
    if number(major) != 3 || number(minor) < 6 {
        return Err(PythonError::TooOld {
            path: path.to_owned(),
            version: version.to_owned(),
        });
    }
    let executable = executable
        .filter(|e| !e.is_empty())
        .map_or_else(|| path.to_owned(), PathBuf::from);
    Ok(PythonInfo {
        path: path.to_owned(),
        executable,
        version: version.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_output_is_parsed_and_old_versions_refused() {
        let path = Path::new("/usr/bin/python3");
        let info = parse_probe(path, "3\n11\n3.11.7\n/opt/py/bin/python3.11\n");
        assert_eq!(
            info.ok().map(|i| (i.version, i.executable)),
            Some(("3.11.7".to_owned(), PathBuf::from("/opt/py/bin/python3.11")))
        );
        let empty_exe = parse_probe(path, "3\n8\n3.8.0\n\n");
        assert_eq!(empty_exe.ok().map(|i| i.executable), Some(path.to_owned()));
        assert!(matches!(
            parse_probe(path, "2\n7\n2.7.18\n/usr/bin/python2\n"),
            Err(PythonError::TooOld { .. })
        ));
        assert!(matches!(
            parse_probe(path, "garbage"),
            Err(PythonError::Broken { .. })
        ));
    }

    #[test]
    fn missing_interpreters_are_reported_by_name() {
        let err = find_python("herald-no-such-python").err();
        assert!(err.is_some_and(|e| {
            e.to_string()
                .contains("herald-no-such-python was not found")
        }),);
        assert!(find_python("/nonexistent/python3").is_err());
    }
}
