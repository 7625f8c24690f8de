//! `[pricing."model-name"]`: USD per million tokens for models the built-in
//! table lacks or prices differently (a negotiated rate, a new model, a
//! local server that should count as free with explicit zeros).

use herald_llm::Price;

/// The keys of one `[pricing."model"]` table.
const KEYS: &[&str] = &["input", "output", "cache_read", "cache_write"];

/// Parses `[pricing]`: each entry needs `input` and `output`; `cache_read`
/// and `cache_write` default to `input` (no cache discount assumed). Every
/// price is a number ≥ 0; anything else is an error naming the key.
pub(crate) fn parse(table: &toml::Table) -> Result<Vec<(String, Price)>, String> {
    let mut prices = Vec::with_capacity(table.len());
    for (model, value) in table {
        let Some(entry) = value.as_table() else {
            return Err(format!(
                "[pricing.\"{model}\"] must be a table such as {{ input = 3.0, output = 15.0 }} (USD per million tokens)"
            ));
        };
        if let Some(unknown) = entry.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(format!(
                "[pricing.\"{model}\"] has an unknown key `{unknown}`; the keys are {}",
                KEYS.join(", ")
            ));
        }
        let number = |key: &str| -> Result<Option<f64>, String> {
            match entry.get(key) {
                None => Ok(None),
                Some(value) => {
                    let usd = value
                        .as_float()
                        .or_else(|| value.as_integer().map(|n| n as f64));
                    match usd {
                        Some(usd) if usd.is_finite() && usd >= 0.0 => Ok(Some(usd)),
                        _ => Err(format!(
                            "[pricing.\"{model}\"] {key} = {value} is not a price; give USD per million tokens as a number >= 0"
                        )),
                    }
                }
            }
        };
        let required = |key: &str| -> Result<f64, String> {
            number(key)?.ok_or_else(|| {
                format!("[pricing.\"{model}\"] needs `{key}` (USD per million tokens)")
            })
        };
        let input = required("input")?;
        let output = required("output")?;
        prices.push((
            model.clone(),
            Price {
                input,
                output,
                cache_read: number("cache_read")?.unwrap_or(input),
                cache_write: number("cache_write")?.unwrap_or(input),
            },
        ));
    }
    Ok(prices)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        let mut root: toml::Table = toml::from_str(text).unwrap();
        match root.remove("pricing") {
            Some(toml::Value::Table(t)) => t,
            _ => toml::Table::new(),
        }
    }

    #[test]
    fn entries_parse_with_cache_prices_defaulting_to_input() {
        let prices = parse(&table(
            "[pricing.\"my-model\"]\ninput = 2\noutput = 8.5\n[pricing.\"gpt-4.1\"]\ninput = 1.0\noutput = 4.0\ncache_read = 0.25\ncache_write = 1.25\n",
        ))
        .unwrap();
        let mine = prices.iter().find(|(m, _)| m == "my-model").unwrap().1;
        assert_eq!(
            mine,
            Price {
                input: 2.0,
                output: 8.5,
                cache_read: 2.0,
                cache_write: 2.0
            }
        );
        let gpt = prices.iter().find(|(m, _)| m == "gpt-4.1").unwrap().1;
        assert_eq!(gpt.cache_read, 0.25);
        assert_eq!(gpt.cache_write, 1.25);
    }

    #[test]
    fn bad_entries_name_the_problem() {
        let cases = [
            ("[pricing]\nm = 3\n", "must be a table"),
            ("[pricing.m]\ninput = 1\n", "needs `output`"),
            (
                "[pricing.m]\ninput = -1\noutput = 1\n",
                "input = -1 is not a price",
            ),
            ("[pricing.m]\ninput = \"1\"\noutput = 1\n", "is not a price"),
            (
                "[pricing.m]\ninput = 1\noutput = 1\ncached = 1\n",
                "unknown key `cached`",
            ),
        ];
        for (text, expected) in cases {
            let err = parse(&table(text)).unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }
}
