//! One entry of an `allow` list: a rule (`"terminal(cargo *)"`), or a
//! table that also grants the network to the confined calls it allows
//! (`{ rule = "terminal(curl *)", network = true }`).

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An `allow` entry of `[permissions]` or a rules file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowRule {
    /// `tool(argument-glob)`.
    pub rule: String,
    /// Calls it allows get the network even where confined calls get
    /// none (`network = false`).
    pub network: bool,
}

impl AllowRule {
    /// A plain rule (no network grant).
    pub fn new(rule: impl Into<String>) -> Self {
        Self {
            rule: rule.into(),
            network: false,
        }
    }
}

impl From<&str> for AllowRule {
    fn from(rule: &str) -> Self {
        Self::new(rule)
    }
}

impl From<String> for AllowRule {
    fn from(rule: String) -> Self {
        Self::new(rule)
    }
}

impl fmt::Display for AllowRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.rule)?;
        if self.network {
            f.write_str(" (with network)")?;
        }
        Ok(())
    }
}

impl Serialize for AllowRule {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !self.network {
            return s.serialize_str(&self.rule);
        }
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("rule", &self.rule)?;
        map.serialize_entry("network", &true)?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for AllowRule {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(EntryVisitor)
    }
}

struct EntryVisitor;

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = AllowRule;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "a rule such as \"terminal(cargo *)\" or a table such as \
             { rule = \"terminal(curl *)\", network = true }",
        )
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<AllowRule, E> {
        Ok(AllowRule::new(v))
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<AllowRule, M::Error> {
        let mut rule: Option<String> = None;
        let mut network = false;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "rule" => rule = Some(map.next_value()?),
                "network" => network = map.next_value()?,
                other => {
                    return Err(de::Error::custom(format!(
                        "unknown key `{other}` in an allow table; it takes `rule` and `network`"
                    )));
                }
            }
        }
        let rule = rule.ok_or_else(|| {
            de::Error::custom(
                "an allow table needs `rule`, as in { rule = \"terminal(curl *)\", network = true }",
            )
        })?;
        Ok(AllowRule { rule, network })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, Serialize)]
    struct List {
        allow: Vec<AllowRule>,
    }

    #[test]
    fn strings_and_tables_read_and_write_back_the_same() {
        let text = "allow = [\"terminal(cargo *)\", { rule = \"terminal(curl *)\", network = true }, { rule = \"x\", network = false }]\n";
        let list: List = toml::from_str(text).unwrap();
        assert_eq!(
            list.allow,
            [
                AllowRule::new("terminal(cargo *)"),
                AllowRule {
                    rule: "terminal(curl *)".into(),
                    network: true
                },
                AllowRule::new("x"),
            ]
        );
        let back = toml::to_string(&list).unwrap();
        let again: List = toml::from_str(&back).unwrap();
        assert_eq!(again.allow, list.allow);
        assert!(back.contains("network = true"), "{back}");
    }

    #[test]
    fn bad_entries_say_what_an_entry_is() {
        for (text, want) in [
            (
                "allow = [{ rule = \"x\", netwrok = true }]",
                "unknown key `netwrok`",
            ),
            ("allow = [{ network = true }]", "needs `rule`"),
            (
                "allow = [{ rule = \"x\", network = \"yes\" }]",
                "invalid type",
            ),
            ("allow = [3]", "a rule such as"),
        ] {
            let err = toml::from_str::<List>(text).unwrap_err().to_string();
            assert!(err.contains(want), "{text}: {err}");
        }
    }
}
