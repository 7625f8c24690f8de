//! `herald checkpoints list SESSION|prune` and `herald rewind SESSION
//! --turn N`: argument handling and rendering only; `herald_core::checkpoints`
//! does the work (snapshots, plans, restores, pruning). Also starts the
//! daily prune in the background when a session opens.

use herald_core::Settings;
use herald_core::StoreHandle;
use herald_core::checkpoints::{
    Action, NOT_COVERED, PruneReport, Retention, RewindOutcome, RewindPlan, RewindScope,
    took_no_snapshot_for_reads,
};
use herald_core::config::CheckpointsConfig;
use herald_core::runtime::StoredRewind;
use herald_protocol::one_line;
use herald_store::CheckpointRecord;

use crate::args::{CheckpointsAction, CommonArgs, RewindArgs};
use crate::sessions_cmd::{call, print_json, when};
use crate::{CliError, Exit, setup};

/// `herald checkpoints …`.
pub(crate) async fn checkpoints(
    common: &CommonArgs,
    action: CheckpointsAction,
) -> Result<Exit, CliError> {
    let env = setup::environment();
    let (home, config_path) = setup::config_location(common, &env);
    let store = setup::open_store(&home)?;
    match action {
        CheckpointsAction::List { session, all, json } => {
            let id = existing_session(&store, &session).await?;
            let lookup = id.clone();
            let list = call(&store, move |s| s.checkpoints(&lookup, all)).await?;
            if json {
                print_json(&list)?;
            } else if list.is_empty() {
                println!(
                    "no checkpoints in {id}: it ran no turn since herald keeps them (one is taken before every user turn)"
                );
            } else {
                println!("turn  time (UTC)        files   lines        prompt");
                for checkpoint in &list {
                    println!("{}", line(checkpoint));
                }
                println!(
                    "\n`herald rewind {id} --turn N` restores the files and the conversation to before turn N; {NOT_COVERED}."
                );
            }
        }
        CheckpointsAction::Prune {
            keep_days,
            max_size_mb,
            json,
            if_due,
        } => {
            if if_due && !herald_core::checkpoints::prune_due(&home) {
                return Ok(Exit::Completed);
            }
            let mut config = match (keep_days, max_size_mb) {
                (Some(_), Some(_)) => CheckpointsConfig::default(),
                _ if config_path.exists() => crate::config_cmd::load(&config_path)?.checkpoints,
                _ => CheckpointsConfig::default(),
            };
            config.keep_days = keep_days.unwrap_or(config.keep_days);
            config.max_size_mb = max_size_mb.unwrap_or(config.max_size_mb);
            let report =
                herald_core::checkpoints::prune(&store, &home, Retention::from_config(&config))
                    .await
                    .map_err(CliError::failed)?;
            if json {
                print_json(&report)?;
            } else {
                println!("{}", prune_summary(&report, &config));
            }
            for failure in &report.failures {
                eprintln!("herald: cannot prune {failure}");
            }
            if !report.failures.is_empty() {
                return Err(CliError::failed(anyhow::anyhow!(
                    "{} checkpoint repositories could not be pruned; the next prune tries again",
                    report.failures.len()
                )));
            }
        }
    }
    Ok(Exit::Completed)
}

/// What a prune did, in one line.
fn prune_summary(report: &PruneReport, config: &CheckpointsConfig) -> String {
    let mib = |bytes: u64| bytes as f64 / f64::from(1u32 << 20);
    let age = if config.keep_days == 0 {
        "no age limit".to_owned()
    } else {
        format!("older than {} days", config.keep_days)
    };
    let size = if config.max_size_mb == 0 {
        "no size limit".to_owned()
    } else {
        format!("limit {} MiB", config.max_size_mb)
    };
    format!(
        "pruned checkpoints ({age}, {size}): {} checkpoints and {} snapshots removed, {} of {} repositories removed; {:.1} MiB before, {:.1} MiB now",
        report.checkpoints_removed,
        report.snapshots_removed,
        report.repositories_removed,
        report.repositories,
        mib(report.bytes_before),
        mib(report.bytes_after)
    )
}

/// Starts `herald checkpoints prune --if-due` as a process of its own when
/// the daily prune is due, so a session never waits for it and it keeps
/// its repository locks until it is done even when this process exits
/// first. Failing to start it is only logged: the next start tries again.
pub(crate) fn prune_in_background(settings: &Settings) {
    if !herald_core::checkpoints::prune_due(&settings.home) {
        return;
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(err) => {
            tracing::warn!("cannot start the checkpoint prune: {err}");
            return;
        }
    };
    let mut command = std::process::Command::new(exe);
    command
        .args(["checkpoints", "prune", "--if-due", "--keep-days"])
        .arg(settings.checkpoints.keep_days.to_string())
        .arg("--max-size-mb")
        .arg(settings.checkpoints.max_size_mb.to_string())
        .env("HERALD_HOME", &settings.home)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    match command.spawn() {
        // Reaped by a thread of its own; it ends with this process when
        // the prune outlives it.
        Ok(mut child) => {
            let _ = std::thread::Builder::new()
                .name("checkpoint-prune".into())
                .spawn(move || child.wait());
        }
        Err(err) => tracing::warn!("cannot start the checkpoint prune: {err}"),
    }
}

/// The full id of an existing session named by `text` (or a unique start
/// of it); a usage error naming it otherwise.
async fn existing_session(store: &StoreHandle, text: &str) -> Result<String, CliError> {
    let id = crate::id_lookup::session_id(store, text).await?;
    let lookup = id.clone();
    if call(store, move |s| s.get_session(&lookup))
        .await?
        .is_none()
    {
        return Err(CliError::usage(anyhow::anyhow!(
            "no session '{id}'; list stored sessions with `herald sessions list`"
        )));
    }
    Ok(id)
}

/// One checkpoint as a line of `checkpoints list`.
fn line(c: &CheckpointRecord) -> String {
    let files = match (&c.commit_id, &c.end_commit_id) {
        // No call of the turn could change files (no snapshot was needed).
        _ if took_no_snapshot_for_reads(c.note.as_deref()) => "no file changes".to_owned(),
        (None, _) => "no snapshot".to_owned(),
        (Some(_), None) => "(turn not ended)".to_owned(),
        (Some(_), Some(_)) => format!(
            "{:>2} {:<5} +{:<4} -{:<4}",
            c.changes.files_changed,
            if c.changes.files_changed == 1 {
                "file"
            } else {
                "files"
            },
            c.changes.insertions,
            c.changes.deletions
        ),
    };
    let prompt = c.prompt.as_deref().map(one_line).unwrap_or_default();
    let prompt: String = if prompt.chars().count() > 60 {
        prompt.chars().take(59).chain(['…']).collect()
    } else {
        prompt
    };
    let rewound = if c.rewound_at.is_some() {
        "  (rewound)"
    } else {
        ""
    };
    format!(
        "{:>4}  {}  {:<26}  {prompt}{rewound}",
        c.turn,
        when(c.created_at),
        files
    )
}

/// `herald rewind SESSION --turn N [--files-only|--conversation-only]`.
pub(crate) async fn rewind(common: &CommonArgs, args: RewindArgs) -> Result<Exit, CliError> {
    let env = setup::environment();
    let (home, _) = setup::config_location(common, &env);
    let store = setup::open_store(&home)?;
    let id = existing_session(&store, &args.session).await?;
    let scope = if args.files_only {
        RewindScope::FilesOnly
    } else if args.conversation_only {
        RewindScope::ConversationOnly
    } else {
        RewindScope::Both
    };
    // Nobody may open the session from the plan to the end.
    let rewind = StoredRewind::prepare(&store, &home, &id, args.turn, scope)
        .await
        .map_err(setup::runtime_error)?;
    let plan = rewind.plan();
    if args.dry_run {
        if args.json {
            print_json(&plan_json(plan, true))?;
        } else {
            println!("would rewind (nothing changed):");
            show_plan(plan);
        }
        rewind.cancel().await;
        return Ok(Exit::Completed);
    }
    if !args.json {
        show_plan(plan);
    }
    if plan.changes_files() {
        let agreed = crate::confirm::confirm(
            &format!(
                "Restore the files of {} to before turn {}?",
                plan_work_tree(plan),
                plan.turn
            ),
            args.yes,
            || {},
        );
        if !matches!(agreed, Ok(true)) {
            rewind.cancel().await;
            agreed?;
            eprintln!("nothing changed");
            return Ok(Exit::Completed);
        }
    }
    let outcome = rewind.apply().await.map_err(setup::runtime_error)?;
    if args.json {
        print_json(&plan_json(&outcome.plan, false))?;
    } else {
        show_outcome(&outcome);
    }
    Ok(Exit::Completed)
}

fn plan_work_tree(plan: &RewindPlan) -> String {
    plan.files.as_ref().map_or_else(
        || plan.checkpoint.cwd.clone(),
        |f| f.shadow.work_tree().display().to_string(),
    )
}

fn action_word(action: Action) -> &'static str {
    match action {
        Action::Restore => "restore ",
        Action::Delete => "delete  ",
        Action::Recreate => "recreate",
        Action::Keep => "keep    ",
    }
}

/// What a plan does, on stdout.
fn show_plan(plan: &RewindPlan) {
    let prompt = plan
        .checkpoint
        .prompt
        .as_deref()
        .map(|p| {
            format!(
                " (\"{}\")",
                one_line(p).chars().take(60).collect::<String>()
            )
        })
        .unwrap_or_default();
    println!(
        "session {} to before turn {}{prompt}, started {} UTC",
        plan.session_id,
        plan.turn,
        when(plan.checkpoint.created_at)
    );
    if let Some(files) = &plan.files {
        if let Some(note) = &files.note {
            println!("  files: {note}");
        }
        if files.changes.is_empty() {
            println!("  files in {}: unchanged", plan_work_tree(plan));
        } else {
            println!("  files in {}:", plan_work_tree(plan));
            for change in &files.changes {
                let note = if change.action == Action::Keep {
                    "  (exists now but is ignored or over 5 MiB: left as it is)"
                } else {
                    ""
                };
                println!(
                    "    {} {}{note}",
                    action_word(change.action),
                    one_line(&change.path.to_string_lossy())
                );
            }
        }
    }
    if let Some(conversation) = &plan.conversation {
        let left_out = if conversation.last_turn > plan.turn {
            format!("turns {} to {}", plan.turn, conversation.last_turn)
        } else {
            format!("turn {}", plan.turn)
        };
        println!(
            "  conversation: back to the {} messages before turn {} (the model sees {} now); {left_out} left out (kept in the session for search and export)",
            conversation.history.len(),
            plan.turn,
            conversation.live_now
        );
    }
    println!("  note: {NOT_COVERED}");
}

/// What a rewind did, on stdout.
fn show_outcome(outcome: &RewindOutcome) {
    let plan = &outcome.plan;
    println!("rewound {} to before turn {}", plan.session_id, plan.turn);
    if let Some(files) = &plan.files {
        let count = |action| files.changes.iter().filter(|c| c.action == action).count();
        println!(
            "  files: {} restored, {} deleted, {} recreated, {} kept",
            count(Action::Restore),
            count(Action::Delete),
            count(Action::Recreate),
            count(Action::Keep)
        );
        if files.current != files.target {
            println!(
                "  the files as they were before the rewind are kept as snapshot {} (one file: git --git-dir {} show {}:PATH)",
                short(&files.current),
                files.shadow.git_dir().display(),
                short(&files.current)
            );
        }
    }
    if let Some(history) = &outcome.history {
        println!(
            "  conversation: continues from the {} messages before turn {}: herald --resume {}",
            history.len(),
            plan.turn,
            plan.session_id
        );
    }
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

/// A plan (or a done rewind) as JSON.
fn plan_json(plan: &RewindPlan, dry_run: bool) -> serde_json::Value {
    serde_json::json!({
        "dry_run": dry_run,
        "session_id": plan.session_id,
        "turn": plan.turn,
        "files": plan.files.as_ref().map(|f| serde_json::json!({
            "work_tree": f.shadow.work_tree(),
            "snapshot": f.target,
            "saved_as": f.current,
            "changes": f.changes,
            "note": f.note,
        })),
        "conversation": plan.conversation.as_ref().map(|c| serde_json::json!({
            "messages": c.history.len(),
            "messages_before": c.live_now,
            "left_out_turns": (plan.turn..=c.last_turn).collect::<Vec<_>>(),
        })),
        "not_covered": NOT_COVERED,
    })
}
