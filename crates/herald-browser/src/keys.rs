//! Key names as the model writes them (`Enter`, `Tab`, `Control+a`,
//! `Shift+ArrowDown`) turned into `Input.dispatchKeyEvent` parameters.

use serde_json::{Value, json};

use crate::BrowserError;

/// One key press: what `Input.dispatchKeyEvent` needs for its down and up
/// events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPress {
    /// DOM `key` (`Enter`, `a`).
    pub key: String,
    /// DOM `code` (`Enter`, `KeyA`).
    pub code: String,
    /// Windows virtual key code.
    pub key_code: u32,
    /// Text the key types, if any (none while Control, Alt or Meta is held).
    pub text: Option<String>,
    /// Modifier bits: Alt 1, Control 2, Meta 4, Shift 8.
    pub modifiers: u32,
}

/// Named keys: `(key, code, key code, text)`.
const NAMED: &[(&str, &str, u32, Option<&str>)] = &[
    ("Enter", "Enter", 13, Some("\r")),
    ("Tab", "Tab", 9, None),
    ("Escape", "Escape", 27, None),
    ("Backspace", "Backspace", 8, None),
    ("Delete", "Delete", 46, None),
    ("Insert", "Insert", 45, None),
    ("ArrowUp", "ArrowUp", 38, None),
    ("ArrowDown", "ArrowDown", 40, None),
    ("ArrowLeft", "ArrowLeft", 37, None),
    ("ArrowRight", "ArrowRight", 39, None),
    ("Home", "Home", 36, None),
    ("End", "End", 35, None),
    ("PageUp", "PageUp", 33, None),
    ("PageDown", "PageDown", 34, None),
    (" ", "Space", 32, Some(" ")),
];

/// Other spellings of named keys.
const ALIASES: &[(&str, &str)] = &[
    ("return", "Enter"),
    ("esc", "Escape"),
    ("space", " "),
    ("spacebar", " "),
    ("up", "ArrowUp"),
    ("down", "ArrowDown"),
    ("left", "ArrowLeft"),
    ("right", "ArrowRight"),
    ("del", "Delete"),
    ("pgup", "PageUp"),
    ("pgdn", "PageDown"),
];

fn modifier_bit(name: &str) -> Option<u32> {
    match name.to_ascii_lowercase().as_str() {
        "alt" | "option" => Some(1),
        "control" | "ctrl" => Some(2),
        "meta" | "cmd" | "command" | "super" => Some(4),
        "shift" => Some(8),
        _ => None,
    }
}

/// Parses `Control+Shift+a`-style key names.
pub fn parse(written: &str) -> Result<KeyPress, BrowserError> {
    let bad = || {
        BrowserError::usage(format!(
            "unknown key `{written}`; use a name such as Enter, Tab, Escape, Backspace, ArrowDown, PageDown, F5, a single character, or a combination such as Control+a"
        ))
    };
    // A lone `+` is the plus key, not a separator.
    let (mods, key) = match written.rsplit_once('+') {
        Some((mods, "")) if !mods.is_empty() => (mods.trim_end_matches('+'), "+"),
        Some((mods, key)) if !mods.is_empty() => (mods, key),
        _ => ("", written),
    };
    let mut modifiers = 0;
    for name in mods.split('+').filter(|m| !m.is_empty()) {
        modifiers |= modifier_bit(name.trim()).ok_or_else(bad)?;
    }
    let key = if key == " " { key } else { key.trim() };
    if key.is_empty() {
        return Err(bad());
    }
    let lower = key.to_ascii_lowercase();
    let named = ALIASES
        .iter()
        .find(|(alias, _)| *alias == lower)
        .map_or(key, |(_, name)| name);
    let typing = modifiers & 0b111 == 0;
    if let Some((key, code, key_code, text)) = NAMED
        .iter()
        .find(|(name, ..)| name.eq_ignore_ascii_case(named))
    {
        return Ok(KeyPress {
            key: (*key).to_owned(),
            code: (*code).to_owned(),
            key_code: *key_code,
            text: text.filter(|_| typing).map(str::to_owned),
            modifiers,
        });
    }
    if let Some(n) = lower.strip_prefix('f').and_then(|n| n.parse::<u32>().ok())
        && (1..=12).contains(&n)
    {
        return Ok(KeyPress {
            key: format!("F{n}"),
            code: format!("F{n}"),
            key_code: 111 + n,
            text: None,
            modifiers,
        });
    }
    let mut chars = key.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else {
        return Err(bad());
    };
    let shifted = modifiers & 8 != 0;
    let (code, key_code) = if c.is_ascii_alphabetic() {
        let upper = c.to_ascii_uppercase();
        (format!("Key{upper}"), u32::from(upper))
    } else if c.is_ascii_digit() {
        (format!("Digit{c}"), u32::from(c))
    } else {
        (String::new(), 0)
    };
    let typed = if shifted && c.is_ascii_lowercase() {
        c.to_ascii_uppercase()
    } else {
        c
    };
    Ok(KeyPress {
        key: typed.to_string(),
        code,
        key_code,
        text: typing.then(|| typed.to_string()),
        modifiers,
    })
}

impl KeyPress {
    /// The `keyDown` (or `rawKeyDown` for a key that types nothing) and
    /// `keyUp` parameters.
    pub fn events(&self) -> [Value; 2] {
        let mut down = json!({
            "type": if self.text.is_some() { "keyDown" } else { "rawKeyDown" },
            "key": self.key,
            "code": self.code,
            "windowsVirtualKeyCode": self.key_code,
            "nativeVirtualKeyCode": self.key_code,
            "modifiers": self.modifiers,
        });
        if let Some(text) = &self.text {
            down["text"] = json!(text);
            down["unmodifiedText"] = json!(text);
        }
        let up = json!({
            "type": "keyUp",
            "key": self.key,
            "code": self.code,
            "windowsVirtualKeyCode": self.key_code,
            "nativeVirtualKeyCode": self.key_code,
            "modifiers": self.modifiers,
        });
        [down, up]
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn named_keys_characters_and_combinations() {
        let enter = parse("Enter").unwrap();
        assert_eq!((enter.key_code, enter.text.as_deref()), (13, Some("\r")));
        assert_eq!(parse("return").unwrap().key, "Enter");
        assert_eq!(parse("esc").unwrap().key, "Escape");
        let ctrl_a = parse("Control+a").unwrap();
        assert_eq!((ctrl_a.modifiers, ctrl_a.text.clone()), (2, None));
        assert_eq!(ctrl_a.code, "KeyA");
        let shift_b = parse("Shift+b").unwrap();
        assert_eq!(
            (shift_b.key.as_str(), shift_b.text.as_deref()),
            ("B", Some("B"))
        );
        assert_eq!(parse("F5").unwrap().key_code, 116);
        assert_eq!(parse("+").unwrap().key, "+");
        assert_eq!(parse("Shift++").unwrap().modifiers, 8);
        assert_eq!(parse("Space").unwrap().text.as_deref(), Some(" "));
        assert!(parse("Hyper+x").is_err());
        assert!(parse("Enterr").is_err());
        let [down, up] = parse("Tab").unwrap().events();
        assert_eq!(down["type"], "rawKeyDown");
        assert_eq!(up["type"], "keyUp");
    }
}
