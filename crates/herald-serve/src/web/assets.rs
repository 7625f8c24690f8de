//! The UI's files, compiled into the binary: nothing is fetched from
//! elsewhere and nothing is built with another toolchain.

/// One embedded file.
pub(crate) struct Asset {
    pub(crate) content_type: &'static str,
    pub(crate) body: &'static str,
}

const JS: &str = "text/javascript; charset=utf-8";

macro_rules! assets {
    ($($name:literal => $type:expr),* $(,)?) => {
        /// The file `name`, if the UI has one.
        pub(crate) fn find(name: &str) -> Option<Asset> {
            match name {
                $($name => Some(Asset { content_type: $type, body: include_str!(concat!("assets/", $name)) }),)*
                _ => None,
            }
        }

        /// Every file's name (for tests).
        #[cfg(test)]
        pub(crate) const NAMES: &[&str] = &[$($name),*];
    };
}

assets! {
    "index.html" => "text/html; charset=utf-8",
    "style.css" => "text/css; charset=utf-8",
    "icon.svg" => "image/svg+xml",
    "app.js" => JS,
    "api.js" => JS,
    "dom.js" => JS,
    "markdown.js" => JS,
    "sessions.js" => JS,
    "session.js" => JS,
    "agents.js" => JS,
    "questions.js" => JS,
    "usage.js" => JS,
    "settings.js" => JS,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_is_there_and_no_script_is_inline() {
        for name in NAMES {
            assert!(find(name).is_some_and(|a| !a.body.is_empty()), "{name}");
        }
        let index = find("index.html").map(|a| a.body).unwrap_or_default();
        assert!(!index.contains("<script>"), "the CSP forbids inline script");
        assert!(
            !index.contains("http://") && !index.contains("https://"),
            "nothing from elsewhere"
        );
        assert!(find("../lib.rs").is_none());
    }
}
