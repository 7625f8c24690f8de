//! The errors of batch runs and evaluation, each saying what to do.

use std::path::PathBuf;

/// Why a batch or eval command could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// The task or suite file is malformed; `line` counts from 1.
    #[error("{path}:{line}: {message}")]
    Input {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Settings, options or state that cannot work, with what to do.
    #[error("{0}")]
    Invalid(String),
    /// The session store failed.
    #[error("the session store failed: {0}")]
    Store(String),
}

impl BatchError {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }

    /// A malformed line of an input file.
    pub fn input(path: impl Into<PathBuf>, line: usize, message: impl Into<String>) -> Self {
        Self::Input {
            path: path.into(),
            line,
            message: message.into(),
        }
    }
}
