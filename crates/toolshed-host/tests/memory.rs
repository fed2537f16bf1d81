//! Memory over a real SQLite file: the lifecycle of a memory, ranking, filters, hostile
//! queries, owners, the daily journal across a date change, compaction and the caps.
//!
//! With `TOOLSHED_TEST_MEMORY_ON_POSTGRES` set, the same tests run on the Postgres engine
//! (full-text search with `tsvector`), each on a fresh database of the server
//! `TOOLSHED_TEST_POSTGRES_URL` reaches: scripts/test runs them that way too.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use toolshed_host::StateStore;
use toolshed_host::memory::{Memories, MemoryConfig, MemoryError, NewMemory, RANKED, Search};

/// 2026-12-01T23:58:00Z.
const LATE: i64 = 1_796_169_480_000;

struct Fixture {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    clock: Arc<AtomicI64>,
    memories: Memories,
}

fn fixture(config: MemoryConfig) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolshed.db");
    let store = match std::env::var_os("TOOLSHED_TEST_MEMORY_ON_POSTGRES") {
        None => StateStore::open(&path).unwrap(),
        Some(_) => {
            let config = toolshed_host::config::StoreConfig {
                url: Some(fresh_database()),
                max_connections: 2,
                ..Default::default()
            };
            let store = StateStore::open_with(&path, &config).unwrap();
            assert_eq!(store.engine_name(), "postgres");
            store
        }
    };
    let store = Arc::new(store);
    let clock = Arc::new(AtomicI64::new(LATE));
    let tick = clock.clone();
    let memories =
        Memories::with_clock(store, config, Arc::new(move || tick.load(Ordering::SeqCst)));
    Fixture {
        _dir: dir,
        path,
        clock,
        memories,
    }
}

/// A new database on the test server.
#[cfg(not(feature = "postgres"))]
fn fresh_database() -> String {
    panic!("TOOLSHED_TEST_MEMORY_ON_POSTGRES needs the `postgres` feature")
}

/// A new database on the test server.
#[cfg(feature = "postgres")]
fn fresh_database() -> String {
    static N: AtomicI64 = AtomicI64::new(0);
    let admin = std::env::var("TOOLSHED_TEST_POSTGRES_URL")
        .expect("TOOLSHED_TEST_MEMORY_ON_POSTGRES needs TOOLSHED_TEST_POSTGRES_URL");
    let name = format!(
        "memory_{}_{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
        N.fetch_add(1, Ordering::SeqCst)
    );
    let (server, _) = admin.rsplit_once('/').unwrap();
    let url = format!("{server}/{name}");
    std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&admin, postgres::NoTls).unwrap();
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
    })
    .join()
    .unwrap();
    url
}

fn note(text: &str) -> NewMemory {
    NewMemory {
        text: text.into(),
        ..NewMemory::default()
    }
}

fn search(m: &Memories, owner: &str, query: &str) -> Vec<String> {
    m.search(
        owner,
        &Search {
            query: query.into(),
            limit: 10,
            ..Search::default()
        },
    )
    .unwrap()
    .into_iter()
    .map(|f| f.id)
    .collect()
}

#[test]
fn a_memory_is_stored_found_listed_deleted_and_restored() {
    let f = fixture(MemoryConfig::default());
    let m = &f.memories;
    let staging = m
        .store(
            "alice",
            NewMemory {
                text: "The staging database is postgres 16 on port 5433".into(),
                title: Some("Staging DB".into()),
                tags: vec!["infra".into(), "#DB".into()],
                ..NewMemory::default()
            },
        )
        .unwrap();
    assert!(staging.id.starts_with("m-"));
    assert_eq!(staging.tags, ["infra", "db"]);
    let deploy = m
        .store("alice", note("Deploys go out on Tuesdays"))
        .unwrap();
    let found = m
        .search(
            "alice",
            &Search {
                query: "postgres".into(),
                limit: 10,
                ..Search::default()
            },
        )
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].id, staging.id);
    assert!(
        found[0].snippet.contains("**postgres**"),
        "{}",
        found[0].snippet
    );
    assert_eq!(
        m.get("alice", &deploy.id).unwrap().text,
        "Deploys go out on Tuesdays"
    );

    // Update by id keeps the id and changes the text the index holds.
    f.clock.fetch_add(1000, Ordering::SeqCst);
    let updated = m
        .store(
            "alice",
            NewMemory {
                id: Some(deploy.id.clone()),
                ..note("Deploys go out on Thursdays")
            },
        )
        .unwrap();
    assert_eq!(updated.id, deploy.id);
    assert!(search(m, "alice", "tuesdays").is_empty());
    assert_eq!(search(m, "alice", "thursdays"), [deploy.id.as_str()]);

    // Newest first, paged.
    let (page, next) = m.list("alice", None, &[], None, 1).unwrap();
    assert_eq!(page[0].id, deploy.id);
    let (rest, last) = m.list("alice", None, &[], next.as_deref(), 1).unwrap();
    assert_eq!(rest[0].id, staging.id);
    assert_eq!(last, None);
    assert!(matches!(
        m.list("alice", None, &[], Some("nonsense"), 1),
        Err(MemoryError::Invalid(_))
    ));

    // Deleted: gone from search and list, still readable (saying so), restorable.
    m.delete("alice", &staging.id).unwrap();
    assert!(search(m, "alice", "postgres").is_empty());
    assert_eq!(m.list("alice", None, &[], None, 10).unwrap().0.len(), 1);
    assert!(m.get("alice", &staging.id).unwrap().deleted_ms.is_some());
    m.restore("alice", &staging.id).unwrap();
    assert_eq!(search(m, "alice", "postgres"), [staging.id.as_str()]);
    assert!(matches!(
        m.restore("alice", &staging.id),
        Err(MemoryError::Conflict(_))
    ));
    assert!(matches!(
        m.delete("alice", "m-nope"),
        Err(MemoryError::NotFound(_))
    ));

    // Purged once deleted for longer than deleted_days (30).
    m.delete("alice", &staging.id).unwrap();
    f.clock.fetch_add(31 * 86_400_000, Ordering::SeqCst);
    m.store("alice", note("anything")).unwrap();
    assert!(matches!(
        m.get("alice", &staging.id),
        Err(MemoryError::NotFound(_))
    ));
    // All of it in the file on disk.
    assert!(std::fs::metadata(&f.path).unwrap().len() > 0);
}

#[test]
fn bm25_ranks_tags_filter_and_prefixes_and_phrases_match() {
    let f = fixture(MemoryConfig::default());
    let m = &f.memories;
    let once = m
        .store(
            "a",
            note("A long note that mentions caching once among many other words about deploys, reviews, queues and schedules"),
        )
        .unwrap();
    let thrice = m
        .store("a", note("caching: caching layers and caching rules"))
        .unwrap();
    assert_eq!(
        search(m, "a", "caching"),
        [thrice.id.clone(), once.id.clone()]
    );
    // A title weighs more than the text.
    let titled = m
        .store(
            "a",
            NewMemory {
                title: Some("queues".into()),
                ..note("how the workers run")
            },
        )
        .unwrap();
    assert_eq!(search(m, "a", "queues")[0], titled.id);

    let tagged = m
        .store(
            "a",
            NewMemory {
                tags: vec!["decision".into()],
                ..note("We chose caching in redis")
            },
        )
        .unwrap();
    let with_tag = m
        .search(
            "a",
            &Search {
                query: "caching".into(),
                tags: vec!["decision".into()],
                limit: 10,
                ..Search::default()
            },
        )
        .unwrap();
    assert_eq!(with_tag.len(), 1);
    assert_eq!(with_tag[0].id, tagged.id);
    let (listed, _) = m.list("a", None, &["decision".into()], None, 10).unwrap();
    assert_eq!(listed.len(), 1);

    // Prefixes, phrases, OR and NOT; stemming finds `deploy` in `deploys`.
    assert_eq!(search(m, "a", "sched*"), [once.id.as_str()]);
    assert_eq!(search(m, "a", "\"caching layers\""), [thrice.id.as_str()]);
    assert!(search(m, "a", "\"layers caching\"").is_empty());
    assert_eq!(search(m, "a", "deploy"), [once.id.as_str()]);
    assert_eq!(search(m, "a", "workers OR redis").len(), 2);
    let without_redis = search(m, "a", "caching -redis");
    assert!(!without_redis.contains(&tagged.id) && without_redis.len() == 2);
}

#[test]
fn hostile_queries_are_answered_never_crash() {
    let f = fixture(MemoryConfig::default());
    let m = &f.memories;
    m.store("a", note("select star from memories; near the end"))
        .unwrap();
    for query in [
        "\"",
        "*",
        "NEAR(",
        "NEAR(a b, 3)",
        "' OR 1=1 --",
        "\"; DROP TABLE memories; --",
        "a AND OR NOT b",
        "title:secret",
        "{a b}",
        "^start",
        "(((",
        "select * from memories",
        "\u{0}",
        "🦀🦀",
        "-",
        "OR OR OR",
    ] {
        match m.search(
            "a",
            &Search {
                query: query.into(),
                limit: 5,
                ..Search::default()
            },
        ) {
            Ok(_) => {}
            Err(MemoryError::Invalid(message)) => {
                assert!(
                    !message.is_empty() && !message.contains("SQL"),
                    "{query:?}: {message}"
                );
            }
            Err(other) => panic!("{query:?}: {other:?}"),
        }
    }
    // A SQL fragment is searched for as words.
    assert_eq!(search(m, "a", "select * from memories").len(), 1);
    // The table is intact.
    assert_eq!(m.list("a", None, &[], None, 10).unwrap().0.len(), 1);
}

#[test]
fn owners_never_see_each_others_memories_but_a_shared_namespace() {
    let f = fixture(MemoryConfig {
        shared_namespaces: vec!["team".into()],
        ..MemoryConfig::default()
    });
    let m = &f.memories;
    let alice = m.store("alice", note("alice likes tea")).unwrap();
    m.store("bob", note("bob likes tea too")).unwrap();
    assert_eq!(search(m, "alice", "tea"), [alice.id.as_str()]);
    assert_eq!(search(m, "alice/task-1", "tea"), [alice.id.as_str()]);
    assert_eq!(search(m, "bob", "tea").len(), 1);
    assert!(matches!(
        m.get("bob", &alice.id),
        Err(MemoryError::NotFound(_))
    ));
    assert!(matches!(
        m.delete("bob", &alice.id),
        Err(MemoryError::NotFound(_))
    ));
    assert!(matches!(
        m.store(
            "bob",
            NewMemory {
                id: Some(alice.id.clone()),
                ..note("mine now")
            }
        ),
        Err(MemoryError::NotFound(_))
    ));
    // The person at the machine is one owner whatever door or connection: `local`.
    let local = m
        .store("mcp-661a45f848b8a-12302-1", note("local coffee"))
        .unwrap();
    assert_eq!(search(m, "mcp-99-1-7", "coffee"), [local.id.as_str()]);
    assert_eq!(search(m, "cli", "coffee"), [local.id.as_str()]);
    assert!(search(m, "alice", "coffee").is_empty());
    // A shared namespace is everyone's.
    let team = m
        .store(
            "alice",
            NewMemory {
                namespace: Some("team".into()),
                ..note("team standup at ten")
            },
        )
        .unwrap();
    assert_eq!(search(m, "bob", "standup"), [team.id.as_str()]);
    let private = m
        .store(
            "alice",
            NewMemory {
                namespace: Some("project-x".into()),
                ..note("project x standup notes")
            },
        )
        .unwrap();
    // Bob may update the shared one (without naming its namespace again).
    m.store(
        "bob",
        NewMemory {
            id: Some(team.id.clone()),
            ..note("team standup at half past ten")
        },
    )
    .unwrap();
    assert!(m.get("alice", &team.id).unwrap().text.contains("half past"));
    assert_eq!(search(m, "bob", "standup"), [team.id]);
    assert_eq!(search(m, "alice", "standup").len(), 2);
    assert!(search(m, "alice", "standup").contains(&private.id));
}

#[test]
fn the_daily_journal_turns_over_at_midnight_in_its_time_zone() {
    let f = fixture(MemoryConfig {
        time_zone: Some("UTC".into()),
        ..MemoryConfig::default()
    });
    let m = &f.memories;
    let first = m.append_daily("alice", "started the migration").unwrap();
    let same = m.append_daily("alice", "migration half done").unwrap();
    assert_eq!(first.id, same.id);
    assert_eq!(same.title, "Journal 2026-12-01");
    assert_eq!(same.text, "started the migration\nmigration half done");
    // Three minutes later it is the 2nd in UTC: a new entry.
    f.clock.fetch_add(3 * 60_000, Ordering::SeqCst);
    let next = m.append_daily("alice", "migration done").unwrap();
    assert_ne!(next.id, first.id);
    assert_eq!(next.title, "Journal 2026-12-02");
    // In Tokyo (UTC+9) both moments are on the 2nd: one entry.
    let tokyo = fixture(MemoryConfig {
        time_zone: Some("Asia/Tokyo".into()),
        ..MemoryConfig::default()
    });
    let a = tokyo.memories.append_daily("a", "one").unwrap();
    tokyo.clock.fetch_add(3 * 60_000, Ordering::SeqCst);
    let b = tokyo.memories.append_daily("a", "two").unwrap();
    assert_eq!(a.id, b.id);
    assert_eq!(b.title, "Journal 2026-12-02");
    let bad = fixture(MemoryConfig {
        time_zone: Some("Mars/Olympus".into()),
        ..MemoryConfig::default()
    });
    assert!(matches!(
        bad.memories.append_daily("a", "x"),
        Err(MemoryError::Invalid(message)) if message.contains("Mars/Olympus")
    ));
}

#[test]
fn compaction_replaces_old_memories_keeps_them_archived_and_checks_its_token() {
    let f = fixture(MemoryConfig {
        compact_bytes: 60,
        ..MemoryConfig::default()
    });
    let m = &f.memories;
    let mut ids = Vec::new();
    for i in 0..5 {
        f.clock.fetch_add(1000, Ordering::SeqCst);
        ids.push(
            m.store("a", note(&format!("old fact number {i} about lunch")))
                .unwrap()
                .id,
        );
    }
    let (material, token) = m.compact_material("a", None, None).unwrap();
    // Oldest first, within 60 bytes: two of the five.
    assert_eq!(
        material.iter().map(|x| x.id.clone()).collect::<Vec<_>>(),
        ids[..2]
    );
    // Something changed meanwhile: the token no longer names the material.
    f.clock.fetch_add(1000, Ordering::SeqCst);
    m.store(
        "a",
        NewMemory {
            id: Some(ids[0].clone()),
            ..note("old fact zero, edited")
        },
    )
    .unwrap();
    assert!(matches!(
        m.compact_apply("a", None, None, &token, "lunch facts"),
        Err(MemoryError::Conflict(_))
    ));
    let (material, token) = m.compact_material("a", None, None).unwrap();
    let replaced: Vec<String> = material.iter().map(|x| x.id.clone()).collect();
    let (summary, count) = m
        .compact_apply("a", None, None, &token, "Facts 1-2 about lunch.")
        .unwrap();
    assert_eq!(count, replaced.len());
    assert_eq!(summary.kind, "summary");
    assert!(search(m, "a", "lunch").contains(&summary.id));
    for id in &replaced {
        let archived = m.get("a", id).unwrap();
        assert_eq!(archived.archived_in.as_deref(), Some(summary.id.as_str()));
        assert!(!search(m, "a", "fact").contains(id));
    }
    // The same token cannot be used twice: its memories are gone from the live set.
    assert!(matches!(
        m.compact_apply("a", None, None, &token, "again"),
        Err(MemoryError::Conflict(_))
    ));
    // An archived memory comes back on its own.
    m.restore("a", &replaced[0]).unwrap();
    assert!(search(m, "a", "fact").contains(&replaced[0]));
}

#[test]
fn sizes_are_capped_with_errors_that_say_what_to_do() {
    let f = fixture(MemoryConfig {
        max_bytes: 100,
        max_owner_bytes: 250,
        ..MemoryConfig::default()
    });
    let m = &f.memories;
    let Err(MemoryError::Invalid(message)) = m.store("a", note(&"x".repeat(101))) else {
        panic!("a memory past max_bytes is refused");
    };
    assert!(
        message.contains("max_bytes") && message.contains("101"),
        "{message}"
    );
    m.store("a", note(&"y".repeat(100))).unwrap();
    m.store("a", note(&"z".repeat(100))).unwrap();
    let Err(MemoryError::Conflict(message)) = m.store("a", note(&"w".repeat(100))) else {
        panic!("an owner past max_owner_bytes is refused");
    };
    assert!(
        message.contains("max_owner_bytes") && message.contains("memory_delete"),
        "{message}"
    );
    // Another owner has room of its own.
    m.store("b", note(&"w".repeat(100))).unwrap();
    assert!(matches!(
        m.store("a", note("   ")),
        Err(MemoryError::Invalid(_))
    ));
    assert!(matches!(
        m.store(
            "a",
            NewMemory {
                tags: vec!["two words".into()],
                ..note("t")
            }
        ),
        Err(MemoryError::Invalid(_))
    ));
    assert!(matches!(
        m.store(
            "a",
            NewMemory {
                namespace: Some("../etc".into()),
                ..note("t")
            }
        ),
        Err(MemoryError::Invalid(_))
    ));
}

#[test]
fn a_memory_with_a_ttl_expires() {
    let f = fixture(MemoryConfig::default());
    let m = &f.memories;
    let short = m
        .store(
            "a",
            NewMemory {
                ttl_ms: Some(60_000),
                ..note("the build is red")
            },
        )
        .unwrap();
    assert_eq!(search(m, "a", "build"), [short.id]);
    f.clock.fetch_add(61_000, Ordering::SeqCst);
    assert!(search(m, "a", "build").is_empty());
}

#[test]
fn memories_go_out_as_markdown_files_and_edits_come_back_by_id() {
    let f = fixture(MemoryConfig::default());
    let m = &f.memories;
    let db = m
        .store(
            "alice",
            NewMemory {
                text: "postgres listens on 5433".into(),
                title: Some("db: port".into()),
                tags: vec!["ops".into()],
                ..NewMemory::default()
            },
        )
        .unwrap();
    let team = m
        .store(
            "alice",
            NewMemory {
                namespace: Some("team/infra".into()),
                ..note("the rota is in the wiki")
            },
        )
        .unwrap();
    m.store("bob", note("bob's own")).unwrap();

    let out = tempfile::tempdir().unwrap();
    let exported = m.export_markdown("alice", out.path()).unwrap();
    assert_eq!(exported.files, 2);
    let db_file = out.path().join(format!("{}.md", db.id));
    let written = std::fs::read_to_string(&db_file).unwrap();
    assert!(
        written.starts_with(&format!(
            "---\nid: {}\ntitle: \"db: port\"\ntags: [\"ops\"]\n",
            db.id
        )),
        "{written}"
    );
    assert!(
        written.ends_with("---\npostgres listens on 5433\n"),
        "{written}"
    );
    assert!(
        out.path()
            .join("team/infra")
            .join(format!("{}.md", team.id))
            .is_file()
    );

    // A person edits one file, adds one, and breaks one.
    std::fs::write(
        &db_file,
        written
            .replace("5433", "5434")
            .replace("[\"ops\"]", "[\"ops\", \"db\"]"),
    )
    .unwrap();
    let added = out.path().join("team/infra/new.md");
    std::fs::write(&added, "deploys go out on tuesdays\n").unwrap();
    std::fs::write(out.path().join("broken.md"), "---\ntags: [oops\n---\nx\n").unwrap();
    let imported = m.import_markdown("alice", out.path()).unwrap();
    assert_eq!(
        (imported.created, imported.updated, imported.unchanged),
        (1, 1, 1)
    );
    assert_eq!(imported.failed.len(), 1, "{:?}", imported.failed);
    assert!(
        imported.failed[0].1.contains("tags"),
        "{:?}",
        imported.failed
    );

    let now = m.get("alice", &db.id).unwrap();
    assert_eq!(now.text, "postgres listens on 5434");
    assert_eq!(now.tags, ["ops", "db"]);
    assert_eq!(search(m, "alice", "tuesdays").len(), 1);
    // The new file now names its memory, so a second import changes nothing.
    assert!(
        std::fs::read_to_string(&added)
            .unwrap()
            .starts_with("---\nid: m-")
    );
    std::fs::remove_file(out.path().join("broken.md")).unwrap();
    let again = m.import_markdown("alice", out.path()).unwrap();
    assert_eq!((again.created, again.updated, again.unchanged), (0, 0, 3));
    let found = m
        .search(
            "alice",
            &Search {
                query: "tuesdays".into(),
                limit: 10,
                ..Search::default()
            },
        )
        .unwrap();
    assert_eq!(found[0].namespace, "team/infra");
    // Bob's memories were neither exported nor touched.
    assert_eq!(search(m, "bob", "postgres"), Vec::<String>::new());
    assert!(!std::fs::read_dir(out.path()).unwrap().any(|e| {
        std::fs::read_to_string(e.unwrap().path()).is_ok_and(|t| t.contains("bob's own"))
    }));
}

#[test]
fn a_compaction_gathers_no_more_than_fits_in_a_reply() {
    // How many of 20 memories of 500 bytes one compaction gathers under a reply ceiling.
    let gathered = |ceiling: u64| {
        let f = fixture(MemoryConfig::default().within_reply(ceiling));
        for i in 0..20 {
            f.memories
                .store("alice", note(&format!("{i:03} {}", "x".repeat(496))))
                .unwrap();
        }
        let (picked, _token) = f.memories.compact_material("alice", None, None).unwrap();
        picked.len()
    };
    // A 5,000-byte reply ceiling: compaction gathers at most 4,000 bytes, not 32 KiB.
    assert_eq!(gathered(5_000), 8);
    assert_eq!(gathered(100_000), 20);
}

#[test]
fn two_servers_appending_to_one_journal_on_postgres_lose_nothing() {
    if std::env::var_os("TOOLSHED_TEST_MEMORY_ON_POSTGRES").is_none() {
        return;
    }
    let url = fresh_database();
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let servers: Vec<Arc<Memories>> = dirs
        .iter()
        .map(|dir| {
            let config = toolshed_host::config::StoreConfig {
                url: Some(url.clone()),
                max_connections: 2,
                ..Default::default()
            };
            let store =
                Arc::new(StateStore::open_with(&dir.path().join("toolshed.db"), &config).unwrap());
            Arc::new(Memories::with_clock(
                store,
                MemoryConfig::default(),
                Arc::new(|| LATE),
            ))
        })
        .collect();
    let writers: Vec<_> = servers
        .iter()
        .enumerate()
        .map(|(s, memories)| {
            let memories = memories.clone();
            std::thread::spawn(move || {
                for i in 0..20 {
                    memories
                        .append_daily("alice", &format!("entry {s}-{i}"))
                        .unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    let (listed, _) = servers[0].list("alice", None, &[], None, 100).unwrap();
    let journals: Vec<_> = listed.iter().filter(|m| m.kind == "daily").collect();
    assert_eq!(journals.len(), 1, "one journal for the day");
    for s in 0..2 {
        for i in 0..20 {
            assert!(
                journals[0].text.contains(&format!("entry {s}-{i}\n"))
                    || journals[0].text.ends_with(&format!("entry {s}-{i}")),
                "entry {s}-{i} was lost"
            );
        }
    }
}

#[test]
fn a_broad_search_ranks_the_callers_newest_matches_and_no_one_else_crowds_them_out() {
    let f = fixture(MemoryConfig::default());
    let m = &f.memories;
    // Alice's matches first (the oldest), the best of them tagged; then more of Bob's
    // than a search ranks, all newer.
    let best = m
        .store(
            "alice",
            NewMemory {
                text: "rollout rollout rollout: the rollout plan".into(),
                tags: vec!["ops".into()],
                ..NewMemory::default()
            },
        )
        .unwrap();
    for i in 0..4 {
        m.store(
            "alice",
            note(&format!(
                "rollout note {i}, with many other words around the one that matches"
            )),
        )
        .unwrap();
    }
    for i in 0..RANKED + 20 {
        m.store("bob", note(&format!("rollout {i}"))).unwrap();
    }
    // Bob's newer matches do not take the places of Alice's: all five, the best first.
    let found = search(m, "alice", "rollout");
    assert_eq!(found.len(), 5, "{found:?}");
    assert_eq!(found[0], best.id);
    let tagged = m
        .search(
            "alice",
            &Search {
                query: "rollout".into(),
                tags: vec!["ops".into()],
                limit: 10,
                ..Search::default()
            },
        )
        .unwrap();
    assert_eq!(tagged.len(), 1);
    assert_eq!(tagged[0].id, best.id);
    // More of Alice's own than are ranked: the newest RANKED are, best first, and a page
    // of them comes back whole.
    for i in 0..RANKED + 10 {
        m.store(
            "alice",
            note(&format!("rollout filler {i} and a few more words")),
        )
        .unwrap();
    }
    let page = m
        .search(
            "alice",
            &Search {
                query: "rollout".into(),
                limit: 100,
                ..Search::default()
            },
        )
        .unwrap();
    assert_eq!(page.len(), 100);
    assert!(
        page.windows(2).all(|w| w[0].score >= w[1].score),
        "not best first"
    );
    assert!(
        page.iter().all(|f| f.id != best.id),
        "the oldest match was ranked though {RANKED} newer ones match"
    );
    assert!(page.iter().all(|f| f.snippet.contains("**rollout**")));
}
