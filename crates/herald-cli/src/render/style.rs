//! Whether output gets colour, and the few SGR styles the progress lines
//! use. Colour is on only for a terminal and only while `NO_COLOR` is unset
//! or empty (<https://no-color.org>).

use std::io::IsTerminal;

/// Whether text written to a stream that `is_terminal` may be coloured,
/// given the value of `NO_COLOR`.
pub(crate) fn color_allowed(is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    is_terminal && no_color.is_none_or(|value| value.is_empty())
}

/// Colour for stderr, from the environment.
pub(crate) fn stderr_color() -> bool {
    color_allowed(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
    )
}

/// Colour for stdout, from the environment.
pub(crate) fn stdout_color() -> bool {
    color_allowed(
        std::io::stdout().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
    )
}

/// Paints text with SGR styles, or leaves it plain when colour is off.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Palette {
    pub(crate) color: bool,
}

impl Palette {
    fn paint(self, sgr: &str, text: &str) -> String {
        if self.color && !text.is_empty() {
            format!("\x1b[{sgr}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// Success marks.
    pub(crate) fn green(self, text: &str) -> String {
        self.paint("32", text)
    }

    /// Failure marks and reasons.
    pub(crate) fn red(self, text: &str) -> String {
        self.paint("31", text)
    }

    /// The spinner.
    pub(crate) fn cyan(self, text: &str) -> String {
        self.paint("36", text)
    }

    /// Tool names.
    pub(crate) fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }

    /// Details that matter less than the line's subject.
    pub(crate) fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_set_to_anything_turns_colour_off() {
        use std::ffi::OsStr;
        assert!(color_allowed(true, None));
        assert!(color_allowed(true, Some(OsStr::new(""))));
        assert!(!color_allowed(true, Some(OsStr::new("1"))));
        assert!(!color_allowed(false, None));
    }

    #[test]
    fn plain_palette_writes_no_escapes() {
        let plain = Palette { color: false };
        assert_eq!(plain.red("x"), "x");
        let colored = Palette { color: true };
        assert_eq!(colored.red("x"), "\x1b[31mx\x1b[0m");
        assert_eq!(colored.red(""), "");
    }
}
