use serde_json::{Map, json};

use super::*;

#[test]
fn the_model_reads_what_the_person_did() {
    let mut content = Map::new();
    content.insert("answer".into(), json!("use main"));
    assert_eq!(
        said(&Answer::Accept {
            content: content.clone()
        }),
        "The person answered: use main"
    );
    content.insert("force".into(), json!(true));
    assert!(said(&Answer::Accept { content }).contains("\"force\":true"));
    assert!(said(&Answer::Decline).contains("declined"));
}
