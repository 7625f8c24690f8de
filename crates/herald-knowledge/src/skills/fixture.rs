//! Skill-pack trees shaped like the public packs (nested categories, Title
//! Case names, long descriptions, hundreds of skills), written into a
//! folder. Tests and `herald-bench skills` use them so pack-scale behaviour
//! is checked on files of the same shape as users' without shipping anyone's
//! skills.

use std::io;
use std::path::{Path, PathBuf};

/// The 43 skills of three popular packs as they are laid out when cloned:
/// a document pack nested one level deeper than the rest.
const POPULAR: [(&str, &str); 43] = [
    ("anthropic/skills", "algorithmic-art"),
    ("anthropic/skills", "brand-guidelines"),
    ("anthropic/skills", "canvas-design"),
    ("anthropic/skills", "doc-coauthoring"),
    ("anthropic/skills", "frontend-design"),
    ("anthropic/skills", "internal-comms"),
    ("anthropic/skills", "mcp-builder"),
    ("anthropic/skills", "skill-creator"),
    ("anthropic/skills", "slack-gif-creator"),
    ("anthropic/skills", "theme-factory"),
    ("anthropic/skills", "web-artifacts-builder"),
    ("anthropic/skills", "webapp-testing"),
    ("anthropic/skills/document-skills", "docx"),
    ("anthropic/skills/document-skills", "pdf"),
    ("anthropic/skills/document-skills", "pptx"),
    ("anthropic/skills/document-skills", "xlsx"),
    ("anthropic/skills", "template-skill"),
    ("superpowers/skills", "brainstorming"),
    ("superpowers/skills", "condition-based-waiting"),
    ("superpowers/skills", "defense-in-depth"),
    ("superpowers/skills", "dispatching-parallel-agents"),
    ("superpowers/skills", "executing-plans"),
    ("superpowers/skills", "finishing-a-development-branch"),
    ("superpowers/skills", "receiving-code-review"),
    ("superpowers/skills", "requesting-code-review"),
    ("superpowers/skills", "root-cause-tracing"),
    ("superpowers/skills", "sharing-skills"),
    ("superpowers/skills", "subagent-driven-development"),
    ("superpowers/skills", "systematic-debugging"),
    ("superpowers/skills", "test-driven-development"),
    ("superpowers/skills", "testing-anti-patterns"),
    ("superpowers/skills", "testing-skills-with-subagents"),
    ("superpowers/skills", "using-git-worktrees"),
    ("superpowers/skills", "using-superpowers"),
    ("superpowers/skills", "verification-before-completion"),
    ("superpowers/skills", "writing-plans"),
    ("superpowers/skills", "writing-skills"),
    ("trailofbits/plugins/audit/skills", "audit-context-building"),
    ("trailofbits/plugins/audit/skills", "differential-review"),
    ("trailofbits/plugins/audit/skills", "fix-review"),
    ("trailofbits/plugins/semgrep/skills", "semgrep-rule-creator"),
    (
        "trailofbits/plugins/testing/skills",
        "property-based-testing",
    ),
    (
        "trailofbits/plugins/crypto/skills",
        "constant-time-analysis",
    ),
];

const SERVICES: [&str; 36] = [
    "Ahrefs",
    "Airtable",
    "Asana",
    "Bitbucket",
    "Calendly",
    "Clickup",
    "Confluence",
    "Discord",
    "Dropbox",
    "Figma",
    "Freshdesk",
    "Github",
    "Gitlab",
    "Gmail",
    "Hubspot",
    "Intercom",
    "Jira",
    "Linear",
    "Mailchimp",
    "Miro",
    "Monday",
    "Notion",
    "Outlook",
    "Pagerduty",
    "Pipedrive",
    "Quickbooks",
    "Salesforce",
    "Sendgrid",
    "Shopify",
    "Slack",
    "Stripe",
    "Trello",
    "Twilio",
    "Webflow",
    "Zendesk",
    "Zoom",
];

const TASKS: [&str; 16] = [
    "create and update records",
    "search and filter items",
    "manage users and permissions",
    "send messages and notifications",
    "export reports",
    "sync contacts",
    "schedule events",
    "triage incoming tickets",
    "track issues and comments",
    "upload and share files",
    "read analytics and metrics",
    "manage webhooks",
    "handle invoices and payments",
    "organise projects and boards",
    "audit backlinks and keywords",
    "archive stale content",
];

const TRIGGERS: [&str; 12] = [
    "the user asks to automate a workflow end to end",
    "a task spans several tools and needs an auditable plan",
    "tests fail intermittently and the cause is unclear",
    "a document must keep its formatting, tracked changes and comments",
    "a review needs evidence rather than opinion",
    "the change touches security-sensitive code paths",
    "work should be split among parallel subagents",
    "you are about to claim that something is done or fixed",
    "a new integration must be built against an unfamiliar API",
    "results have to be verified before they are reported",
    "the repository has no tests for the code being changed",
    "output must follow the organisation's brand and tone",
];

/// A deterministic pseudo-random number for `seed` (no dependency, same on
/// every machine).
fn mix(seed: usize) -> usize {
    let mut x = (seed as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 32;
    x as usize
}

/// A description of the length and shape public packs use, varying with
/// `seed`: a short trigger ("Use when ..."), or what the skill does followed
/// by when to use it, about 60 to 700 chars.
pub fn realistic_description(name: &str, seed: usize) -> String {
    let words = name.replace('-', " ");
    let task = |k: usize| TASKS[mix(seed + k) % TASKS.len()];
    let trigger = |k: usize| TRIGGERS[mix(seed + 10 + k) % TRIGGERS.len()];
    let mut text = match mix(seed + 5) % 5 {
        0 => format!("Use when {}", trigger(0)),
        1 => format!(
            "Guide for {words}: {}, {} and {}.",
            task(0),
            task(1),
            task(2)
        ),
        2 => format!(
            "{} toolkit for {}, {}, and {}.",
            words.to_uppercase(),
            task(0),
            task(1),
            task(2)
        ),
        3 => format!(
            "Comprehensive guidance for {words} ({}; {}).",
            task(0),
            task(1)
        ),
        _ => format!("Apply {words} to {} and {}.", task(0), task(1)),
    };
    for k in 1..=mix(seed + 3) % 5 {
        let lead = if text.ends_with('.') {
            " Use when"
        } else {
            ", or when"
        };
        text.push_str(&format!("{lead} {}", trigger(k)));
    }
    if !text.ends_with('.') {
        text.push('.');
    }
    if mix(seed + 4).is_multiple_of(3) {
        text.push_str(" Not for one-off questions that need no procedure; answer those directly without loading the skill.");
    }
    text
}

/// Writes `root/rel/SKILL.md` with the given front matter lines (`name:`
/// left out when `name` is `None`) and a short body; returns the folder.
pub fn write_skill(
    root: &Path,
    rel: &str,
    name: Option<&str>,
    description: &str,
    extra_front: &str,
) -> io::Result<PathBuf> {
    let dir = root.join(rel);
    std::fs::create_dir_all(&dir)?;
    let mut text = String::from("---\n");
    if let Some(name) = name {
        text.push_str(&format!("name: {name}\n"));
    }
    // A JSON string is a valid double-quoted YAML scalar.
    let quoted = format!(
        "\"{}\"",
        description.replace('\\', "\\\\").replace('"', "\\\"")
    );
    text.push_str(&format!("description: {quoted}\n{extra_front}---\n"));
    text.push_str(&format!(
        "# {}\n\n## Steps\n1. Read the task.\n2. Do the work.\n3. Verify it.\n",
        name.unwrap_or(rel)
    ));
    std::fs::write(dir.join("SKILL.md"), text)?;
    Ok(dir)
}

/// The 43 skills of three popular packs under `root` (each pack in its own
/// nested layout, realistic long descriptions). Returns their names, sorted.
pub fn popular_packs(root: &Path) -> io::Result<Vec<String>> {
    let mut names = Vec::with_capacity(POPULAR.len());
    for (i, (pack, name)) in POPULAR.iter().enumerate() {
        let description = realistic_description(name, i * 7);
        write_skill(
            root,
            &format!("{pack}/{name}"),
            Some(name),
            &description,
            "",
        )?;
        names.push((*name).to_owned());
    }
    names.sort();
    Ok(names)
}

/// A Composio-style pack of `count` skills under
/// `root/composio-skills/<slug>/` (`ahrefs-automation`, `ahrefs-2-automation`,
/// ...): one in 13 declares a Title Case `name:` ("Ahrefs Automation"), as
/// the published pack does. Returns the names herald loads them under
/// (the folder names), sorted.
pub fn service_pack(root: &Path, count: usize) -> io::Result<Vec<String>> {
    let mut names = Vec::with_capacity(count);
    for i in 0..count {
        let service = SERVICES[i % SERVICES.len()];
        let round = i / SERVICES.len();
        let title = if round == 0 {
            format!("{service} Automation")
        } else {
            format!("{service} {} Automation", round + 1)
        };
        let slug = title.to_lowercase().replace(' ', "-");
        let declared = if i.is_multiple_of(13) {
            title.clone()
        } else {
            slug.clone()
        };
        let description = format!(
            "Automate {title} tasks via Rube MCP (Composio): {}, {} and {}. Always search tools first for current schemas.",
            TASKS[mix(i) % TASKS.len()],
            TASKS[mix(i + 1) % TASKS.len()],
            TASKS[mix(i + 2) % TASKS.len()],
        );
        write_skill(
            root,
            &format!("composio-skills/{slug}"),
            Some(&declared),
            &description,
            "requires:\n  mcp: [rube]\n",
        )?;
        names.push(slug);
    }
    names.sort();
    Ok(names)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_vary_and_read_like_real_ones() {
        let lengths: Vec<usize> = (0..50)
            .map(|i| realistic_description("pdf", i).chars().count())
            .collect();
        assert!(
            lengths.iter().all(|n| (40..=800).contains(n)),
            "{lengths:?}"
        );
        assert!(lengths.iter().max().unwrap() - lengths.iter().min().unwrap() > 200);
        assert_eq!(
            realistic_description("pdf", 3),
            realistic_description("pdf", 3)
        );
    }

    #[test]
    fn packs_are_written_with_distinct_names() {
        let dir = tempfile::tempdir().unwrap();
        let popular = popular_packs(dir.path()).unwrap();
        assert_eq!(popular.len(), 43);
        let pack = service_pack(dir.path(), 100).unwrap();
        let mut all = pack.clone();
        all.dedup();
        assert_eq!(all.len(), 100);
        let text = std::fs::read_to_string(
            dir.path()
                .join("composio-skills/ahrefs-automation/SKILL.md"),
        )
        .unwrap();
        assert!(text.starts_with("---\nname: Ahrefs Automation\n"), "{text}");
    }
}
