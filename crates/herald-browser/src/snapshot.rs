//! The page as the model reads it: the accessibility tree
//! (`Accessibility.getFullAXTree`) as a compact indented outline, one
//! line per meaningful node, where every element the model can act on
//! carries a ref (`[e12]`) that names its DOM node to the action tools.
//!
//! ```text
//! - heading "Order" (level=1)
//! - textbox "Name" (required) [e1]
//! - checkbox "Gift wrap" (unchecked) [e2]
//! - button "Submit" [e3]
//! - text: Prices include VAT.
//! ```
//!
//! Refs are stable within a page load: the same DOM node keeps its ref in
//! every snapshot, and numbers are never reused in a tab, so a ref from an
//! earlier page is reported as stale rather than pointing somewhere else.

use std::collections::HashMap;

use serde_json::Value;

use crate::BrowserError;

/// Roles the model acts on; they get a ref.
const INTERACTIVE: &[&str] = &[
    "button",
    "link",
    "textbox",
    "searchbox",
    "checkbox",
    "radio",
    "combobox",
    "listbox",
    "option",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "tab",
    "switch",
    "slider",
    "spinbutton",
    "treeitem",
    "gridcell",
    "columnheader",
    "DisclosureTriangle",
    "PopUpButton",
    "ToggleButton",
    "MenuListOption",
    "ColorWell",
    "Date",
    "DateTime",
    "InputTime",
];

/// Roles that also get a ref (to scroll to or to screenshot).
const LANDMARKS: &[&str] = &["heading", "image", "img", "Iframe", "dialog", "alertdialog"];

/// Wrappers that add nothing when they have no name: their children are
/// shown in their place.
const TRANSPARENT: &[&str] = &[
    "generic",
    "none",
    "presentation",
    "LabelText",
    "Section",
    "Div",
    "strong",
    "emphasis",
    "Abbr",
    "Mark",
    "time",
    "code",
    "subscript",
    "superscript",
    "Ruby",
    "LayoutTable",
    "LayoutTableRow",
    "LayoutTableCell",
    "group",
];

/// Roles never shown: their text is already in their parent's.
const HIDDEN: &[&str] = &["InlineTextBox", "ListMarker", "LineBreak"];

/// Longest name shown; longer ones are cut with `…`.
const NAME_CHARS: usize = 300;
/// Longest text line shown.
const TEXT_CHARS: usize = 2_000;
/// Deepest nesting walked; deeper content is left out with a note.
const MAX_DEPTH: usize = 400;

/// What a ref names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefTarget {
    /// The DOM node (`backendNodeId`).
    pub backend: i64,
    /// How the node was shown: `button "Submit"`.
    pub label: String,
}

/// The refs of one tab.
#[derive(Debug, Default)]
pub struct Refs {
    /// The last number given out; never reset, so numbers are not reused.
    last: u32,
    by_node: HashMap<i64, u32>,
    by_ref: HashMap<u32, RefTarget>,
}

impl Refs {
    /// A new document was loaded: its nodes are new, earlier refs stale.
    pub fn new_document(&mut self) {
        self.by_node.clear();
        self.by_ref.clear();
    }

    fn assign(&mut self, backend: i64, label: &str) -> u32 {
        let number = match self.by_node.get(&backend) {
            Some(number) => *number,
            None => {
                self.last += 1;
                self.by_node.insert(backend, self.last);
                self.last
            }
        };
        self.by_ref.insert(
            number,
            RefTarget {
                backend,
                label: label.to_owned(),
            },
        );
        number
    }

    /// The node `reference` (`e12`, `[e12]` or `12`) names.
    pub fn get(&self, reference: &str) -> Result<&RefTarget, BrowserError> {
        let trimmed = reference
            .trim()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim_start_matches("ref=");
        let number: Option<u32> = trimmed.strip_prefix('e').unwrap_or(trimmed).parse().ok();
        let Some(number) = number else {
            return Err(BrowserError::usage(format!(
                "`{reference}` is not a ref; pass a ref such as e12 from the latest browser_snapshot"
            )));
        };
        self.by_ref.get(&number).ok_or_else(|| {
            let why = if number <= self.last {
                "it belongs to a page that has since been left or reloaded"
            } else {
                "no snapshot of this page showed it"
            };
            BrowserError::usage(format!(
                "unknown ref e{number}: {why}; take a new browser_snapshot and use its refs"
            ))
        })
    }
}

/// One node of the tree, as far as the outline needs it.
#[derive(Debug)]
struct Node<'a> {
    ignored: bool,
    role: &'a str,
    name: String,
    value: Option<String>,
    properties: Vec<(&'a str, &'a Value)>,
    children: Vec<&'a str>,
    backend: Option<i64>,
}

fn ax_value(value: Option<&Value>) -> Option<&Value> {
    value.and_then(|v| v.get("value"))
}

fn ax_string(value: Option<&Value>) -> Option<String> {
    match ax_value(value)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn parse(nodes: &[Value]) -> (HashMap<&str, Node<'_>>, Option<&str>) {
    let mut map = HashMap::with_capacity(nodes.len());
    let mut root = None;
    for node in nodes {
        let Some(id) = node.get("nodeId").and_then(Value::as_str) else {
            continue;
        };
        if root.is_none() && node.get("parentId").is_none() {
            root = Some(id);
        }
        let properties = node
            .get("properties")
            .and_then(Value::as_array)
            .map(|props| {
                props
                    .iter()
                    .filter_map(|p| {
                        let name = p.get("name")?.as_str()?;
                        Some((name, ax_value(p.get("value")).unwrap_or(&Value::Null)))
                    })
                    .collect()
            })
            .unwrap_or_default();
        map.insert(
            id,
            Node {
                ignored: node.get("ignored").and_then(Value::as_bool) == Some(true),
                role: ax_value(node.get("role"))
                    .and_then(Value::as_str)
                    .unwrap_or(""),
                name: ax_string(node.get("name")).unwrap_or_default(),
                value: ax_string(node.get("value")),
                properties,
                children: node
                    .get("childIds")
                    .and_then(Value::as_array)
                    .map(|ids| ids.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default(),
                backend: node.get("backendDOMNodeId").and_then(Value::as_i64),
            },
        );
    }
    (map, root)
}

/// Whitespace collapsed, cut at `max` characters.
fn clean(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max + 4));
    let mut count = 0;
    for word in text.split_whitespace() {
        if count > 0 {
            out.push(' ');
            count += 1;
        }
        for c in word.chars() {
            if count == max {
                out.push('…');
                return out;
            }
            out.push(c);
            count += 1;
        }
    }
    out
}

/// One output line.
struct Line {
    depth: usize,
    text: String,
    /// A text line (`StaticText`), which may merge with its neighbours.
    plain: Option<String>,
}

struct Walker<'a, 'r> {
    nodes: HashMap<&'a str, Node<'a>>,
    refs: &'r mut Refs,
    cut: bool,
}

impl Walker<'_, '_> {
    fn walk(&mut self, id: &str, depth: usize, level: usize, out: &mut Vec<Line>) {
        if level > MAX_DEPTH {
            self.cut = true;
            return;
        }
        let Some(node) = self.nodes.get(id) else {
            return;
        };
        let children: Vec<String> = node.children.iter().map(|c| (*c).to_owned()).collect();
        if node.ignored || node.role == "RootWebArea" {
            for child in &children {
                self.walk(child, depth, level + 1, out);
            }
            return;
        }
        if HIDDEN.contains(&node.role) {
            return;
        }
        if node.role == "StaticText" {
            let text = clean(&node.name, TEXT_CHARS);
            if !text.is_empty() {
                out.push(Line {
                    depth,
                    text: String::new(),
                    plain: Some(text),
                });
            }
            return;
        }
        let name = clean(&node.name, NAME_CHARS);
        let focusable = node
            .properties
            .iter()
            .any(|(k, v)| *k == "focusable" && v.as_bool() == Some(true));
        let wants_ref = node.backend.is_some()
            && (INTERACTIVE.contains(&node.role)
                || (LANDMARKS.contains(&node.role) && !name.is_empty())
                || focusable);
        if !wants_ref && name.is_empty() && TRANSPARENT.contains(&node.role) {
            for child in &children {
                self.walk(child, depth, level + 1, out);
            }
            return;
        }
        let mut line = format!("- {}", node.role);
        if !name.is_empty() {
            line.push_str(&format!(" {name:?}"));
        }
        let label = line[2..].to_owned();
        let states = states(node);
        if !states.is_empty() {
            line.push_str(&format!(" ({})", states.join(", ")));
        }
        if wants_ref && let Some(backend) = node.backend {
            let number = self.refs.assign(backend, &label);
            line.push_str(&format!(" [e{number}]"));
        }
        let value = node.value.as_deref().map(|v| clean(v, TEXT_CHARS));
        let mut inner = Vec::new();
        for child in &children {
            self.walk(child, depth + 1, level + 1, &mut inner);
        }
        // A link's or button's text repeats its name, a field's its value.
        inner.retain(|l| {
            l.depth != depth + 1
                || (l.plain.as_deref() != Some(name.as_str())
                    && (value.is_none() || l.plain.as_deref() != value.as_deref()))
        });
        let inner = merge_text(inner);
        match inner.as_slice() {
            [only] if only.plain.is_some() && only.depth == depth + 1 => {
                line.push_str(": ");
                line.push_str(only.plain.as_deref().unwrap_or_default());
                out.push(Line {
                    depth,
                    text: line,
                    plain: None,
                });
            }
            _ => {
                out.push(Line {
                    depth,
                    text: line,
                    plain: None,
                });
                out.extend(inner);
            }
        }
    }
}

/// The states shown after a node's name: `checked`, `disabled`,
/// `level=2`, `value="…"`.
fn states(node: &Node<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for (key, value) in &node.properties {
        let truthy = value.as_bool() == Some(true) || value.as_str() == Some("true");
        match *key {
            "checked" => out.push(
                match value
                    .as_str()
                    .map(str::to_owned)
                    .or_else(|| value.as_bool().map(|b| b.to_string()))
                {
                    Some(s) if s == "true" => "checked",
                    Some(s) if s == "mixed" => "mixed",
                    _ => "unchecked",
                }
                .to_owned(),
            ),
            "pressed" if truthy => out.push("pressed".to_owned()),
            "expanded" => out.push(if truthy { "expanded" } else { "collapsed" }.to_owned()),
            "selected" | "disabled" | "required" | "readonly" | "focused" | "modal" if truthy => {
                out.push((*key).to_owned());
            }
            "invalid" if value.as_str().is_some_and(|v| v != "false") => {
                out.push("invalid".to_owned());
            }
            "level" => out.push(format!("level={}", value)),
            "url" => {
                if let Some(url) = value.as_str().filter(|u| !u.is_empty()) {
                    out.push(format!("url={}", clean(url, 150)));
                }
            }
            _ => {}
        }
    }
    if let Some(value) = node.value.as_deref().filter(|v| !v.is_empty()) {
        out.push(format!("value={:?}", clean(value, NAME_CHARS)));
    }
    out
}

/// Text lines next to each other at one depth become one line.
fn merge_text(lines: Vec<Line>) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::with_capacity(lines.len());
    for line in lines {
        if let (Some(text), Some(last)) = (&line.plain, out.last_mut())
            && last.depth == line.depth
            && let Some(previous) = &mut last.plain
        {
            previous.push(' ');
            previous.push_str(text);
            continue;
        }
        out.push(line);
    }
    out
}

/// The outline of the tree `Accessibility.getFullAXTree` returned
/// (`{"nodes": […]}`), refs given out through `refs`.
pub fn render(tree: &Value, refs: &mut Refs) -> String {
    let nodes = tree
        .get("nodes")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let (map, root) = parse(nodes);
    let Some(root) = root else {
        return "(the page has no content)".to_owned();
    };
    let mut walker = Walker {
        nodes: map,
        refs,
        cut: false,
    };
    let mut lines = Vec::new();
    walker.walk(root, 0, 0, &mut lines);
    let lines = merge_text(lines);
    let mut out = String::new();
    for line in &lines {
        for _ in 0..line.depth {
            out.push_str("  ");
        }
        match &line.plain {
            Some(text) => {
                out.push_str("- text: ");
                out.push_str(text);
            }
            None => out.push_str(&line.text),
        }
        out.push('\n');
    }
    if walker.cut {
        out.push_str(&format!(
            "[content nested deeper than {MAX_DEPTH} levels is left out]\n"
        ));
    }
    if out.is_empty() {
        out.push_str("(the page has no content)\n");
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(id: &str, parent: Option<&str>, role: &str, name: &str, children: &[&str]) -> Value {
        let mut n = json!({
            "nodeId": id,
            "ignored": false,
            "role": {"type": "role", "value": role},
            "name": {"type": "computedString", "value": name},
            "childIds": children,
            "backendDOMNodeId": id.parse::<i64>().unwrap() + 100,
        });
        if let Some(parent) = parent {
            n["parentId"] = json!(parent);
        }
        n
    }

    fn page() -> Value {
        let mut checkbox = node("6", Some("3"), "checkbox", "Gift wrap", &[]);
        checkbox["properties"] =
            json!([{"name": "checked", "value": {"type": "tristate", "value": "false"}}]);
        let mut heading = node("2", Some("1"), "heading", "Order", &["9"]);
        heading["properties"] =
            json!([{"name": "level", "value": {"type": "integer", "value": 1}}]);
        let mut textbox = node("4", Some("3"), "textbox", "Name", &[]);
        textbox["value"] = json!({"type": "string", "value": "Bob"});
        let mut ignored = node("8", Some("1"), "generic", "", &["10"]);
        ignored["ignored"] = json!(true);
        json!({"nodes": [
            node("1", None, "RootWebArea", "Shop", &["2", "3", "8"]),
            heading,
            node("9", Some("2"), "StaticText", "Order", &[]),
            node("3", Some("1"), "generic", "", &["4", "6", "5", "7"]),
            textbox,
            checkbox,
            node("5", Some("3"), "button", "Submit", &["11"]),
            node("11", Some("5"), "StaticText", "Submit", &[]),
            node("7", Some("3"), "StaticText", "Prices   include\nVAT.", &[]),
            ignored,
            node("10", Some("8"), "link", "Second page", &[]),
        ]})
    }

    #[test]
    fn the_outline_shows_roles_names_states_and_refs() {
        let mut refs = Refs::default();
        let text = render(&page(), &mut refs);
        assert_eq!(
            text,
            "- heading \"Order\" (level=1) [e1]\n\
             - textbox \"Name\" (value=\"Bob\") [e2]\n\
             - checkbox \"Gift wrap\" (unchecked) [e3]\n\
             - button \"Submit\" [e4]\n\
             - text: Prices include VAT.\n\
             - link \"Second page\" [e5]\n"
        );
        assert_eq!(refs.get("e4").unwrap().backend, 105);
        assert_eq!(refs.get("[e4]").unwrap().label, "button \"Submit\"");
        assert_eq!(refs.get("4").unwrap().backend, 105);
    }

    #[test]
    fn refs_are_stable_within_a_page_and_never_reused_after_it() {
        let mut refs = Refs::default();
        let first = render(&page(), &mut refs);
        assert_eq!(render(&page(), &mut refs), first);
        refs.new_document();
        let err = refs.get("e4").unwrap_err().to_string();
        assert!(err.contains("left or reloaded"), "{err}");
        let second = render(&page(), &mut refs);
        assert!(second.contains("button \"Submit\" [e9]"), "{second}");
        let err = refs.get("e99").unwrap_err().to_string();
        assert!(err.contains("no snapshot"), "{err}");
        assert!(refs.get("submit").is_err());
    }

    #[test]
    fn an_empty_tree_says_so() {
        let mut refs = Refs::default();
        assert!(render(&json!({"nodes": []}), &mut refs).contains("no content"));
    }

    #[test]
    fn names_are_cut_and_whitespace_collapsed() {
        assert_eq!(clean("  a \n b  ", 10), "a b");
        assert_eq!(clean("abcdef", 3), "abc…");
    }
}
