//! What can go wrong driving the browser. Every error becomes a tool result
//! the model reads, so each message says what to do next.

/// An error of the browser layer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BrowserError {
    /// No Chromium or Chrome executable was found.
    #[error("no Chromium or Chrome browser was found ({searched}); {hint}")]
    NotFound {
        /// Where herald looked.
        searched: String,
        /// How to install one.
        hint: &'static str,
    },
    /// The browser process could not be started or did not come up.
    #[error("could not start the browser {executable}: {reason}")]
    Launch {
        /// The executable that was run.
        executable: String,
        /// What happened (with the browser's last output lines).
        reason: String,
    },
    /// The DevTools endpoint could not be reached.
    #[error("could not connect to the browser's DevTools endpoint {url}: {reason}")]
    Connect {
        /// The endpoint.
        url: String,
        /// Why the connection failed.
        reason: String,
    },
    /// The connection to the browser closed (the browser exited or crashed).
    #[error(
        "the browser connection closed (the browser exited or crashed); the next browser call starts a new one"
    )]
    Closed,
    /// The browser did not answer a command in time.
    #[error(
        "the browser did not answer {method} within {seconds} s (the page may be busy or blocked by a dialog)"
    )]
    Timeout {
        /// The DevTools method.
        method: String,
        /// The limit that passed.
        seconds: u64,
    },
    /// The browser refused a command.
    #[error("{method} failed: {message}")]
    Protocol {
        /// The DevTools method.
        method: String,
        /// The browser's error message.
        message: String,
    },
    /// The SSRF guard refused an address.
    #[error(transparent)]
    Guard(#[from] herald_web::GuardError),
    /// The call cannot be carried out as asked (an unknown ref, no dialog
    /// open, a bad URL); the message says what to change.
    #[error("{0}")]
    Usage(String),
    /// A file of the browser's (profile, snapshot) could not be used.
    #[error("{0}")]
    Io(String),
}

impl BrowserError {
    /// A [`BrowserError::Usage`] with `message`.
    pub fn usage(message: impl Into<String>) -> Self {
        Self::Usage(message.into())
    }
}
