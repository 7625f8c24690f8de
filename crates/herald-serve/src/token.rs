//! The bearer token every request must carry: given (`--token`,
//! `HERALD_SERVE_TOKEN`), or generated once into `$HERALD_HOME/serve.token`
//! (mode 0600) and read from there afterwards.

use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Where the token came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// Given on the command line or in the environment.
    Explicit,
    /// Read from (or just written to) this file.
    File(PathBuf),
}

/// Why no token could be had.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("cannot read the token file {path}: {err}")]
    Read { path: PathBuf, err: std::io::Error },
    #[error("cannot write the token file {path}: {err}")]
    Write { path: PathBuf, err: std::io::Error },
    #[error("the token file {0} is empty; delete it to have a new token generated")]
    Empty(PathBuf),
    #[error("cannot generate a token: {0}")]
    Random(std::io::Error),
    #[error("the token is empty; pass a non-empty --token or HERALD_SERVE_TOKEN")]
    EmptyExplicit,
}

/// The file a generated token is kept in.
pub fn token_path(home: &Path) -> PathBuf {
    home.join("serve.token")
}

/// The token to require: `explicit` when given, else the one in
/// `$HERALD_HOME/serve.token`, generated (32 random bytes, hex) when the
/// file does not exist. A file readable by others is narrowed to 0600.
pub fn resolve_token(
    explicit: Option<&str>,
    home: &Path,
) -> Result<(String, TokenSource), TokenError> {
    if let Some(token) = explicit {
        let token = token.trim();
        if token.is_empty() {
            return Err(TokenError::EmptyExplicit);
        }
        return Ok((token.to_owned(), TokenSource::Explicit));
    }
    let path = token_path(home);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let token = text.trim().to_owned();
            if token.is_empty() {
                return Err(TokenError::Empty(path));
            }
            narrow_mode(&path)?;
            Ok((token, TokenSource::File(path)))
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            let token = generate()?;
            write_new(&path, &token)?;
            Ok((token, TokenSource::File(path)))
        }
        Err(err) => Err(TokenError::Read { path, err }),
    }
}

fn narrow_mode(path: &Path) -> Result<(), TokenError> {
    let meta = std::fs::metadata(path).map_err(|err| TokenError::Read {
        path: path.to_owned(),
        err,
    })?;
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|err| {
            TokenError::Write {
                path: path.to_owned(),
                err,
            }
        })?;
    }
    Ok(())
}

/// Writes `token` to a new file created with mode 0600 (never readable by
/// others, not even for a moment).
fn write_new(path: &Path, token: &str) -> Result<(), TokenError> {
    let failed = |err| TokenError::Write {
        path: path.to_owned(),
        err,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(failed)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(failed)?;
    file.write_all(format!("{token}\n").as_bytes())
        .map_err(failed)?;
    file.sync_all().map_err(failed)
}

/// 32 bytes from the kernel's random source, as 64 hex digits.
fn generate() -> Result<String, TokenError> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(TokenError::Random)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Compares two tokens in time that does not depend on where they differ.
pub(crate) fn same_token(given: &[u8], expected: &[u8]) -> bool {
    if given.len() != expected.len() {
        return false;
    }
    given
        .iter()
        .zip(expected)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_token_is_kept_private_and_reused() {
        let home = tempfile::tempdir().unwrap();
        let (first, source) = resolve_token(None, home.path()).unwrap();
        assert_eq!(first.len(), 64);
        assert_eq!(source, TokenSource::File(token_path(home.path())));
        let mode = std::fs::metadata(token_path(home.path()))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let (again, _) = resolve_token(None, home.path()).unwrap();
        assert_eq!(first, again);
    }

    #[test]
    fn an_explicit_token_wins_and_must_not_be_empty() {
        let home = tempfile::tempdir().unwrap();
        let (token, source) = resolve_token(Some("abc"), home.path()).unwrap();
        assert_eq!((token.as_str(), source), ("abc", TokenSource::Explicit));
        assert!(!token_path(home.path()).exists());
        assert!(resolve_token(Some("  "), home.path()).is_err());
    }

    #[test]
    fn an_open_token_file_is_narrowed() {
        let home = tempfile::tempdir().unwrap();
        let path = token_path(home.path());
        std::fs::write(&path, "secret\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let (token, _) = resolve_token(None, home.path()).unwrap();
        assert_eq!(token, "secret");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn tokens_compare_exactly() {
        assert!(same_token(b"abc", b"abc"));
        assert!(!same_token(b"abd", b"abc"));
        assert!(!same_token(b"ab", b"abc"));
    }
}
