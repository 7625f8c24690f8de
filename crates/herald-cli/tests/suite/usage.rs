//! What a run costs, end to end: costs are decimals rounded to 1e-6 (never
//! float noise), `null` for a model without a price, and `[pricing]` in the
//! config overrides the built-in table.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Harness, Wire, last, of_type, stderr};
use herald_testkit::{Reply, Script};
use serde_json::{Value, json};

/// The cost fields of every event line exactly as written (the text after
/// `"cost_usd":`), to check their decimals.
fn cost_texts(stdout: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(stdout);
    text.match_indices("\"cost_usd\":")
        .map(|(at, key)| {
            text[at + key.len()..]
                .chars()
                .take_while(|c| !matches!(c, ',' | '}'))
                .collect()
        })
        .collect()
}

/// Micro-dollars of a cost in an event (`None` for `null`).
fn micros(value: &Value) -> Option<i64> {
    value.as_f64().map(|usd| (usd * 1e6).round() as i64)
}

/// Conversations that read `a.txt` twice and answer, one per prompt.
fn reading_script(prompts: &[&str]) -> Script {
    prompts.iter().fold(Script::new(), |script, prompt| {
        script.conversation(
            prompt,
            vec![
                Reply::tool("read_file", json!({"path": "a.txt"})),
                Reply::tool("read_file", json!({"path": "a.txt"})),
                Reply::text("read twice"),
            ],
        )
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_price_override_prices_every_request_and_costs_are_rounded() {
    let h = Harness::new(reading_script(&["price check"])).await;
    std::fs::write(h.work_path().join("a.txt"), "x".repeat(3_000)).unwrap();
    // Odd prices so that float sums would show noise.
    h.config("[pricing.\"gpt-4.1-mini\"]\ninput = 0.37\noutput = 1.13\ncache_read = 0.07\n");
    let (output, events) = h.run_json(Wire::OpenAi, &[], "price check").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let usage = of_type(&events, "usage");
    assert_eq!(usage.len(), 3);
    let mut sum = 0;
    for event in &usage {
        let input = event["input_tokens"].as_u64().unwrap() as f64;
        let cached = event["cached_tokens"].as_u64().unwrap() as f64;
        let out = event["output_tokens"].as_u64().unwrap() as f64;
        let expected = ((input - cached) * 0.37 + cached * 0.07 + out * 1.13) / 1e6;
        let cost = micros(&event["cost_usd"]).unwrap();
        assert_eq!(cost, (expected * 1e6).round() as i64, "{event}");
        sum += cost;
    }
    // The second and third requests read the first from the cache: the
    // cheaper cache price was used, not the input price.
    assert!(usage[2]["cached_tokens"].as_u64().unwrap() > 0);
    let end = last(&events);
    assert_eq!(end["type"], "run.completed");
    let total = micros(&end["cost_usd"]).unwrap();
    assert!((total - sum).abs() <= 1, "{total} vs {sum}");
    for text in cost_texts(&output.stdout) {
        let decimals = text.split_once('.').map_or(0, |(_, d)| d.len());
        assert!(decimals <= 6, "cost written with noise: {text}");
    }
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_without_a_price_costs_null_not_zero() {
    let h = Harness::new(reading_script(&[
        "unpriced one",
        "unpriced two",
        "priced later",
    ]))
    .await;
    std::fs::write(h.work_path().join("a.txt"), "hello").unwrap();
    let (output, events) = h
        .run_json(Wire::OpenAi, &["--model", "my-local-model"], "unpriced one")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let usage = of_type(&events, "usage");
    assert_eq!(usage.len(), 3);
    assert!(usage.iter().all(|e| e["cost_usd"].is_null()), "{usage:?}");
    assert!(last(&events)["cost_usd"].is_null(), "{}", last(&events));
    assert!(last(&events)["tree_usage"]["cost_usd"].is_null());
    // The stored session says so too.
    let session = last(&events)["session_id"].as_str().unwrap().to_owned();
    let shown = h.cli_json(&["sessions", "show", &session, "--json"]).await;
    assert!(shown["session"]["cost_usd"].is_null(), "{shown}");
    assert!(shown["tree_usage"]["cost_usd"].is_null(), "{shown}");
    let human = h
        .command(Wire::OpenAi)
        .args(["sessions", "show", &session])
        .output()
        .await
        .unwrap();
    assert!(
        String::from_utf8_lossy(&human.stdout).contains("cost unknown"),
        "{}",
        String::from_utf8_lossy(&human.stdout)
    );

    // The human summary says so instead of printing $0.
    let output = h
        .command(Wire::OpenAi)
        .args(["run", "--model", "my-local-model", "unpriced two"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("cost unknown"), "{err}");

    // Priced in the config, the same model has a cost.
    h.config("[pricing.\"my-local-model\"]\ninput = 1\noutput = 2\n");
    let (output, events) = h
        .run_json(Wire::OpenAi, &["--model", "my-local-model"], "priced later")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        of_type(&events, "usage")
            .iter()
            .all(|e| e["cost_usd"].as_f64().unwrap() > 0.0)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_price_table_is_exit_2_naming_the_key_and_runs_nothing() {
    let h = Harness::new(reading_script(&["price check"])).await;
    for (config, expected) in [
        ("[pricing.\"m\"]\ninput = 1\n", "needs `output`"),
        ("[pricing.\"m\"]\ninput = -1\noutput = 1\n", "not a price"),
        (
            "[pricing.\"m\"]\ninput = 1\noutput = 1\ncache = 1\n",
            "unknown key `cache`",
        ),
        ("[pricing]\nm = 2\n", "must be a table"),
    ] {
        h.config(config);
        let (output, events) = h.run_json(Wire::OpenAi, &[], "price check").await;
        assert_eq!(output.status.code(), Some(2), "{config}");
        let err = stderr(&output);
        assert!(
            err.contains(expected) && err.contains("pricing"),
            "{config}: {err}"
        );
        assert!(events.is_empty());
    }
    assert!(h.server.requests().is_empty());
}

fn tree_script() -> Script {
    Script::new()
        .conversation(
            "TREE-ROOT split the work",
            vec![
                Reply::tool("read_file", json!({"path": "a.txt"})),
                Reply::tool(
                    "delegate_task",
                    json!({"tasks": [
                        {"goal": "child one: read and delegate", "role": "orchestrator"},
                        {"goal": "child two: answer at once"}
                    ]}),
                ),
                Reply::text("root done"),
            ],
        )
        .conversation(
            "child one",
            vec![
                Reply::tool("read_file", json!({"path": "a.txt"})),
                Reply::tool("delegate_task", json!({"goal": "grandchild: read a.txt"})),
                Reply::text("child one done"),
            ],
        )
        .conversation("child two", vec![Reply::text("child two done")])
        .conversation(
            "grandchild",
            vec![
                Reply::tool("read_file", json!({"path": "a.txt"})),
                Reply::text("grandchild done"),
            ],
        )
}

/// Sums `usage` events the way `usage` / `tree_usage` report them.
#[derive(Debug, Default, PartialEq)]
struct Sum {
    input: u64,
    output: u64,
    cached: u64,
    requests: u64,
    micros: i64,
}

impl Sum {
    fn add_events(&mut self, events: &[Value]) {
        for e in events.iter().filter(|e| e["type"] == "usage") {
            self.input += e["input_tokens"].as_u64().unwrap();
            self.output += e["output_tokens"].as_u64().unwrap();
            self.cached += e["cached_tokens"].as_u64().unwrap();
            self.requests += 1;
            self.micros += micros(&e["cost_usd"]).unwrap();
        }
    }

    fn of_totals(totals: &Value) -> Sum {
        Sum {
            input: totals["input"].as_u64().unwrap(),
            output: totals["output"].as_u64().unwrap(),
            cached: totals["cached"].as_u64().unwrap(),
            requests: totals["requests"].as_u64().unwrap(),
            micros: micros(&totals["cost_usd"]).unwrap(),
        }
    }
}

/// The stored events of a session, as `herald sessions show --events --json` gives them.
async fn stored_events(h: &Harness, session: &str) -> Vec<Value> {
    let output = h
        .command(Wire::Anthropic)
        .args(["sessions", "show", session, "--events", "--json"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    common::parse_events(&output.stdout)
}

#[tokio::test(flavor = "multi_thread")]
async fn tree_usage_is_the_sum_of_every_agents_usage_events() {
    let h = Harness::new(tree_script()).await;
    std::fs::write(h.work_path().join("a.txt"), "y".repeat(2_000)).unwrap();
    h.config("[delegation]\nmax_spawn_depth = 2\n");
    let (output, events) = h
        .run_json(Wire::Anthropic, &[], "TREE-ROOT split the work")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let end = last(&events);
    assert_eq!(end["type"], "run.completed");
    assert_eq!(end["final_response"], "root done");

    // The root's own usage: its usage events in the stream.
    let mut root = Sum::default();
    root.add_events(&events);
    assert_eq!(Sum::of_totals(&end["usage"]), root);
    assert_eq!(micros(&end["cost_usd"]), Some(root.micros));
    assert_eq!(root.requests, 3);

    // Every agent's usage events, from each child session's stored stream
    // (a grandchild is started in its parent's stream, not the root's).
    let mut tree = Sum::default();
    tree.add_events(&events);
    let mut per_agent = std::collections::HashMap::new();
    let mut completed: Vec<Value> = of_type(&events, "subagent.completed")
        .into_iter()
        .cloned()
        .collect();
    let mut pending: Vec<Value> = of_type(&events, "subagent.started")
        .into_iter()
        .cloned()
        .collect();
    while let Some(started) = pending.pop() {
        let session = started["child_session_id"].as_str().unwrap();
        let stored = stored_events(&h, session).await;
        let mut own = Sum::default();
        own.add_events(&stored);
        assert!(own.requests > 0, "{session}");
        tree.add_events(&stored);
        per_agent.insert(started["agent_id"].as_str().unwrap().to_owned(), own);
        for e in &stored {
            if e["type"] == "subagent.started" && e["agent_id"] != started["agent_id"] {
                pending.push(e.clone());
            }
            if e["type"] == "subagent.completed" && e["agent_id"] != started["agent_id"] {
                completed.push(e.clone());
            }
        }
    }
    assert_eq!(per_agent.len(), 3, "two children and a grandchild");
    let tree_usage = Sum::of_totals(&end["tree_usage"]);
    assert_eq!(tree_usage, tree);
    assert_eq!(tree_usage.requests, 3 + 3 + 1 + 2);
    assert!(end["tree_usage"]["cache_creation"].as_u64().unwrap() > 0);
    assert!(tree_usage.micros > root.micros);

    // Each subagent.completed: its own usage, and its subtree's.
    completed.dedup_by(|a, b| a["agent_id"] == b["agent_id"]);
    assert_eq!(completed.len(), 3, "{completed:?}");
    let grandchild = per_agent.values().find(|s| s.requests == 2).unwrap();
    for c in &completed {
        let own = &per_agent[c["agent_id"].as_str().unwrap()];
        assert_eq!(&Sum::of_totals(&c["usage"]), own, "{c}");
        let subtree = Sum::of_totals(&c["tree_usage"]);
        if c["depth"] == 1 && own.requests == 3 {
            // child one: itself and the grandchild.
            assert_eq!(subtree.requests, own.requests + grandchild.requests);
            assert_eq!(subtree.micros, own.micros + grandchild.micros);
            assert_eq!(subtree.input, own.input + grandchild.input);
        } else {
            assert_eq!(&subtree, own, "{c}");
        }
    }
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn herald_usage_reports_spend_and_cache_share_from_the_store() {
    let h = Harness::new(tree_script()).await;
    std::fs::write(h.work_path().join("a.txt"), "z".repeat(1_500)).unwrap();
    h.config("[delegation]\nmax_spawn_depth = 2\n");
    let (output, events) = h
        .run_json(Wire::Anthropic, &[], "TREE-ROOT split the work")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let end = last(&events);
    let session = end["session_id"].as_str().unwrap().to_owned();

    let usage_json = |args: &'static [&'static str]| {
        let mut cmd = h.command(Wire::Anthropic);
        cmd.arg("usage").args(args).arg("--json");
        async move {
            let output = cmd.output().await.unwrap();
            assert!(output.status.success(), "{}", stderr(&output));
            serde_json::from_slice::<Value>(&output.stdout).unwrap()
        }
    };
    // By session: the run is one row (its subagents count with it) and
    // equals run.completed's tree_usage.
    let report = usage_json(&["--by", "session", "--since", "7d"]).await;
    let rows = report["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{report}");
    assert_eq!(rows[0]["key"], session.as_str());
    for key in ["input", "output", "cached", "cache_creation", "requests"] {
        assert_eq!(rows[0][key], end["tree_usage"][key], "{key}: {report}");
    }
    assert_eq!(
        micros(&rows[0]["cost_usd"]),
        micros(&end["tree_usage"]["cost_usd"])
    );
    assert_eq!(report["total"]["requests"], end["tree_usage"]["requests"]);
    let by_model = usage_json(&["--by", "model"]).await;
    assert_eq!(by_model["rows"][0]["key"], "claude-sonnet-4-5");
    let by_project = usage_json(&["--by", "project"]).await;
    assert_eq!(
        by_project["rows"][0]["key"],
        h.work_path().display().to_string()
    );

    // The table: a header, one row per day, a total with the cache share.
    let output = h
        .command(Wire::Anthropic)
        .args(["usage", "--by", "day"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[0].starts_with("day") && lines[0].contains("cached"),
        "{text}"
    );
    assert!(lines[2].starts_with("total") && lines[2].contains('%') && lines[2].contains('$'));

    // A bad --since is a usage error naming the option; nothing else changes.
    for bad in ["yesterday-ish", "7x", "3 weeks"] {
        let output = h
            .command(Wire::Anthropic)
            .args(["usage", "--since", bad])
            .output()
            .await
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{bad}");
        assert!(stderr(&output).contains("--since"), "{}", stderr(&output));
        assert!(output.stdout.is_empty());
    }
    let again = usage_json(&["--by", "session"]).await;
    assert_eq!(again["rows"], report["rows"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_show_gives_the_tree_total_and_the_child_sessions() {
    let h = Harness::new(tree_script()).await;
    std::fs::write(h.work_path().join("a.txt"), "w".repeat(1_000)).unwrap();
    h.config("[delegation]\nmax_spawn_depth = 2\n");
    let (output, events) = h
        .run_json(Wire::Anthropic, &[], "TREE-ROOT split the work")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let end = last(&events);
    let session = end["session_id"].as_str().unwrap();
    let output = h
        .command(Wire::Anthropic)
        .args(["sessions", "show", session, "--json"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let shown: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(shown["tree_usage"], end["tree_usage"]);
    assert_eq!(shown["children"].as_array().unwrap().len(), 3);

    let output = h
        .command(Wire::Anthropic)
        .args(["sessions", "show", session])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    let tree_line = text.lines().find(|l| l.starts_with("tree (")).unwrap();
    assert!(tree_line.contains("3 subagent sessions"), "{text}");
    assert!(
        tree_line.contains(&format!("{} requests", end["tree_usage"]["requests"])),
        "{text}"
    );
    for child in shown["children"].as_array().unwrap() {
        assert!(text.contains(child["id"].as_str().unwrap()), "{text}");
    }
}

/// `herald agents list --session ROOT --json`: the journal of one run.
async fn journal(h: &Harness, root_session: &str) -> Vec<Value> {
    let output = h
        .command(Wire::Anthropic)
        .args(["agents", "list", "--session", root_session, "--json"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_slice::<Value>(&output.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// The ids of `id` and every agent below it in the journal.
fn subtree_ids(records: &[Value], id: &str) -> Vec<String> {
    let mut ids = vec![id.to_owned()];
    let mut at = 0;
    while at < ids.len() {
        let parent = ids[at].clone();
        ids.extend(
            records
                .iter()
                .filter(|r| r["parent_agent_id"] == parent.as_str())
                .map(|r| r["id"].as_str().unwrap().to_owned()),
        );
        at += 1;
    }
    ids
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agents_journal_keeps_each_agents_own_and_subtree_totals() {
    let h = Harness::new(tree_script()).await;
    std::fs::write(h.work_path().join("a.txt"), "j".repeat(1_800)).unwrap();
    h.config("[delegation]\nmax_spawn_depth = 2\n");
    let (output, events) = h
        .run_json(Wire::Anthropic, &[], "TREE-ROOT split the work")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let end = last(&events);
    let root_session = end["session_id"].as_str().unwrap().to_owned();
    let records = journal(&h, &root_session).await;
    assert_eq!(records.len(), 3, "two children and a grandchild");

    let mut all_subagents = Sum::default();
    for record in &records {
        let id = record["id"].as_str().unwrap();
        // Its own totals: the usage events of its own session.
        let session = record["session_id"].as_str().unwrap();
        let mut own = Sum::default();
        own.add_events(&stored_events(&h, session).await);
        assert!(own.requests > 0, "{record}");
        assert_eq!(Sum::of_totals(&record["usage"]), own, "{record}");
        assert_eq!(micros(&record["cost_usd"]), Some(own.micros));
        all_subagents.requests += own.requests;
        all_subagents.micros += own.micros;
        all_subagents.input += own.input;
        // Its subtree: the sum of its own and every descendant's own.
        let mut subtree = Sum::default();
        for member in subtree_ids(&records, id) {
            let r = records.iter().find(|r| r["id"] == member.as_str()).unwrap();
            let part = Sum::of_totals(&r["usage"]);
            subtree.input += part.input;
            subtree.output += part.output;
            subtree.cached += part.cached;
            subtree.requests += part.requests;
            subtree.micros += part.micros;
        }
        assert_eq!(Sum::of_totals(&record["tree_usage"]), subtree, "{record}");
        assert!(record["tree_usage"]["cache_creation"].as_u64().unwrap() > 0);
    }
    let child_one = records
        .iter()
        .find(|r| r["depth"] == 1 && r["tree_usage"]["requests"] != r["usage"]["requests"])
        .expect("child one's subtree includes the grandchild");
    // The root's tree total is its own plus every subagent's journaled own.
    let tree = Sum::of_totals(&end["tree_usage"]);
    let root = Sum::of_totals(&end["usage"]);
    assert_eq!(tree.requests, root.requests + all_subagents.requests);
    assert_eq!(tree.micros, root.micros + all_subagents.micros);
    assert_eq!(tree.input, root.input + all_subagents.input);

    // The human listing shows the cost and, for child one, its subtree.
    let output = h
        .command(Wire::Anthropic)
        .args(["agents", "list", "--session", &root_session])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    let line = text
        .lines()
        .find(|l| l.starts_with(child_one["id"].as_str().unwrap()))
        .unwrap();
    assert!(line.contains("(subtree ") && line.contains('$'), "{text}");
    let output = h
        .command(Wire::Anthropic)
        .args(["agents", "show", child_one["id"].as_str().unwrap()])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        text.contains(&format!(
            "subtree: {} requests",
            child_one["tree_usage"]["requests"]
        )),
        "{text}"
    );
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unpriced_tree_is_journaled_with_null_costs() {
    let h = Harness::new(tree_script()).await;
    std::fs::write(h.work_path().join("a.txt"), "k".repeat(900)).unwrap();
    h.config("[delegation]\nmax_spawn_depth = 2\n");
    let (output, events) = h
        .run_json(
            Wire::Anthropic,
            &["--model", "my-local-model"],
            "TREE-ROOT split the work",
        )
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let root_session = last(&events)["session_id"].as_str().unwrap().to_owned();
    let records = journal(&h, &root_session).await;
    assert_eq!(records.len(), 3);
    for record in &records {
        assert!(record["cost_usd"].is_null(), "{record}");
        assert!(record["usage"]["cost_usd"].is_null(), "{record}");
        assert!(record["tree_usage"]["cost_usd"].is_null(), "{record}");
        assert!(record["tree_usage"]["requests"].as_u64().unwrap() > 0);
        assert!(record["usage"]["input"].as_u64().unwrap() > 0);
    }
    let output = h
        .command(Wire::Anthropic)
        .args(["agents", "list", "--session", &root_session])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    assert_eq!(text.matches("cost unknown").count(), 4, "{text}");
    assert!(!text.contains('$'), "{text}");
}
