//! What a client's model pays for `tools/list`, through the real stdio door: the default
//! catalog, `--profile coding` and discovery mode each stay under a byte budget, every tool
//! stays reachable from the default catalog, and everyday requests find their tool.

use serde_json::{Value, json};

use crate::sandbox::Mcp;
use crate::support::{Env, code, stdout};

/// Budgets of the compact JSON of the `tools` array, all pages (issue 54).
const DEFAULT_BUDGET: usize = 25_000;
const CODING_BUDGET: usize = 12_000;
const DISCOVER_BUDGET: usize = 4_000;

/// An environment whose catalog is every built-in tool, listed whether or not it can work
/// here (a language server installed or not, a key given or not): the largest default
/// catalog a user can meet. Curated plugins are left out (they are not built-ins).
fn env() -> (Env, tempfile::TempDir) {
    let env = Env::new();
    env.write("toolshed.toml", "[mcp]\nlist_unconfigured = true\n");
    (env, tempfile::tempdir().unwrap())
}

fn start(env: &Env, curated: &tempfile::TempDir, args: &[&str]) -> Mcp {
    let mut cmd = env.cmd(&["mcp"]);
    cmd.args(args).env("TOOLSHED_CURATED_DIR", curated.path());
    Mcp::start(cmd)
}

/// Every tool `tools/list` gives, following `nextCursor`.
fn listed(mcp: &mut Mcp) -> Vec<Value> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = cursor.map_or_else(|| json!({}), |c| json!({"cursor": c}));
        let reply = mcp.request("tools/list", params);
        let page = &reply["result"];
        tools.extend(page["tools"].as_array().unwrap().iter().cloned());
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return tools,
        }
    }
}

fn bytes(value: &Value) -> usize {
    serde_json::to_vec(value).unwrap().len()
}

fn names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn each_catalog_stays_under_its_budget_and_says_what_each_tool_costs() {
    let (env, curated) = env();
    let mut over = Vec::new();
    for (label, args, budget) in [
        ("default", &[][..], DEFAULT_BUDGET),
        (
            "--profile coding",
            &["--profile", "coding"][..],
            CODING_BUDGET,
        ),
        (
            "--catalog discover",
            &["--catalog", "discover"][..],
            DISCOVER_BUDGET,
        ),
    ] {
        let mut mcp = start(&env, &curated, args);
        let mut tools = listed(&mut mcp);
        let total = bytes(&Value::Array(tools.clone()));
        tools.sort_by_key(|t| std::cmp::Reverse(bytes(t)));
        let mut report = format!(
            "{label}: {} tools, {total} bytes (budget {budget})\n",
            tools.len()
        );
        for tool in &tools {
            report.push_str(&format!(
                "  {:>6}  {}\n",
                bytes(tool),
                tool["name"].as_str().unwrap()
            ));
        }
        // Shown with --nocapture, and in the failure below.
        println!("{report}");
        if total > budget {
            over.push(report);
        }
    }
    assert!(over.is_empty(), "over budget:\n{}", over.join("\n"));
}

#[test]
fn every_tool_stays_reachable_from_the_default_catalog() {
    let (env, curated) = env();
    let mut cmd = env.cmd(&["tools", "list", "--json"]);
    cmd.env("TOOLSHED_CURATED_DIR", curated.path());
    let o = cmd.output().unwrap();
    assert_eq!(code(&o), 0);
    let all: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    let all = names(&all);

    let mut mcp = start(&env, &curated, &[]);
    let tools = listed(&mut mcp);
    let listed_names = names(&tools);
    let search = tools
        .iter()
        .find(|t| t["name"] == "tool_search")
        .expect("the default catalog leaves tools out, so it offers tool_search");
    assert!(
        listed_names.iter().any(|n| n == "tool_call"),
        "{listed_names:?}"
    );
    // A tool left out is named in tool_search's description, so a model knows it is there.
    let description = search["description"].as_str().unwrap();
    let (_, named) = description
        .split_once("Not listed, found here: ")
        .expect(description);
    let named: Vec<&str> = named.trim_end_matches('.').split(", ").collect();
    for name in &all {
        assert!(
            listed_names.contains(name) || named.contains(&name.as_str()),
            "{name} is neither listed nor named in tool_search: {description}"
        );
    }
    assert!(named.contains(&"calculator") && !listed_names.iter().any(|n| n == "calculator"));

    // Left out of the list, it is still called by name, directly or through tool_call.
    let direct = mcp.call("calculator", json!({"expression": "6 * 7"}));
    assert!(
        direct["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("42"),
        "{direct}"
    );
    let through = mcp.call(
        "tool_call",
        json!({"name": "calculator", "arguments": {"expression": "2 + 2"}}),
    );
    assert!(
        through["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains('4'),
        "{through}"
    );
    // Activated, it is listed.
    let found = mcp.call(
        "tool_search",
        json!({"query": "arithmetic", "limit": 1, "activate": true}),
    );
    assert_eq!(
        found["structuredContent"]["activated"],
        json!(["calculator"]),
        "{found}"
    );
    assert!(names(&listed(&mut mcp)).iter().any(|n| n == "calculator"));

    // `--catalog full` lists them all, without the discovery tools.
    let mut full = start(&env, &curated, &["--catalog", "full"]);
    let mut full_names = names(&listed(&mut full));
    full_names.sort();
    let mut expected = all.clone();
    expected.sort();
    assert_eq!(full_names, expected);
}

/// Everyday requests, and the tool a model should end up with: among the first three that
/// `tool_search` returns (each with its summary, for the model to choose from).
const WHICH_TOOL: &[(&str, &str)] = &[
    ("generate a uuid", "random"),
    ("pick a random password", "random"),
    ("what day of the week is 2026-03-29", "datetime"),
    ("convert a time to another timezone", "datetime"),
    ("sha256 hash of a string", "crypto"),
    ("base64 encode", "crypto"),
    ("compute 17% of 2340", "calculator"),
    ("evaluate an arithmetic expression", "calculator"),
    ("validate JSON against a schema", "json_ops"),
    ("query JSON with JSONPath", "json_ops"),
    ("render markdown to html", "markdown"),
    ("slugify a title", "text"),
    ("count words in text", "text"),
    ("summarize a long text", "text_summarize"),
    ("translate this paragraph into French", "text_translate"),
    ("download a file from a URL", "download_file"),
    ("download several URLs at once", "download_batch"),
    ("start a dev server in the background", "process_exec"),
    (
        "read the output of a background process",
        "process_read_output",
    ),
    ("stop the background server", "process_stop"),
    ("add a line to today's journal", "memory_append_daily"),
    (
        "compact old memories into a summary",
        "memory_compact_summary",
    ),
    ("find where a function is defined", "lsp"),
    ("go to definition", "lsp"),
    ("show errors in my code", "lsp"),
    ("rename a symbol everywhere", "lsp_rename"),
    ("replace text in a file", "workspace_edit"),
    ("run tests", "exec_command"),
    ("search file contents for a regex", "workspace_grep"),
    ("remember this for later", "memory_store"),
    ("fetch a web page", "web_fetch"),
    ("search the web", "web_search"),
];

#[test]
fn everyday_requests_find_their_tool() {
    let (env, curated) = env();
    let mut mcp = start(&env, &curated, &[]);
    let mut missed = Vec::new();
    for (request, tool) in WHICH_TOOL {
        let found = mcp.call("tool_search", json!({"query": request, "limit": 3}));
        let ranked: Vec<&str> = found["structuredContent"]["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        let rank = ranked.iter().position(|n| n == tool);
        println!(
            "{request:45} {tool:24} {}",
            rank.map_or("missed".into(), |r| format!("#{}", r + 1))
        );
        if rank.is_none() {
            missed.push(format!("{request:?} wants {tool}, found {ranked:?}"));
        }
    }
    assert!(missed.is_empty(), "{}", missed.join("\n"));
}

/// `ttlMs` and `cacheScope` are the 2026-07-28 era's; a session-era list is as before.
/// Failed before: the era was read from `RequestContext::protocol_version`, which falls
/// back to the session's negotiated version, so every session-era list carried both.
#[test]
fn a_session_era_list_carries_no_cache_hints() {
    let (env, curated) = env();
    let mut mcp = start(&env, &curated, &[]);
    for method in ["tools/list", "prompts/list", "resources/list"] {
        let reply = mcp.request(method, json!({}));
        let result = &reply["result"];
        assert!(result.is_object(), "{method}: {reply}");
        assert!(
            result.get("ttlMs").is_none() && result.get("cacheScope").is_none(),
            "{method}: {result}"
        );
    }
}

/// Every argument of every tool is described by a schema object, never by `true` (any
/// value): clients check the listing (the TypeScript SDK refuses a whole `tools/list` with
/// one such argument). Failed before: `schedule_create`'s `arguments`.
#[test]
fn every_argument_has_a_schema_object() {
    let (env, curated) = env();
    let mut mcp = start(&env, &curated, &["--catalog", "full"]);
    let mut bare = Vec::new();
    for tool in listed(&mut mcp) {
        let Some(properties) = tool["inputSchema"]["properties"].as_object() else {
            continue;
        };
        for (name, schema) in properties {
            if !schema.is_object() {
                bare.push(format!("{}.{name}: {schema}", tool["name"]));
            }
        }
    }
    assert!(bare.is_empty(), "{bare:?}");
}
