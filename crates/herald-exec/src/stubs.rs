//! The generated `herald_tools` Python module: a small thread-safe RPC client
//! plus one function per allowed tool whose parameters mirror the tool's
//! JSON schema (required ones first, optional ones defaulting to `None`).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use herald_protocol::ToolSpec;
use serde_json::Value;

/// Arguments scripts may not pass, per tool: `terminal` runs in the
/// foreground only, because a background process would outlive the script.
pub(crate) const STRIPPED_ARGS: &[(&str, &str)] = &[("terminal", "background")];

/// Python keywords and builtins-that-are-syntax a parameter cannot be named.
const PY_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// The RPC client shared by every generated function.
const RUNTIME: &str = r#""""Tools of the herald agent for this execute_code run (generated; do not edit).

Each function sends one tool call to herald and returns its result: parsed
JSON when the tool answers with JSON (terminal gives {"output", "exit_code"}),
otherwise the text. A "sandbox: ..." line herald adds after a JSON answer
(the command may have failed because it ran confined) arrives as the
dict's "sandbox" entry. A failed or refused call raises HeraldToolError with the
tool's message. The functions may be called from several threads at once.
"""
import json as _json
import os as _os
import socket as _socket
import threading as _threading

_SOCKET = _os.environ.get("HERALD_RPC_SOCKET", "")
_TOKEN = _os.environ.get("HERALD_RPC_TOKEN", "")
_local = _threading.local()
_ids_lock = _threading.Lock()
_last_id = [0]


class HeraldToolError(Exception):
    """A tool call failed or was refused; the message says why and what to do."""


def _connection():
    conn = getattr(_local, "conn", None)
    if conn is None:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        sock.connect(_SOCKET)
        conn = (sock, sock.makefile("rb"))
        _local.conn = conn
    return conn


def _decode(text):
    if text[:1] in ("{", "["):
        body, sep, note = text.partition("\nsandbox: ")
        try:
            value = _json.loads(body)
        except ValueError:
            return text
        if sep and isinstance(value, dict):
            value["sandbox"] = "sandbox: " + note
        elif sep:
            return text
        return value
    return text


def _call(tool, args):
    with _ids_lock:
        _last_id[0] += 1
        request_id = _last_id[0]
    args = {k: v for k, v in args.items() if v is not None}
    line = _json.dumps({"id": request_id, "tool": tool, "args": args, "token": _TOKEN})
    try:
        sock, reader = _connection()
        sock.sendall(line.encode("utf-8") + b"\n")
        reply = reader.readline()
    except OSError as err:
        _local.conn = None
        raise HeraldToolError("lost the connection to herald: %s" % err) from None
    if not reply:
        _local.conn = None
        raise HeraldToolError("herald closed the tool connection; the run is ending")
    reply = _json.loads(reply)
    if "error" in reply:
        raise HeraldToolError(reply["error"])
    return _decode(reply.get("result", ""))
"#;

/// Source of the `herald_tools` module for `tools` (each must be allowed).
pub fn generate_stubs(tools: &[&ToolSpec]) -> String {
    let mut out = String::from(RUNTIME);
    let mut exported = vec!["HeraldToolError".to_owned()];
    let mut taken: BTreeSet<String> = BTreeSet::new();
    for spec in tools {
        let name = py_identifier(&spec.name);
        if !taken.insert(name.clone()) {
            continue;
        }
        out.push_str("\n\n");
        write_function(&mut out, &name, spec);
        exported.push(name);
    }
    let list: Vec<String> = exported.iter().map(|n| py_str(n)).collect();
    let _ = write!(out, "\n\n__all__ = [{}]\n", list.join(", "));
    out
}

/// One parameter of a generated function.
struct Param {
    /// The JSON property name.
    key: String,
    /// The Python parameter name.
    ident: String,
    required: bool,
    doc: String,
}

fn write_function(out: &mut String, name: &str, spec: &ToolSpec) {
    let params = params_of(spec);
    let signature: Vec<String> = params
        .iter()
        .map(|p| {
            if p.required {
                p.ident.clone()
            } else {
                format!("{}=None", p.ident)
            }
        })
        .collect();
    let mut doc = first_paragraph(&spec.description);
    if !params.is_empty() {
        doc.push_str("\n\nArguments:");
        for p in &params {
            let _ = write!(doc, "\n  {}", p.doc);
        }
    }
    let args: Vec<String> = params
        .iter()
        .map(|p| format!("{}: {}", py_str(&p.key), p.ident))
        .collect();
    let _ = write!(
        out,
        "def {name}({}):\n    {}\n    return _call({}, {{{}}})\n",
        signature.join(", "),
        py_str(&doc),
        py_str(&spec.name),
        args.join(", ")
    );
}

/// Parameters in signature order: required (schema order), then optional
/// (sorted), without stripped arguments.
fn params_of(spec: &ToolSpec) -> Vec<Param> {
    let empty = serde_json::Map::new();
    let props = spec
        .parameters
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = spec
        .parameters
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let stripped = |key: &str| {
        STRIPPED_ARGS
            .iter()
            .any(|(tool, arg)| *tool == spec.name && *arg == key)
    };
    let mut params = Vec::new();
    let mut idents = BTreeSet::new();
    let mut add = |key: &str, is_required: bool| {
        if stripped(key) {
            return;
        }
        let Some(schema) = props.get(key) else {
            return;
        };
        let mut ident = py_identifier(key);
        while !idents.insert(ident.clone()) {
            ident.push('_');
        }
        let kind = type_name(schema);
        let what = if is_required {
            kind
        } else {
            format!("{kind}, optional")
        };
        let description = schema
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        params.push(Param {
            key: key.to_owned(),
            doc: format!("{ident} ({what}): {description}")
                .trim_end_matches([' ', ':'])
                .to_owned(),
            ident,
            required: is_required,
        });
    };
    for key in &required {
        add(key, true);
    }
    let mut optional: Vec<&String> = props
        .keys()
        .filter(|key| !required.contains(&key.as_str()))
        .collect();
    optional.sort();
    for key in optional {
        add(key, false);
    }
    params
}

/// The JSON type(s) of a property, e.g. `integer` or `string|array`.
fn type_name(schema: &Value) -> String {
    match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect::<Vec<_>>()
            .join("|"),
        _ if schema.get("enum").is_some() => "string".to_owned(),
        _ => "any".to_owned(),
    }
}

/// A valid Python identifier for `name`: other characters become `_`, a
/// leading digit or a keyword gets an extra `_`.
fn py_identifier(name: &str) -> String {
    let mut ident: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if ident.is_empty() || ident.starts_with(|c: char| c.is_ascii_digit()) {
        ident.insert(0, '_');
    }
    if PY_KEYWORDS.contains(&ident.as_str()) {
        ident.push('_');
    }
    ident
}

/// A Python string literal for `text`. JSON string syntax is a subset of
/// Python's (same escapes, `\uXXXX` included).
fn py_str(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

/// The description up to its first blank line.
fn first_paragraph(text: &str) -> String {
    text.split("\n\n")
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(name: &str, parameters: Value) -> ToolSpec {
        ToolSpec {
            name: name.to_owned(),
            description: "Does things.\n\nMore detail.".to_owned(),
            parameters,
        }
    }

    #[test]
    fn signatures_mirror_the_schema() {
        let read = spec(
            "read_file",
            json!({"type": "object", "required": ["path"], "properties": {
                "path": {"type": "string", "description": "File path."},
                "offset": {"type": ["integer", "null"]},
                "limit": {"type": ["integer", "null"]}
            }}),
        );
        let code = generate_stubs(&[&read]);
        assert!(
            code.contains("def read_file(path, limit=None, offset=None):"),
            "{code}"
        );
        assert!(code.contains(
            r#"return _call("read_file", {"path": path, "limit": limit, "offset": offset})"#
        ));
        assert!(code.contains(r#"path (string): File path."#), "{code}");
        assert!(code.contains(r#"limit (integer, optional)"#), "{code}");
        assert!(!code.contains("More detail"));
        assert!(code.contains(r#"__all__ = ["HeraldToolError", "read_file"]"#));
    }

    #[test]
    fn terminal_loses_background_and_odd_names_are_made_valid() {
        let terminal = spec(
            "terminal",
            json!({"type": "object", "required": ["command"], "properties": {
                "command": {"type": "string"},
                "background": {"type": ["boolean", "null"]}
            }}),
        );
        let mcp = spec(
            "mcp__fs__read-file",
            json!({"type": "object", "required": ["from"], "properties": {
                "from": {"type": "string"},
                "2nd": {"type": "string"}
            }}),
        );
        let code = generate_stubs(&[&terminal, &mcp]);
        assert!(code.contains("def terminal(command):"), "{code}");
        assert!(!code.contains("background"));
        assert!(
            code.contains("def mcp__fs__read_file(from_, _2nd=None):"),
            "{code}"
        );
        assert!(code.contains(r#"{"from": from_, "2nd": _2nd}"#), "{code}");
    }

    #[test]
    fn docstrings_are_escaped_python_literals() {
        let odd = spec(
            "write_file",
            json!({"type": "object", "properties": {
                "content": {"type": "string", "description": "Say \"hi\"\\ \u{1b}"}
            }}),
        );
        let code = generate_stubs(&[&odd]);
        assert!(code.contains(r#"Say \"hi\"\\ \u001b"#), "{code}");
    }
}
