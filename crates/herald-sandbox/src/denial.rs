//! Recognising output that shows a confined command was stopped by the
//! sandbox, so the result can say so instead of leaving the model guessing.

/// Phrases of a refused write (EACCES, EPERM, EROFS) in the usual spellings
/// of libc, coreutils, Python and friends. Compared lower-case.
const WRITE_DENIED: &[&str] = &[
    "permission denied",
    "operation not permitted",
    "read-only file system",
    "permissionerror",
];

/// Phrases of a blocked network, compared lower-case.
const NETWORK_DENIED: &[&str] = &[
    "network is unreachable",
    "could not resolve host",
    "temporary failure in name resolution",
    "name or service not known",
    "failed to resolve",
    "no address associated with hostname",
    "socket: operation not permitted",
];

/// Whether `output` of a failed confined command looks like the sandbox
/// refused something: a write, or (when `network` is false) the network.
pub fn looks_denied(output: &str, network: bool) -> bool {
    let lower = output.to_lowercase();
    WRITE_DENIED.iter().any(|p| lower.contains(p))
        || (!network && NETWORK_DENIED.iter().any(|p| lower.contains(p)))
}

#[cfg(test)]
mod tests {
    use super::looks_denied;

    #[test]
    fn write_denials_are_recognised() {
        assert!(looks_denied(
            "bash: line 1: /etc/x: Permission denied\n",
            true
        ));
        assert!(looks_denied(
            "touch: cannot touch 'x': Read-only file system",
            true
        ));
        assert!(looks_denied(
            "PermissionError: [Errno 13] Permission denied: '/x'",
            true
        ));
        assert!(!looks_denied("error[E0308]: mismatched types", true));
        assert!(!looks_denied(
            "FAILED tests/test_x.py::test_y - AssertionError",
            false
        ));
    }

    #[test]
    fn network_denials_count_only_when_the_network_is_blocked() {
        let curl = "curl: (6) Could not resolve host: example.com";
        assert!(looks_denied(curl, false));
        assert!(!looks_denied(curl, true));
        assert!(looks_denied("ping: socket: Operation not permitted", true));
        assert!(looks_denied("connect: Network is unreachable", false));
    }
}
