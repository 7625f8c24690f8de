//! Puts an `approval.requested` event to the person at the terminal and
//! sends their answer back to the session.

use herald_core::ApprovalAnswer;
use herald_core::runtime::Session;
use herald_protocol::{Event, EventKind};
use tokio::io::{AsyncBufRead, Lines};

/// Invalid answers tolerated before the request is denied.
const ATTEMPTS: usize = 3;

/// The prompt for one request (without the input line).
pub(crate) fn render(event: &Event) -> Option<String> {
    let EventKind::ApprovalRequested {
        tool,
        arguments,
        reason,
        rule,
        allow_rule,
        ..
    } = &event.kind
    else {
        return None;
    };
    let who = if event.agent_id == "root" {
        String::new()
    } else {
        format!(" (asked by subagent {})", event.agent_id)
    };
    let args: String = arguments.chars().take(400).collect();
    let mut text = format!("\n⚠ approval needed{who}: {tool} {args}\n  why: {reason}");
    if let Some(rule) = rule {
        text.push_str(&format!(" [{rule}]"));
    }
    text.push_str(&choices(allow_rule.as_deref()));
    Some(text)
}

/// The answers, saying exactly which rule "session" keeps and "always"
/// saves, or that none can be (then both run the call once).
fn choices(allow_rule: Option<&str>) -> String {
    match allow_rule.map(herald_protocol::terminal_safe) {
        Some(rule) => format!(
            "\n  rule: {rule}\n  y = run once   s = allow the rule for this session\n  \
             a = always (saves allow rule \"{rule}\")\n  \
             n = deny (\"n <message>\" tells the model why)\n"
        ),
        None => {
            "\n  no rule can allow this call: s and a run it once, and it asks again next time\n  \
                 y = run once   n = deny (\"n <message>\" tells the model why)\n"
                .to_owned()
        }
    }
}

/// Reads `y`/`s`/`a`/`n [message]` and answers request `request_id`.
/// False when the input ended (the request is then denied).
pub(crate) async fn answer<R: AsyncBufRead + Unpin>(
    session: &Session,
    request_id: &str,
    lines: &mut Lines<R>,
) -> bool {
    for _ in 0..ATTEMPTS {
        eprint!("approve [y/s/a/n]> ");
        let line = match lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) | Err(_) => break,
        };
        let line = line.trim();
        let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let message = Some(rest.trim().to_owned()).filter(|m| !m.is_empty());
        let parsed = match word.to_ascii_lowercase().as_str() {
            "n" | "no" | "deny" => Ok(ApprovalAnswer::Deny { message }),
            other => ApprovalAnswer::parse(other, None),
        };
        match parsed {
            Ok(decision) => match session.submit(decision.into_op(request_id)) {
                Ok(_) => return true,
                Err(err) => {
                    eprintln!("({err})");
                    return false;
                }
            },
            Err(err) => eprintln!("({err})"),
        }
    }
    let _ = session.submit(
        ApprovalAnswer::Deny {
            message: Some("no answer came from the terminal".to_owned()),
        }
        .into_op(request_id),
    );
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use herald_protocol::{Event, EventKind};

    fn request(allow_rule: Option<&str>) -> Event {
        Event::new(
            "ses_1",
            "root",
            EventKind::ApprovalRequested {
                request_id: "apr_1".into(),
                tool: "terminal".into(),
                arguments: r#"{"command":"rm -rf build/"}"#.into(),
                reason: "`rm -rf build/` deletes a directory tree recursively".into(),
                rule: Some("recursive-delete".into()),
                allow_rule: allow_rule.map(str::to_owned),
            },
        )
    }

    #[test]
    fn the_prompt_shows_the_rule_an_answer_keeps() {
        let text = render(&request(Some("terminal(rm -rf build/)"))).unwrap_or_default();
        assert!(text.contains("rule: terminal(rm -rf build/)"), "{text}");
        assert!(
            text.contains("a = always (saves allow rule \"terminal(rm -rf build/)\")"),
            "{text}"
        );
        let text = render(&request(None)).unwrap_or_default();
        assert!(text.contains("no rule can allow this call"), "{text}");
        assert!(!text.contains("saves"), "{text}");
    }
}
