use std::path::{Path, PathBuf};

use crate::analyzer::{self, Env};
use crate::paths::{self, Resolved, Workspace, WriteClass};
use crate::rules::{HOST_TOOLS, Rule, Source, exact_paths, exact_text};
use crate::shell::{Finding, Severity, short};
use crate::{Decision, Mode, Verdict};

/// Everything a [`Policy`] is built from.
#[derive(Debug, Clone, Default)]
pub struct PolicyConfig {
    pub mode: Mode,
    /// User rules (`~/.herald/config.toml` and approvals saved "always").
    pub allow: Vec<String>,
    /// Allow rules that also grant the network to the confined calls they
    /// allow (`{rule = "terminal(curl *)", network = true}`); not repeated
    /// in `allow`.
    pub allow_network: Vec<String>,
    pub ask: Vec<String>,
    pub deny: Vec<String>,
    /// Project rules (`.herald/permissions.toml`): they may only tighten.
    pub project_ask: Vec<String>,
    pub project_deny: Vec<String>,
    /// Extra directories writable in workspace-write besides the working
    /// directory and temp directories.
    pub writable_roots: Vec<PathBuf>,
    /// The user's home directory (for `~` and credential paths).
    pub home: Option<PathBuf>,
    /// Whether the kernel can confine commands (Landlock). When false, every
    /// non-read-only command asks in workspace-write instead of running
    /// unconfined.
    pub sandbox_available: bool,
    /// Tools (MCP) a configured server marks read-only.
    pub read_only_tools: Vec<String>,
}

/// A rule that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("invalid permission rule '{rule}': {why}")]
pub struct RuleError {
    pub rule: String,
    pub why: String,
}

/// One call to decide on.
#[derive(Debug, Clone, Copy)]
pub struct CallInfo<'a> {
    /// Tool name as the model called it.
    pub tool: &'a str,
    /// Its (already validated) arguments.
    pub args: &'a serde_json::Value,
    /// The calling agent's working directory.
    pub cwd: &'a Path,
    /// Whether the tool declares itself read-only.
    pub read_only: bool,
}

/// The compiled permission policy of one session.
#[derive(Debug, Clone)]
pub struct Policy {
    config: PolicyConfig,
    allow: Vec<Rule>,
    ask: Vec<Rule>,
    deny: Vec<Rule>,
    /// `writable_roots` and the temp directories, resolved once.
    writable_roots: Vec<Resolved>,
}

/// Tools that only touch herald's own state (or ask the user): they run in
/// every mode. Knowledge tools write only herald's own store.
const ALWAYS_ALLOWED: &[&str] = &[
    "process",
    "delegate_task",
    "agent_status",
    "agent_list",
    "agent_wait",
    "agent_cancel",
    "agent_send",
    "agent_followup",
    "todo_write",
    "todo_read",
    "memory",
    "skills_list",
    "skill_view",
    "skill_manage",
    "session_search",
    "learning",
    "clarify",
];

fn verdict(
    decision: Decision,
    rule: impl Into<String>,
    reason: impl Into<String>,
    allow_rule: Option<String>,
    confine: bool,
) -> Verdict {
    Verdict {
        decision,
        reason: reason.into(),
        rule: Some(rule.into()),
        allow_rule,
        confine,
        network: false,
    }
}

fn strictness(d: Decision) -> u8 {
    match d {
        Decision::Allow => 0,
        Decision::Ask => 1,
        Decision::Deny => 2,
    }
}

impl Policy {
    /// Compiles the rules; fails on the first rule that does not parse.
    pub fn new(config: PolicyConfig) -> Result<Self, RuleError> {
        let home = config.home.as_deref();
        let compile = |rules: &[String], source: Source| -> Result<Vec<Rule>, RuleError> {
            rules.iter().map(|r| Rule::parse(r, source, home)).collect()
        };
        let mut allow = compile(&config.allow, Source::User)?;
        for mut rule in compile(&config.allow_network, Source::User)? {
            rule.network = true;
            allow.push(rule);
        }
        let mut ask = compile(&config.ask, Source::User)?;
        ask.extend(compile(&config.project_ask, Source::Project)?);
        let mut deny = compile(&config.deny, Source::User)?;
        deny.extend(compile(&config.project_deny, Source::Project)?);
        let mut writable_roots: Vec<Resolved> = config
            .writable_roots
            .iter()
            .filter_map(|r| paths::resolve(None, &r.to_string_lossy(), home))
            .collect();
        writable_roots.extend(paths::temp_roots());
        Ok(Self {
            config,
            allow,
            ask,
            deny,
            writable_roots,
        })
    }

    /// The mode this policy applies.
    pub fn mode(&self) -> Mode {
        self.config.mode
    }

    /// The configuration the policy was built from (rules added with
    /// [`Policy::add_allow`] included).
    pub fn config(&self) -> &PolicyConfig {
        &self.config
    }

    /// Adds an allow rule for the rest of the session (an approval given
    /// "for this session").
    pub fn add_allow(&mut self, rule: &str) -> Result<(), RuleError> {
        let r = Rule::parse(rule, Source::Session, self.config.home.as_deref())?;
        self.allow.push(r);
        self.config.allow.push(rule.to_owned());
        Ok(())
    }

    /// Decides on one call. Pure: touches the filesystem only to resolve
    /// symlinks of the paths it judges.
    pub fn check(&self, call: &CallInfo<'_>) -> Verdict {
        paths::remembering(|| self.decide(call))
    }

    fn decide(&self, call: &CallInfo<'_>) -> Verdict {
        match call.tool {
            "terminal" => self.check_terminal(call),
            "execute_code" => self.check_execute_code(call),
            "read_file" | "search_files" => self.check_paths(call, false),
            "write_file" | "patch" => self.check_paths(call, true),
            tool if HOST_TOOLS.contains(&tool) => self.check_hosts(call),
            _ => self.check_other(call),
        }
    }

    fn rules_for<'r>(rules: &'r [Rule], tool: &'r str) -> impl Iterator<Item = &'r Rule> + 'r {
        rules.iter().filter(move |r| r.matches_tool(tool))
    }

    fn workspace(&self, cwd: &Path) -> Workspace<'_> {
        Workspace::new(cwd, &self.writable_roots)
    }

    fn home(&self) -> Option<&Path> {
        self.config.home.as_deref()
    }

    fn mode_rule(&self) -> String {
        format!("mode:{}", self.config.mode)
    }

    /// Deny and ask rules matched by `matches`; `None` when neither.
    fn deny_or_ask(
        &self,
        tool: &str,
        what: impl Fn() -> String,
        matches: impl Fn(&Rule) -> bool,
    ) -> Option<Verdict> {
        if let Some(r) = Self::rules_for(&self.deny, tool).find(|r| matches(r)) {
            return Some(verdict(
                Decision::Deny,
                r.text.clone(),
                format!(
                    "{} is denied by the rule `{}` in {}",
                    what(),
                    r.text,
                    r.source.describe()
                ),
                None,
                false,
            ));
        }
        if let Some(r) = Self::rules_for(&self.ask, tool).find(|r| matches(r)) {
            return Some(verdict(
                Decision::Ask,
                r.text.clone(),
                format!(
                    "{} needs approval by the rule `{}` in {}",
                    what(),
                    r.text,
                    r.source.describe()
                ),
                None,
                false,
            ));
        }
        None
    }

    fn check_terminal(&self, call: &CallInfo<'_>) -> Verdict {
        let mode = self.config.mode;
        let Some(command) = call.args.get("command").and_then(|c| c.as_str()) else {
            return verdict(
                Decision::Ask,
                "unresolved",
                "the terminal call has no `command` string to check",
                None,
                false,
            );
        };
        let unsandboxed = call.args.get("unsandboxed").and_then(|v| v.as_bool()) == Some(true);
        let home = self.home();
        let base = match call.args.get("workdir").and_then(|w| w.as_str()) {
            Some(w) => paths::resolve(Some(call.cwd), w, home)
                .map(|r| r.lexical)
                .unwrap_or_else(|| call.cwd.to_path_buf()),
            None => call.cwd.to_path_buf(),
        };
        let ws = self.workspace(call.cwd);
        let env = Env { home, ws: &ws };
        let findings = analyzer::analyse(command, &base, &env);
        let whole = command.trim();

        // 1. The floor.
        if let Some(f) = findings.iter().find(|f| f.severity == Severity::Floor) {
            return verdict(
                Decision::Deny,
                "floor",
                format!(
                    "{} — this is never allowed, in any mode or by any rule",
                    f.reason()
                ),
                None,
                false,
            );
        }
        // 2–3. Deny, then ask rules: the whole command or any simple command.
        let matches_any = |r: &Rule| {
            r.matches_text(whole)
                || findings
                    .iter()
                    .any(|f| r.matches_text(&f.text) || r.matches_text(&f.full_text))
        };
        if let Some(v) = self.deny_or_ask("terminal", || format!("`{}`", short(whole)), matches_any)
        {
            return v;
        }
        // 4. What cannot be checked asks, whatever the rules and mode.
        if let Some(f) = findings.iter().find(|f| f.severity == Severity::Unresolved) {
            return verdict(
                Decision::Ask,
                "unresolved",
                format!("{}; approve only if you know what it runs", f.reason()),
                None,
                false,
            );
        }
        // 5. Each simple command: allow rule, else the mode's default. A
        // rule without wildcards that is the whole command line allows all
        // of it (what an approval saves).
        let narrow = || Some(exact_text("terminal", whole));
        let whole_rule =
            Self::rules_for(&self.allow, "terminal").find(|r| r.exact.as_deref() == Some(whole));
        let mut rule_allowed: Option<&Rule> = None;
        let mut network = false;
        let mut any_write = false;
        let mut first_safe: Option<&Finding> = None;
        for f in &findings {
            if f.severity == Severity::ReadOnly {
                continue;
            }
            any_write = true;
            let matches = |r: &&Rule| {
                r.matches_text(&f.full_text) || (!f.privileged && r.matches_text(&f.text))
            };
            let allow =
                whole_rule.or_else(|| Self::rules_for(&self.allow, "terminal").find(matches));
            if let Some(r) = allow {
                rule_allowed.get_or_insert(r);
                // A rule granting the network wins over one that does not.
                network |= r.network
                    || Self::rules_for(&self.allow, "terminal").any(|r| r.network && matches(&r));
                continue;
            }
            match mode {
                Mode::FullAccess => {}
                Mode::ReadOnly => {
                    let rule = if f.rule == "credentials" {
                        "credentials"
                    } else {
                        "mode:read-only"
                    };
                    return verdict(
                        Decision::Ask,
                        rule,
                        format!(
                            "read-only mode runs only read-only commands; {}",
                            lower_first(&f.reason())
                        ),
                        narrow(),
                        false,
                    );
                }
                Mode::WorkspaceWrite => {
                    if f.severity == Severity::Risky {
                        return verdict(
                            Decision::Ask,
                            f.rule,
                            f.reason().into_owned(),
                            narrow(),
                            false,
                        );
                    }
                    if !self.config.sandbox_available {
                        return verdict(
                            Decision::Ask,
                            "sandbox-unavailable",
                            format!(
                                "the sandbox is unavailable on this machine, so `{}` would run unconfined",
                                short(&f.text)
                            ),
                            narrow(),
                            false,
                        );
                    }
                    first_safe.get_or_insert(f);
                }
            }
        }
        if !any_write {
            return verdict(
                Decision::Allow,
                "read-only-command",
                format!("`{}` only reads", short(whole)),
                None,
                false,
            );
        }
        if unsandboxed && mode != Mode::FullAccess {
            return verdict(
                Decision::Ask,
                "unsandboxed",
                format!(
                    "`{}` asks to run outside the sandbox (unsandboxed: true), without the workspace-write limits",
                    short(whole)
                ),
                narrow(),
                false,
            );
        }
        let confine = mode != Mode::FullAccess && self.config.sandbox_available;
        if let Some(r) = rule_allowed {
            let mut v = verdict(
                Decision::Allow,
                r.text.clone(),
                format!(
                    "`{}` is allowed by the rule `{}` in {}{}",
                    short(whole),
                    r.text,
                    r.source.describe(),
                    if network && confine {
                        ", with the network"
                    } else {
                        ""
                    }
                ),
                None,
                confine,
            );
            v.network = network && confine;
            return v;
        }
        match mode {
            Mode::FullAccess => verdict(
                Decision::Allow,
                "mode:full-access",
                format!("full-access mode runs `{}`", short(whole)),
                None,
                false,
            ),
            _ => {
                let reason = first_safe
                    .map(|f| f.reason().into_owned())
                    .unwrap_or_else(|| format!("`{}` runs confined", short(whole)));
                verdict(
                    Decision::Allow,
                    "safe-list",
                    format!("{reason}; it runs confined to the working directory"),
                    None,
                    true,
                )
            }
        }
    }

    /// read_file / search_files (`write == false`), write_file / patch.
    fn check_paths(&self, call: &CallInfo<'_>, write: bool) -> Verdict {
        let mut raw: Vec<String> = Vec::new();
        if let Some(p) = call.args.get("path").and_then(|p| p.as_str()) {
            raw.push(p.to_owned());
        }
        if let Some(list) = call.args.get("paths").and_then(|p| p.as_array()) {
            raw.extend(list.iter().filter_map(|p| p.as_str()).map(str::to_owned));
        }
        if raw.is_empty() {
            if write {
                return verdict(
                    Decision::Ask,
                    "unresolved",
                    format!("the {} call names no path to check", call.tool),
                    None,
                    false,
                );
            }
            raw.push(".".into());
        }
        let ws = self.workspace(call.cwd);
        let mut worst: Option<Verdict> = None;
        // The paths that ask: an approval's rule names each of them.
        let mut asking: Vec<PathBuf> = Vec::new();
        for p in &raw {
            let v = self.check_one_path(call, p, write, &ws);
            if v.decision == Decision::Ask
                && v.allow_rule.is_some()
                && let Some(r) = paths::resolve(Some(call.cwd), p, self.home())
            {
                asking.push(r.lexical);
            }
            if worst
                .as_ref()
                .is_none_or(|w| strictness(v.decision) > strictness(w.decision))
            {
                worst = Some(v);
            }
        }
        let mut v =
            worst.unwrap_or_else(|| verdict(Decision::Ask, "unresolved", "no path", None, false));
        if v.decision == Decision::Ask && v.allow_rule.is_some() {
            asking.dedup();
            let refs: Vec<&Path> = asking.iter().map(PathBuf::as_path).collect();
            v.allow_rule = (!refs.is_empty()).then(|| exact_paths(call.tool, &refs));
        }
        v
    }

    fn check_one_path(
        &self,
        call: &CallInfo<'_>,
        raw: &str,
        write: bool,
        ws: &Workspace<'_>,
    ) -> Verdict {
        let mode = self.config.mode;
        let home = self.home();
        let tool = call.tool;
        let Some(r) = paths::resolve(Some(call.cwd), raw, home) else {
            return verdict(
                Decision::Ask,
                "unresolved",
                format!("{tool} path `{raw}` cannot be resolved (unknown `~user`)"),
                None,
                false,
            );
        };
        let shown = r.display();
        let spellings: Vec<&Path> = r.spellings().collect();
        let cwd_lex = ws
            .cwd_root()
            .map(|c| c.lexical.clone())
            .unwrap_or_else(|| call.cwd.to_path_buf());
        let suggest = Some(format!(
            "{tool}({}/**)",
            r.lexical
                .parent()
                .unwrap_or(Path::new("/"))
                .display()
                .to_string()
                .trim_end_matches('/')
        ));
        let class = write.then(|| paths::classify_write(&r, ws, home));
        if let Some(WriteClass::Floor(why)) = &class {
            return verdict(
                Decision::Deny,
                "floor",
                format!(
                    "{tool} {shown}: {why} — this is never allowed, in any mode or by any rule"
                ),
                None,
                false,
            );
        }
        let matches = |rule: &Rule| rule.matches_path(&spellings, &cwd_lex);
        if let Some(v) = self.deny_or_ask(tool, || format!("{tool} {shown}"), matches) {
            return v;
        }
        if let Some(rule) = Self::rules_for(&self.allow, tool).find(|rule| matches(rule)) {
            return verdict(
                Decision::Allow,
                rule.text.clone(),
                format!(
                    "{tool} {shown} is allowed by the rule `{}` in {}",
                    rule.text,
                    rule.source.describe()
                ),
                None,
                false,
            );
        }
        if !write {
            if let Some(why) = paths::credential(&r, home, ws)
                && mode != Mode::FullAccess
            {
                return verdict(
                    Decision::Ask,
                    "credentials",
                    format!("{tool} {shown}: {why}"),
                    suggest,
                    false,
                );
            }
            return verdict(
                Decision::Allow,
                self.mode_rule(),
                format!("{tool} only reads {shown}"),
                None,
                false,
            );
        }
        match (mode, class) {
            (Mode::FullAccess, _) => verdict(
                Decision::Allow,
                "mode:full-access",
                format!("full-access mode lets {tool} write {shown}"),
                None,
                false,
            ),
            (Mode::ReadOnly, _) => verdict(
                Decision::Ask,
                "mode:read-only",
                format!("read-only mode: {tool} would write {shown}"),
                suggest,
                false,
            ),
            (_, Some(WriteClass::Protected(why))) => verdict(
                Decision::Ask,
                "protected-path",
                format!("{tool} {shown}: {why}"),
                suggest,
                false,
            ),
            (_, Some(WriteClass::Outside)) => verdict(
                Decision::Ask,
                "outside-workspace",
                format!(
                    "{tool} would write {shown}, outside the working directory ({}) and the writable roots",
                    cwd_lex.display()
                ),
                suggest,
                false,
            ),
            _ => verdict(
                Decision::Allow,
                "mode:workspace-write",
                format!("{tool} writes {shown} inside the working directory"),
                None,
                false,
            ),
        }
    }

    /// `execute_code`: the script is scanned like inline interpreter code
    /// (the commands it runs, the trees it deletes, the files it writes,
    /// its network use) and judged as a terminal command would be. The
    /// tools it calls through `herald_tools` are checked when called.
    fn check_execute_code(&self, call: &CallInfo<'_>) -> Verdict {
        let mode = self.config.mode;
        let tool = call.tool;
        let code = call
            .args
            .get("code")
            .and_then(|c| c.as_str())
            .unwrap_or_default();
        let ws = self.workspace(call.cwd);
        let env = Env {
            home: self.home(),
            ws: &ws,
        };
        let findings = analyzer::analyse_script(analyzer::Lang::Python, code, call.cwd, &env);
        if let Some(f) = findings.iter().find(|f| f.severity == Severity::Floor) {
            return verdict(
                Decision::Deny,
                "floor",
                format!(
                    "execute_code: {} — this is never allowed, in any mode or by any rule",
                    f.reason()
                ),
                None,
                false,
            );
        }
        if let Some(v) = self.deny_or_ask(tool, || tool.to_owned(), |r| r.matches_text(code)) {
            return v;
        }
        if let Some(f) = findings.iter().find(|f| f.severity == Severity::Unresolved) {
            return verdict(
                Decision::Ask,
                "unresolved",
                format!(
                    "execute_code: {}; approve only if you know what it runs",
                    f.reason()
                ),
                None,
                false,
            );
        }
        let confine = mode != Mode::FullAccess && self.config.sandbox_available;
        if let Some(r) = Self::rules_for(&self.allow, tool).find(|r| r.matches_text(code)) {
            let mut v = verdict(
                Decision::Allow,
                r.text.clone(),
                format!(
                    "execute_code is allowed by the rule `{}` in {}",
                    r.text,
                    r.source.describe()
                ),
                None,
                confine,
            );
            v.network = r.network && confine;
            return v;
        }
        let narrow = Some(exact_text(tool, code));
        let risky = findings.iter().find(|f| f.severity == Severity::Risky);
        match mode {
            Mode::ReadOnly => verdict(
                Decision::Ask,
                "mode:read-only",
                match risky {
                    Some(f) => format!(
                        "read-only mode: execute_code runs a script that can write and run commands; {}",
                        lower_first(&f.reason())
                    ),
                    None => {
                        "read-only mode: execute_code runs a script that can write and run commands"
                            .to_owned()
                    }
                },
                narrow,
                false,
            ),
            Mode::WorkspaceWrite => {
                if let Some(f) = risky {
                    return verdict(
                        Decision::Ask,
                        f.rule,
                        format!("execute_code: {}", f.reason()),
                        narrow,
                        false,
                    );
                }
                if !self.config.sandbox_available {
                    return verdict(
                        Decision::Ask,
                        "sandbox-unavailable",
                        "the sandbox is unavailable on this machine, so execute_code would run unconfined",
                        narrow,
                        false,
                    );
                }
                verdict(
                    Decision::Allow,
                    "mode:workspace-write",
                    "execute_code runs confined to the working directory",
                    None,
                    true,
                )
            }
            Mode::FullAccess => verdict(
                Decision::Allow,
                "mode:full-access",
                "full-access mode runs execute_code",
                None,
                false,
            ),
        }
    }

    /// Web tools: `domain:` rules on each host the call reaches (every
    /// host must be allowed for an allow rule to apply), then the rules
    /// every other tool follows.
    fn check_hosts(&self, call: &CallInfo<'_>) -> Verdict {
        let tool = call.tool;
        let hosts = call_hosts(call.args);
        let domain_rule = |r: &Rule| matches!(r.arg, crate::rules::ArgPattern::Domain { .. });
        for host in &hosts {
            // `domain:` rules, and rules naming the tool alone.
            let matches = |r: &Rule| r.matches_host(host);
            if let Some(v) = self.deny_or_ask(tool, || format!("{tool} of {host}"), matches) {
                return v;
            }
        }
        let allowed_by = |host: &String| {
            Self::rules_for(&self.allow, tool).find(|r| domain_rule(r) && r.matches_host(host))
        };
        if hosts.iter().all(|h| allowed_by(h).is_some())
            && let Some(r) = hosts.first().and_then(allowed_by)
        {
            return verdict(
                Decision::Allow,
                r.text.clone(),
                format!(
                    "{tool} of {} is allowed by the rule `{}` in {}",
                    hosts.join(", "),
                    r.text,
                    r.source.describe()
                ),
                None,
                false,
            );
        }
        let mut v = self.check_other(call);
        // What an "always" approval saves: these hosts, not these URLs.
        if v.decision == Decision::Ask && v.allow_rule.is_some() && hosts.len() == 1 {
            v.allow_rule = Some(format!("{tool}(domain:{})", hosts[0]));
        }
        v
    }

    fn check_other(&self, call: &CallInfo<'_>) -> Verdict {
        let mode = self.config.mode;
        let tool = call.tool;
        let text = call.args.to_string();
        if let Some(v) = self.deny_or_ask(tool, || tool.to_owned(), |r| r.matches_text(&text)) {
            return v;
        }
        if let Some(r) = Self::rules_for(&self.allow, tool).find(|r| r.matches_text(&text)) {
            return verdict(
                Decision::Allow,
                r.text.clone(),
                format!(
                    "{tool} is allowed by the rule `{}` in {}",
                    r.text,
                    r.source.describe()
                ),
                None,
                false,
            );
        }
        let narrow = Some(exact_text(tool, &text));
        if ALWAYS_ALLOWED.contains(&tool) {
            return verdict(
                Decision::Allow,
                "safe-list",
                format!("{tool} only touches herald's own state"),
                None,
                false,
            );
        }
        // `cronjob` lists jobs without changing any; its other actions
        // (create, pause, resume, remove) follow the mode.
        if tool == "cronjob"
            && call.args.get("action").and_then(serde_json::Value::as_str) == Some("list")
        {
            return verdict(
                Decision::Allow,
                "read-only-tool",
                "cronjob list only reads the scheduled jobs".to_owned(),
                None,
                false,
            );
        }
        if mode == Mode::FullAccess {
            return verdict(
                Decision::Allow,
                "mode:full-access",
                format!("full-access mode runs {tool}"),
                None,
                false,
            );
        }
        if tool.starts_with("browser_") {
            return self.check_browser(call, narrow);
        }
        if tool.starts_with("mcp__") {
            if self.config.read_only_tools.iter().any(|t| t == tool) {
                return verdict(
                    Decision::Allow,
                    "read-only-tool",
                    format!("{tool} is listed in [permissions] read_only_tools"),
                    None,
                    false,
                );
            }
            if call.read_only {
                // Only servers the user configured (or approved) are
                // connected, so their annotation is trusted like config.
                return verdict(
                    Decision::Allow,
                    "read-only-tool",
                    format!("{tool} is annotated readOnlyHint by its server"),
                    None,
                    false,
                );
            }
            return verdict(
                Decision::Ask,
                self.mode_rule(),
                format!(
                    "{tool} is an MCP tool not marked read-only; {} mode asks before running it",
                    mode
                ),
                narrow,
                false,
            );
        }
        if call.read_only {
            return verdict(
                Decision::Allow,
                "read-only-tool",
                format!("{tool} only reads"),
                None,
                false,
            );
        }
        verdict(
            Decision::Ask,
            self.mode_rule(),
            format!("{tool} is not read-only; {mode} mode asks before running it"),
            narrow,
            false,
        )
    }
}

impl Policy {
    /// The browser tools act on pages of herald's own browser, not on the
    /// user's files: `workspace-write` runs them, `read-only` asks before
    /// any that changes a page or a tab. JavaScript the model evaluates
    /// (`browser_console` with an `expression`) asks in both (full access
    /// and allow rules were decided before).
    fn check_browser(&self, call: &CallInfo<'_>, narrow: Option<String>) -> Verdict {
        let (tool, mode) = (call.tool, self.config.mode);
        let arg = |name: &str| {
            call.args
                .get(name)
                .and_then(serde_json::Value::as_str)
                .map(str::trim)
                .filter(|v| !v.is_empty())
        };
        if tool == "browser_console" && arg("expression").is_some() {
            return verdict(
                Decision::Ask,
                self.mode_rule(),
                format!("browser_console would run JavaScript in the page; {mode} mode asks first"),
                narrow,
                false,
            );
        }
        let switches_tabs = tool == "browser_tabs" && arg("action").is_some_and(|a| a != "list");
        if call.read_only && !switches_tabs {
            return verdict(
                Decision::Allow,
                "read-only-tool",
                format!("{tool} only reads the page"),
                None,
                false,
            );
        }
        if mode == Mode::WorkspaceWrite {
            return verdict(
                Decision::Allow,
                self.mode_rule(),
                format!("{tool} acts on a page in herald's browser, not on files"),
                None,
                false,
            );
        }
        verdict(
            Decision::Ask,
            self.mode_rule(),
            format!("{tool} acts on a page; {mode} mode asks before running it"),
            narrow,
            false,
        )
    }
}

/// The hosts of the URLs a web tool's arguments name (`urls` or `url`),
/// lowercased; URLs that do not parse are the tool's to refuse.
fn call_hosts(args: &serde_json::Value) -> Vec<String> {
    let urls = match (args.get("urls"), args.get("url")) {
        (Some(serde_json::Value::Array(list)), _) => {
            list.iter().filter_map(|u| u.as_str()).collect()
        }
        (_, Some(serde_json::Value::String(one))) => vec![one.as_str()],
        _ => Vec::new(),
    };
    let mut hosts: Vec<String> = urls
        .into_iter()
        .filter_map(|u| url::Url::parse(u.trim()).ok())
        .filter_map(|u| {
            u.host_str()
                .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
        })
        .collect();
    hosts.dedup();
    hosts
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}
