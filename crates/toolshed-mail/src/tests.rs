//! What `mail_send` builds and refuses before any server is reached; the exchange with a
//! real SMTP server (STARTTLS, AUTH) is tested in tests/mcp/test_mail.py.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Map, Value, json};
use toolshed_ops::{Ops, Parents, Services};

use super::*;

fn config(extra: Value) -> Map<String, Value> {
    let mut base = json!({"host": "smtp.example.com", "from": "Bot <bot@example.com>", "security": "starttls"});
    for (k, v) in extra.as_object().unwrap() {
        base[k] = v.clone();
    }
    base.as_object().unwrap().clone()
}

#[tokio::test]
async fn the_message_carries_both_bodies_and_the_attachments() {
    let services = Services::new(Ops::memory());
    services
        .ops
        .files
        .write("out/report.csv", b"a,b\n1,2\n", Parents::Create)
        .unwrap();
    let tool = MailTool {
        spec: ToolSpec::new("mail_send", "x"),
        files: services.ops.files.clone(),
    };
    let relay = relay(&config(json!({}))).unwrap();
    let args: SendArgs = serde_json::from_value(json!({
        "to": ["Ada <ada@example.com>"], "cc": ["b@example.com"], "bcc": ["c@example.com"],
        "subject": "Weekly report", "text": "See attached.", "html": "<p>See attached.</p>",
        "attachments": ["out/report.csv"]
    }))
    .unwrap();
    let message = tool.message(&relay, &args).await.unwrap();
    let raw = String::from_utf8(message.formatted()).unwrap();
    assert!(raw.contains("Subject: Weekly report"), "{raw}");
    assert!(
        raw.contains("To: Ada <ada@example.com>") && raw.contains("Cc: b@example.com"),
        "{raw}"
    );
    assert!(
        !raw.contains("c@example.com"),
        "bcc is in the envelope, not the headers"
    );
    assert!(
        raw.contains("multipart/alternative") && raw.contains("<p>See attached.</p>"),
        "{raw}"
    );
    assert!(
        raw.contains("filename=\"report.csv\"") && raw.contains("text/csv"),
        "{raw}"
    );
    assert_eq!(message.envelope().to().len(), 3);
}

#[tokio::test]
async fn bad_addresses_missing_config_and_plain_passwords_are_refused() {
    let services = Services::new(Ops::memory());
    let tool = MailTool {
        spec: ToolSpec::new("mail_send", "x"),
        files: services.ops.files.clone(),
    };
    let relay_ok = relay(&config(json!({}))).unwrap();
    let args: SendArgs =
        serde_json::from_value(json!({"to": ["not an address"], "subject": "x", "text": "y"}))
            .unwrap();
    let e = tool.message(&relay_ok, &args).await.unwrap_err();
    assert!(
        e.to_string()
            .contains("`not an address` is not an email address"),
        "{e}"
    );
    let args: SendArgs =
        serde_json::from_value(json!({"to": ["a@example.com"], "subject": "x", "text": "y", "attachments": ["missing.pdf"]})).unwrap();
    assert!(tool.message(&relay_ok, &args).await.is_err());
    let args: SendArgs =
        serde_json::from_value(json!({"to": ["a@example.com"], "subject": "x"})).unwrap();
    assert!(
        tool.message(&relay_ok, &args)
            .await
            .unwrap_err()
            .to_string()
            .contains("no body")
    );

    let e = relay(&Map::new()).err().unwrap();
    assert!(e.to_string().contains("needs `host`"), "{e}");
    let e = relay(&config(
        json!({"security": "none", "user": "u", "password": "p4ss"}),
    ))
    .err()
    .unwrap();
    assert!(
        e.to_string().contains("in the clear") && !e.to_string().contains("p4ss"),
        "{e}"
    );
    let e = relay(&config(json!({"user": "u"}))).err().unwrap();
    assert!(e.to_string().contains("needs `password`"), "{e}");
}
