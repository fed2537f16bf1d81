//! The configuration's tests: layers, widening, unknown keys, validation.

use super::*;

fn sources(dir: &Path, env: &[(&str, &str)]) -> ConfigSources {
    ConfigSources {
        workspace: dir.to_path_buf(),
        user_file: Some(dir.join("user.toml")),
        explicit_file: None,
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        sections: Vec::new(),
    }
}

/// Every setting line of the starter, uncommented, is a known key with a valid value.
#[test]
fn the_starter_config_names_only_real_settings() {
    let dir = tempfile::tempdir().unwrap();
    let uncommented = toolshed_test_support::config::uncommented(STARTER);
    assert!(uncommented.contains("\n[[policy.rule]]\n"), "{uncommented}");
    std::fs::write(dir.path().join("user.toml"), &uncommented).unwrap();
    let loaded = sources(dir.path(), &[]).load().unwrap();
    assert!(loaded.unknown_keys.is_empty(), "{:?}", loaded.unknown_keys);
    assert_eq!(loaded.config.policy.rule.len(), 1);
    assert_eq!(loaded.config.quotas.len(), 1);
    assert_eq!(loaded.config.hooks.pre_tool_use.len(), 1);
    // As written (all commented out) it changes nothing.
    std::fs::write(dir.path().join("user.toml"), STARTER).unwrap();
    let loaded = sources(dir.path(), &[]).load().unwrap();
    assert_eq!(loaded.config, Config::default());
    assert!(loaded.widening.is_empty(), "{:?}", loaded.widening);
}

#[test]
fn the_store_url_and_telemetry_headers_are_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("user.toml"),
        "[store]\nurl = \"postgres://t:s3cret@db/t\"\n[telemetry]\nheaders = { x-key = \"k3y\" }\n",
    )
    .unwrap();
    let loaded = sources(dir.path(), &[]).load().unwrap();
    let shown = format!("{:?} {:?}", loaded.settings(), loaded.config.store);
    assert!(
        !shown.contains("s3cret") && !shown.contains("k3y"),
        "{shown}"
    );
    assert!(
        loaded
            .settings()
            .iter()
            .any(|s| s.key == "store.url" && s.value == "(set; not shown)")
    );
}

#[test]
fn later_layers_win_and_env_maps_nested_keys() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolshed.toml"),
        "[limits]\ndefault_timeout_ms = 1000\n[review]\ndeny = [\"a*\"]\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("user.toml"),
        "[limits]\ndefault_timeout_ms = 2000\n",
    )
    .unwrap();
    let env = [
        ("TOOLSHED_REVIEW__ALLOW", "[\"calc*\"]"),
        ("TOOLSHED_LOG__LEVEL", "info"),
    ];
    let loaded = sources(dir.path(), &env).load().unwrap();
    assert_eq!(loaded.config.limits.default_timeout_ms, 2000);
    assert_eq!(loaded.config.review.deny, vec!["a*"]);
    // `toolshed config show`: each setting with the layer that set it.
    let settings = loaded.settings();
    let find = |key: &str| settings.iter().find(|s| s.key == key).unwrap().clone();
    let timeout = find("limits.default_timeout_ms");
    assert_eq!(timeout.value, serde_json::json!(2000));
    assert!(timeout.source.ends_with("user.toml"), "{timeout:?}");
    assert!(find("review.deny").source.ends_with("toolshed.toml"));
    let level = find("log.level").source;
    assert_eq!(level, "environment (TOOLSHED_LOG__LEVEL)");
    assert_eq!(find("limits.max_timeout_ms").source, "default");
    assert_eq!(find("server.bind").value, serde_json::json!("127.0.0.1"));
    assert_eq!(loaded.config.review.allow, vec!["calc*"]);
    assert!(loaded.unknown_keys.is_empty(), "{:?}", loaded.unknown_keys);

    let loaded = sources(
        dir.path(),
        &[("TOOLSHED_LIMITS__DEFAULT_TIMEOUT_MS", "3000")],
    )
    .load()
    .unwrap();
    assert_eq!(loaded.config.limits.default_timeout_ms, 3000);
}

#[test]
fn unknown_keys_are_reported_with_their_source() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolshed.toml"),
        "[limits]\ndefault_timeout = 5\n",
    )
    .unwrap();
    let loaded = sources(
        dir.path(),
        &[
            ("TOOLSHED_NOPE", "1"),
            ("TOOLSHED_HOME", "/x"),
            // The sandbox helper's switches are not config keys either.
            ("TOOLSHED_SANDBOX_SPARE", "0"),
            ("TOOLSHED_SANDBOX_TIMINGS", "1"),
        ],
    )
    .load()
    .unwrap();
    let keys: Vec<_> = loaded.unknown_keys.iter().map(|k| k.key.as_str()).collect();
    assert_eq!(keys, vec!["limits.default_timeout", "nope"]);
    assert!(loaded.unknown_keys[0].source.ends_with("toolshed.toml"));
    assert_eq!(loaded.unknown_keys[1].source, "environment (TOOLSHED_NOPE)");
}

#[test]
fn wrong_types_and_bad_limits_name_the_source() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("user.toml"),
        "[limits]\ndefault_timeout_ms = \"x\"\n",
    )
    .unwrap();
    let err = sources(dir.path(), &[]).load().unwrap_err().to_string();
    assert!(
        err.contains("user.toml") && err.contains("default_timeout_ms"),
        "{err}"
    );

    std::fs::write(
        dir.path().join("user.toml"),
        "[limits]\ndefault_timeout_ms = 0\n",
    )
    .unwrap();
    let err = sources(dir.path(), &[]).load().unwrap_err().to_string();
    assert!(err.contains("at least 1 ms"), "{err}");
}

#[test]
fn memory_limits_that_cannot_work_are_refused_at_load() {
    let dir = tempfile::tempdir().unwrap();
    for (toml, expected) in [
        ("[memory]\nmax_bytes = 0\n", "max_bytes"),
        ("[memory]\ntime_zone = \"Mars/Olympus\"\n", "IANA"),
    ] {
        std::fs::write(dir.path().join("user.toml"), toml).unwrap();
        let err = sources(dir.path(), &[]).load().unwrap_err().to_string();
        assert!(
            err.contains("[memory]") && err.contains(expected),
            "{toml}: {err}"
        );
    }
    std::fs::write(
        dir.path().join("user.toml"),
        "[memory]\ncompact_bytes = 200000\ntime_zone = \"Europe/Paris\"\n[limits]\nmax_output_bytes = 5000\n",
    )
    .unwrap();
    sources(dir.path(), &[]).load().unwrap();
}

/// A section a feature above the host owns, as the loader sees one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct Gadget {
    size: u64,
    program: Option<String>,
}

impl Default for Gadget {
    fn default() -> Self {
        Self {
            size: 3,
            program: None,
        }
    }
}

impl crate::section::Section for Gadget {
    const NAME: &'static str = "gadget";
    const WIDENING: &'static [(&'static str, &'static str)] =
        &[("gadget.program", "chooses the program run as the gadget")];
    const STARTER: &'static str = "[gadget]\n#size = 3\n";

    fn check(&self) -> Result<(), SectionError> {
        if self.size == 0 {
            return Err(SectionError::new(
                "gadget",
                "[gadget] size must be at least 1",
            ));
        }
        Ok(())
    }
}

#[test]
fn a_registered_section_is_read_checked_narrowed_and_shown_like_the_hosts_own() {
    let dir = tempfile::tempdir().unwrap();
    let with_gadget = |env: &[(&str, &str)]| sources(dir.path(), env).with_section::<Gadget>();
    // Unregistered, its table is a key nothing reads.
    std::fs::write(dir.path().join("user.toml"), "[gadget]\nsize = 5\n").unwrap();
    let loaded = sources(dir.path(), &[]).load().unwrap();
    let keys: Vec<_> = loaded.unknown_keys.iter().map(|k| k.key.as_str()).collect();
    assert_eq!(keys, ["gadget"]);
    assert_eq!(loaded.config.section::<Gadget>(), Gadget::default());
    // Registered: read, merged with the environment, defaults filled in, shown with where
    // each value came from; its unknown keys are named with the layer.
    std::fs::write(
        dir.path().join("user.toml"),
        "[gadget]\nsize = 5\ncolour = \"red\"\n",
    )
    .unwrap();
    let loaded = with_gadget(&[("TOOLSHED_GADGET__PROGRAM", "/bin/g")])
        .load()
        .unwrap();
    assert_eq!(
        loaded.config.section::<Gadget>(),
        Gadget {
            size: 5,
            program: Some("/bin/g".into())
        }
    );
    let keys: Vec<_> = loaded.unknown_keys.iter().map(|k| k.key.as_str()).collect();
    assert_eq!(keys, ["gadget.colour"]);
    assert!(loaded.unknown_keys[0].source.ends_with("user.toml"));
    let settings = loaded.settings();
    let size = settings.iter().find(|s| s.key == "gadget.size").unwrap();
    assert!(size.source.ends_with("user.toml"), "{size:?}");
    let program = settings.iter().find(|s| s.key == "gadget.program").unwrap();
    assert_eq!(program.source, "environment (TOOLSHED_GADGET__PROGRAM)");
    assert_eq!(loaded.widening.len(), 1, "{:?}", loaded.widening);
    assert_eq!(loaded.widening[0].key, "gadget.program");
    // A value of the wrong type names the layer and the key; a value the section refuses
    // names the section.
    std::fs::write(dir.path().join("user.toml"), "[gadget]\nsize = \"big\"\n").unwrap();
    let err = with_gadget(&[]).load().unwrap_err().to_string();
    assert!(err.contains("user.toml") && err.contains("size"), "{err}");
    std::fs::write(dir.path().join("user.toml"), "gadget = 4\n").unwrap();
    let err = with_gadget(&[]).load().unwrap_err().to_string();
    assert!(err.contains("must be a table"), "{err}");
    std::fs::write(dir.path().join("user.toml"), "[gadget]\nsize = 0\n").unwrap();
    let err = with_gadget(&[]).load().unwrap_err().to_string();
    assert!(err.contains("size must be at least 1"), "{err}");
    // Its widening setting in an untrusted workspace's file is not applied, and said so.
    std::fs::write(dir.path().join("user.toml"), "").unwrap();
    std::fs::write(
        dir.path().join("toolshed.toml"),
        "[gadget]\nsize = 7\nprogram = \"/tmp/evil\"\n",
    )
    .unwrap();
    let loaded = with_gadget(&[]).load().unwrap();
    let gadget = loaded.config.section::<Gadget>();
    assert_eq!((gadget.size, gadget.program), (7, None));
    let ignored: Vec<_> = loaded
        .workspace_ignored
        .iter()
        .map(|k| k.key.as_str())
        .collect();
    assert_eq!(ignored, ["gadget.program"]);
    // Its part of the starter follows the host's.
    let starter = with_gadget(&[]).starter();
    assert!(starter.starts_with(STARTER) && starter.ends_with("[gadget]\n#size = 3\n"));
}

#[test]
fn web_allow_entries_are_parsed_and_a_bad_one_is_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("user.toml"),
        "[web]\nallow = [\"docs.internal\", \"docs.internal:8443\", \"10.0.0.0/8\", \"192.168.1.7\", \"[fd00::1]\", \"fd00::/8\"]\n",
    )
    .unwrap();
    let loaded = sources(dir.path(), &[]).load().unwrap();
    assert!(loaded.unknown_keys.is_empty(), "{:?}", loaded.unknown_keys);
    let rules = loaded.config.web.allow_rules().unwrap();
    let shown: Vec<String> = rules.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "docs.internal",
            "docs.internal:8443",
            "10.0.0.0/8",
            "192.168.1.7",
            "[fd00::1]",
            "fd00::/8"
        ]
    );

    std::fs::write(
        dir.path().join("user.toml"),
        "[web]\nallow = [\"docs.internal\", \"10.0.0.1/8\"]\nproxy = \"x\"\n",
    )
    .unwrap();
    let err = sources(dir.path(), &[]).load().unwrap_err().to_string();
    assert!(err.contains("`10.0.0.1/8`"), "{err}");
    assert!(err.contains("10.0.0.0/8"), "{err}");
    assert!(err.contains("web"), "{err}");

    std::fs::write(dir.path().join("user.toml"), "[web]\nproxy = \"x\"\n").unwrap();
    let loaded = sources(dir.path(), &[]).load().unwrap();
    let keys: Vec<_> = loaded.unknown_keys.iter().map(|k| k.key.as_str()).collect();
    assert_eq!(keys, ["web.proxy"]);
}

#[test]
fn explicit_file_must_exist() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = sources(dir.path(), &[]);
    s.explicit_file = Some(dir.path().join("missing.toml"));
    let err = s.load().unwrap_err().to_string();
    assert!(err.contains("missing.toml"), "{err}");
}
