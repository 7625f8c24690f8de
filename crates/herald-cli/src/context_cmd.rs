//! `herald context`: the system prompt a new session in this directory
//! would start with, layer by layer — sizes, budgets, what was cut, the
//! context files and their `@path` imports — built by the same code a
//! session uses, without contacting a provider (no API key needed).

use clap::Args;
use herald_core::{ImportStatus, PromptReport};
use herald_protocol::{one_line, terminal_safe};

use crate::args::{CommonArgs, CwdArgs, ModelArgs};
use crate::sessions_cmd::print_json;
use crate::{CliError, Exit, config_cmd, setup};

/// `herald context` options.
#[derive(Debug, Args)]
pub(crate) struct ContextArgs {
    /// Print the whole system prompt, exactly as a new session would send it.
    #[arg(long)]
    pub full: bool,
    /// Print one JSON object: sizes, layers, context files, imports (and,
    /// with --full, the prompt as `text`).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub cwd: CwdArgs,
}

/// Builds the prompt for the configured model and working directory and
/// prints its account.
pub(crate) async fn context(common: &CommonArgs, args: ContextArgs) -> Result<Exit, CliError> {
    let env = setup::environment();
    let (home, path) = setup::config_location(common, &env);
    let config = config_cmd::load(&path)?;
    let settings = herald_core::Settings::resolve_without_credentials(
        &config,
        &path,
        home,
        &env,
        &setup::overrides(common),
    )
    .map_err(CliError::usage)?;
    let routes = settings.routing.clone();
    let report = tokio::task::spawn_blocking(move || {
        herald_core::build_prompt_report(&herald_core::runtime::prompt_inputs(&settings))
    })
    .await
    .map_err(CliError::failed)?;
    let routes = routes.describe();
    if args.json {
        let mut value = serde_json::to_value(&report).map_err(CliError::failed)?;
        if let Some(object) = value.as_object_mut() {
            object.insert("routes".to_owned(), routes.clone().into());
        }
        if args.full
            && let Some(object) = value.as_object_mut()
        {
            object.insert("text".to_owned(), report.text.clone().into());
        }
        print_json(&value)?;
    } else if args.full {
        print!("{}", terminal_safe(&report.text));
    } else {
        print!("{}", render(&report));
        if !routes.is_empty() {
            println!("\nmodel routes ([routing], first match wins):");
            for route in &routes {
                println!("  {}", one_line(route));
            }
        }
    }
    Ok(Exit::Completed)
}

/// The human-readable account: totals, a table of layers, the context files
/// with what each kept, and the imports.
fn render(report: &PromptReport) -> String {
    let mut out = format!(
        "system prompt: {} chars ({} bytes); `herald context --full` prints it\n\n",
        report.chars, report.bytes
    );
    out.push_str(&format!(
        "{:<16} {:>8} {:>8} {:>8}  source\n",
        "layer", "chars", "budget", "cut"
    ));
    for layer in &report.layers {
        let budget = layer
            .budget
            .map_or_else(|| "-".to_owned(), |b| b.to_string());
        out.push_str(&format!(
            "{:<16} {:>8} {:>8} {:>8}  {}\n",
            layer.name,
            layer.chars,
            budget,
            layer.cut_chars,
            one_line(&layer.source)
        ));
    }
    let context = &report.context;
    let root = context.repo_root.as_deref().map_or_else(
        || "no repository: every parent directory is read".to_owned(),
        |root| format!("repository {}", one_line(&root.display().to_string())),
    );
    out.push_str(&format!(
        "\ncontext files ({root}; budget {} per file, {} together):\n",
        context.per_file_chars, context.total_chars
    ));
    if context.files.is_empty() {
        out.push_str("  none (AGENTS.md or CLAUDE.md from the repository root down to here)\n");
    }
    for file in &context.files {
        out.push_str(&format!("  {}", one_line(&file.path.display().to_string())));
        if let Some(by) = &file.imported_by {
            out.push_str(&format!(
                "  (imported by {})",
                one_line(&by.display().to_string())
            ));
        }
        match &file.problem {
            Some(problem) => out.push_str(&format!("\n    not loaded: {}\n", one_line(problem))),
            None if file.cut_chars > 0 => out.push_str(&format!(
                "\n    {} chars, budget {}: kept {}, cut {}\n",
                file.chars, file.budget, file.kept_chars, file.cut_chars
            )),
            None => out.push_str(&format!("\n    {} chars, kept whole\n", file.chars)),
        }
    }
    if !context.imports.is_empty() {
        out.push_str("\nimports:\n");
    }
    for import in &context.imports {
        let status = match import.status {
            ImportStatus::Loaded => "loaded".to_owned(),
            ImportStatus::AlreadyIncluded => "already included above".to_owned(),
            ImportStatus::Cycle => "cycle: already included above".to_owned(),
            ImportStatus::NotLoaded => format!(
                "NOT LOADED: {}",
                import.reason.as_deref().unwrap_or("unknown reason")
            ),
        };
        out.push_str(&format!(
            "  {}:{}  {}  {}\n",
            one_line(&import.from.display().to_string()),
            import.line,
            one_line(&import.written),
            one_line(&status)
        ));
    }
    out
}
