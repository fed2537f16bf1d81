//! Workspaces pinned per token (`workspace:` scope) and per profile (`workspace = …`): a
//! call narrowed to another workspace is refused by the pipeline itself, whatever door
//! carries it; a workspace's own toolshed.toml cannot pin a profile; `[review]` cannot
//! pin at all, and a profile's pin must name an absolute directory or a remote URL.

use crate::support;

use serde_json::json;
use support::{Behaviour, config_from, open, plugin, strict_spec, tool};
use toolshed_core::{ErrorKind, OwnerId};
use toolshed_host::CallRequest;
use toolshed_host::config::ReviewRules;

#[tokio::test]
async fn a_call_narrowed_to_another_workspace_is_refused_naming_both() {
    let echo = plugin(
        "t.echo",
        vec![tool(strict_spec("echo_strict"), Behaviour::Echo)],
    );
    let t = open(vec![echo], "").await;
    let served = t.host.workspace_name().to_string();
    assert_eq!(
        served,
        t.workspace.path().canonicalize().unwrap().to_str().unwrap()
    );
    let call = |place: &str| {
        let made = t
            .host
            .tokens()
            .create(
                "pinned",
                &["tools:call".into(), format!("workspace:{place}")],
                None,
            )
            .unwrap();
        let mut request = CallRequest::new(
            "echo_strict",
            json!({"n": 1, "s": "x"}),
            OwnerId::new("pinned"),
            "test",
        );
        request.caller_tools = made.record.caller().tools;
        request
    };
    let fine = t.host.call(call(&served)).await;
    assert!(fine.result.is_ok(), "{:?}", fine.result);
    let refused = t
        .host
        .call(call("ssh://ci@build.example/srv/app"))
        .await
        .result
        .unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Denied);
    let said = refused.to_string();
    assert!(
        said.contains("ssh://ci@build.example/srv/app") && said.contains(&served),
        "{said}"
    );
}

#[test]
fn a_workspaces_own_config_cannot_pin_a_profile() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = config_from(
        dir.path(),
        "[profiles.build]\nallow = [\"read_only\"]\nworkspace = \"ssh://ci@build.example/srv\"\n",
    );
    assert_eq!(loaded.config.profiles["build"].workspace, None);
    assert_eq!(loaded.config.profiles["build"].allow, ["read_only"]);
    assert!(
        loaded
            .workspace_ignored
            .iter()
            .any(|ignored| ignored.key == "profiles.build.workspace"),
        "{:?}",
        loaded.workspace_ignored
    );
}

#[test]
fn review_cannot_pin_and_a_profiles_pin_must_name_a_place() {
    use std::collections::BTreeMap;
    use toolshed_host::Review;
    let pinned = |place: &str| ReviewRules {
        workspace: Some(place.into()),
        ..ReviewRules::default()
    };
    let refused = Review::compile(&pinned("/srv"), &BTreeMap::new(), &[]).unwrap_err();
    assert!(
        refused.to_string().contains("review.workspace"),
        "{refused}"
    );
    for bad in ["relative/dir", "ssh://", "/srv/a,b"] {
        let profiles = BTreeMap::from([("build".to_string(), pinned(bad))]);
        let refused = Review::compile(&ReviewRules::default(), &profiles, &[]).unwrap_err();
        assert!(
            refused.to_string().contains("profiles.build.workspace"),
            "{bad}: {refused}"
        );
    }
    for good in [
        "/srv/app",
        "ssh://ci@build.example:2222/srv/app",
        "docker://box/app",
    ] {
        let profiles = BTreeMap::from([("build".to_string(), pinned(good))]);
        let review = Review::compile(&ReviewRules::default(), &profiles, &[]).unwrap();
        // Where its doors open, not a rule its calls meet.
        assert_eq!(review.profile("build").unwrap().workspace, None, "{good}");
    }
}
