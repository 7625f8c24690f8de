//! `herald mcp add|remove|get` through the real binary: the config file is
//! edited in place (comments kept), and bad input is refused with exit 2
//! without touching the file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Harness, stderr};
use herald_testkit::Script;
use serde_json::Value;

async fn herald(h: &Harness, args: &[&str]) -> std::process::Output {
    h.bare_command().args(args).output().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn servers_are_added_shown_and_removed_keeping_the_rest_of_the_file() {
    let h = Harness::new(Script::new()).await;
    h.config("# my settings\nmodel = \"m\" # keep me\n\n[permissions]\n# allow = []\n");
    let config = h.home.path().join("config.toml");
    let out = herald(
        &h,
        &[
            "mcp",
            "add",
            "fs",
            "--env",
            "LOG=1",
            "--",
            "node",
            "server.js",
            "--root",
            ".",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let out = herald(
        &h,
        &[
            "mcp",
            "add",
            "web",
            "--url",
            "http://127.0.0.1:9/mcp",
            "--header",
            "X-Team=a",
            "--bearer-token-env-var",
            "WEB_TOKEN",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.starts_with("# my settings\nmodel = \"m\" # keep me\n"),
        "{text}"
    );
    assert!(text.contains("# allow = []"), "{text}");
    let parsed: toml::Table = toml::from_str(&text).unwrap();
    let fs = &parsed["mcp_servers"]["fs"];
    assert_eq!(fs["command"].as_str(), Some("node"));
    assert_eq!(fs["args"].as_array().unwrap().len(), 3);
    assert_eq!(fs["env"]["LOG"].as_str(), Some("1"));
    let out = herald(&h, &["mcp", "get", "web", "--json"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let web: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(web["url"], "http://127.0.0.1:9/mcp");
    assert_eq!(web["headers"]["X-Team"], "a");
    assert_eq!(web["bearer_token_env_var"], "WEB_TOKEN");

    // Bad input: exit 2, the file unchanged.
    let before = std::fs::read_to_string(&config).unwrap();
    for (args, expected) in [
        (
            vec!["mcp", "add", "fs", "--", "other"],
            "already configured",
        ),
        (
            vec!["mcp", "add", "bad name", "--", "x"],
            "invalid server name",
        ),
        (vec!["mcp", "add", "empty"], "give the server's command"),
        (
            vec!["mcp", "add", "e", "--env", "NOEQUALS", "--", "x"],
            "KEY=VALUE",
        ),
        (vec!["mcp", "remove", "nope"], "configured: fs, web"),
        (vec!["mcp", "get", "nope"], "no MCP server 'nope'"),
    ] {
        let out = herald(&h, &args).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(expected),
            "{args:?}: {}",
            stderr(&out)
        );
        assert_eq!(
            std::fs::read_to_string(&config).unwrap(),
            before,
            "{args:?}"
        );
    }

    let out = herald(
        &h,
        &["mcp", "add", "fs", "--force", "--", "node", "other.js"],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let out = herald(&h, &["mcp", "remove", "web"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let parsed: toml::Table = toml::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    let servers = parsed["mcp_servers"].as_table().unwrap();
    assert_eq!(servers.keys().collect::<Vec<_>>(), ["fs"]);
    assert_eq!(
        servers["fs"]["args"].as_array().unwrap()[0].as_str(),
        Some("other.js")
    );
}
