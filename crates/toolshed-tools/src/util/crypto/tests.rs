use serde_json::{Value, json};
use toolshed_core::{ErrorKind, ToolError, ToolOutput};

use super::plugin;
use crate::util::test_support;

async fn ok(args: Value) -> ToolOutput {
    test_support::ok(&plugin(), args).await
}

async fn err(args: Value) -> ToolError {
    test_support::err(&plugin(), args).await
}

async fn hash(algorithm: &str, input: &str) -> String {
    ok(json!({"operation": "hash", "algorithm": algorithm, "input": input}))
        .await
        .text_joined()
}

#[tokio::test]
async fn hash_known_answers() {
    assert_eq!(hash("md5", "").await, "d41d8cd98f00b204e9800998ecf8427e");
    assert_eq!(hash("md5", "abc").await, "900150983cd24fb0d6963f7d28e17f72");
    assert_eq!(
        hash("sha1", "abc").await,
        "a9993e364706816aba3e25717850c26c9cd0d89d"
    );
    assert_eq!(
        hash("sha256", "abc").await,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(
        hash("sha256", "").await,
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(
        hash("sha512", "abc").await,
        "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a\
         2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
    );
}

#[tokio::test]
async fn hash_structured_has_hex_and_base64() {
    let out = ok(json!({"operation": "hash", "algorithm": "sha256", "input": "abc"})).await;
    assert_eq!(
        out.structured,
        Some(json!({
            "operation": "hash",
            "algorithm": "sha256",
            "hex": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            "base64": "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=",
            "input_bytes": 3,
        }))
    );
}

#[tokio::test]
async fn hash_binary_input_via_hex_and_base64() {
    // "abc" as hex and as base64 must hash like the text "abc".
    let expected = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    for (input, encoding) in [("616263", "hex"), ("61 62 63", "hex"), ("YWJj", "base64")] {
        let out = ok(json!({
            "operation": "hash", "algorithm": "sha256",
            "input": input, "input_encoding": encoding
        }))
        .await;
        assert_eq!(out.text_joined(), expected, "{input} as {encoding}");
    }
    // Bytes that are not UTF-8: md5 of the single byte 0xff.
    let out = ok(json!({
        "operation": "hash", "algorithm": "md5", "input": "/w==", "input_encoding": "base64"
    }))
    .await;
    assert_eq!(out.text_joined(), "00594fd4f42ba43fc1ca0427a0576295");
}

#[tokio::test]
async fn hash_rejects_bad_hex_input_naming_the_character() {
    let e = err(json!({
        "operation": "hash", "algorithm": "sha256", "input": "61zz", "input_encoding": "hex"
    }))
    .await;
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    let msg = e.to_string();
    assert!(msg.contains("at /input"), "{msg}");
    assert!(msg.contains("`z` at position 3"), "{msg}");
}

#[tokio::test]
async fn hash_needs_algorithm() {
    let e = err(json!({"operation": "hash", "input": "abc"})).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    assert!(e.to_string().contains("`algorithm`"), "{e}");
}

#[tokio::test]
async fn unknown_algorithm_is_refused() {
    let e = err(json!({"operation": "hash", "algorithm": "sha3", "input": "abc"})).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    assert!(e.to_string().contains("sha3"), "{e}");
}

#[tokio::test]
async fn input_over_one_mib_is_refused_with_size_and_limit() {
    let big = "a".repeat(1024 * 1024 + 1);
    let e = err(json!({"operation": "hash", "algorithm": "md5", "input": big})).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    let msg = e.to_string();
    assert!(msg.contains("1048577 bytes"), "{msg}");
    assert!(msg.contains("1048576"), "{msg}");
    // Exactly 1 MiB is fine.
    let max = "a".repeat(1024 * 1024);
    ok(json!({"operation": "hash", "algorithm": "md5", "input": max})).await;
}

#[tokio::test]
async fn field_not_used_by_the_operation_is_refused() {
    let e = err(json!({"operation": "encode", "encoding": "hex", "input": "a", "key": "k"})).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    let msg = e.to_string();
    assert!(msg.contains("at /key"), "{msg}");
    assert!(
        msg.contains("does not apply to operation `encode`"),
        "{msg}"
    );
}

#[tokio::test]
async fn hmac_rfc4231_vectors() {
    // Test case 1: key = 20 × 0x0b, data = "Hi There".
    let key = "0b".repeat(20);
    let out = ok(json!({
        "operation": "hmac", "key": key, "key_encoding": "hex", "input": "Hi There"
    }))
    .await;
    assert_eq!(
        out.text_joined(),
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
    );
    let structured = out.structured.unwrap();
    assert_eq!(structured["algorithm"], "hmac-sha256");
    assert_eq!(
        structured["base64"],
        "sDRMYdjbOFNcqK/OrwvxK4gdwgDJgz2nJuk3bC4yz/c="
    );

    // Test case 2: key = "Jefe".
    let out = ok(json!({
        "operation": "hmac", "key": "Jefe", "input": "what do ya want for nothing?"
    }))
    .await;
    assert_eq!(
        out.text_joined(),
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
    let out = ok(json!({
        "operation": "hmac", "algorithm": "sha512", "key": "Jefe",
        "input": "what do ya want for nothing?"
    }))
    .await;
    assert_eq!(
        out.text_joined(),
        "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554\
         9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"
    );

    // Test case 6: a key longer than the block size (131 × 0xaa), given as base64.
    let key = super::codec::encode_base64(&[0xaa; 131]);
    let out = ok(json!({
        "operation": "hmac", "key": key, "key_encoding": "base64",
        "input": "Test Using Larger Than Block-Size Key - Hash Key First"
    }))
    .await;
    assert_eq!(
        out.text_joined(),
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
    );
}

#[tokio::test]
async fn hmac_needs_key_and_checks_its_encoding() {
    let e = err(json!({"operation": "hmac", "input": "x"})).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    assert!(e.to_string().contains("needs `key`"), "{e}");

    let e =
        err(json!({"operation": "hmac", "input": "x", "key": "abc", "key_encoding": "hex"})).await;
    let msg = e.to_string();
    assert!(msg.contains("at /key"), "{msg}");
    assert!(msg.contains("3 hex digits"), "{msg}");
}

async fn encode(encoding: &str, input: &str) -> String {
    ok(json!({"operation": "encode", "encoding": encoding, "input": input}))
        .await
        .text_joined()
}

async fn decode(encoding: &str, input: &str) -> ToolOutput {
    ok(json!({"operation": "decode", "encoding": encoding, "input": input})).await
}

#[tokio::test]
async fn encode_each_encoding() {
    assert_eq!(encode("base64", "hello?").await, "aGVsbG8/");
    assert_eq!(encode("base64", "hi").await, "aGk=");
    assert_eq!(encode("base64url", "hello?").await, "aGVsbG8_");
    assert_eq!(encode("base64url", "hi").await, "aGk");
    assert_eq!(encode("hex", "Hi!").await, "486921");
    assert_eq!(
        encode("url", "a b&c=d/é~x_y.z-").await,
        "a%20b%26c%3Dd%2F%C3%A9~x_y.z-"
    );
    assert_eq!(encode("base64", "").await, "");
    // Conversion: hex bytes straight to base64.
    let out = ok(json!({
        "operation": "encode", "encoding": "base64", "input": "ff00", "input_encoding": "hex"
    }))
    .await;
    assert_eq!(out.text_joined(), "/wA=");
}

#[tokio::test]
async fn decode_each_encoding() {
    assert_eq!(decode("base64", "aGk=").await.text_joined(), "hi");
    assert_eq!(decode("base64", "aGk").await.text_joined(), "hi");
    assert_eq!(decode("base64", "aGVs\nbG8/").await.text_joined(), "hello?");
    assert_eq!(
        decode("base64url", "aGVsbG8_").await.text_joined(),
        "hello?"
    );
    assert_eq!(decode("base64url", "aGk=").await.text_joined(), "hi");
    assert_eq!(decode("hex", "486921").await.text_joined(), "Hi!");
    assert_eq!(decode("hex", "48 69 2A").await.text_joined(), "Hi*");
    assert_eq!(
        decode("url", "a%20b+c%2Fd%C3%A9").await.text_joined(),
        "a b+c/dé"
    );
    let out = decode("base64", "aGk=").await;
    assert_eq!(
        out.structured,
        Some(json!({
            "operation": "decode", "encoding": "base64", "utf8": true, "text": "hi", "bytes": 2
        }))
    );
}

#[tokio::test]
async fn decode_non_utf8_returns_hex() {
    let out = decode("base64", "/wCA").await;
    let text = out.text_joined();
    assert!(text.contains("not valid UTF-8"), "{text}");
    assert!(text.ends_with("ff0080"), "{text}");
    assert_eq!(
        out.structured,
        Some(json!({
            "operation": "decode", "encoding": "base64", "utf8": false, "hex": "ff0080", "bytes": 3
        }))
    );
}

#[tokio::test]
async fn decode_errors_name_encoding_and_position() {
    let cases = [
        ("base64", "aGk*", "not valid base64", "`*` at position 4"),
        (
            "base64",
            "aG-k",
            "not valid base64",
            "use encoding `base64url`",
        ),
        (
            "base64url",
            "aG+k",
            "not valid base64url",
            "use encoding `base64`",
        ),
        ("base64", "aGk=a", "not valid base64", "position 4"),
        ("base64", "a", "not valid base64", "1 base64 symbols"),
        ("base64", "aGl=", "not valid base64", "`l` at position 3"),
        ("hex", "4869g", "not valid hex", "`g` at position 5"),
        ("hex", "0x41", "not valid hex", "drop the `0x` prefix"),
        ("hex", "486", "not valid hex", "3 hex digits"),
        ("url", "100%", "not valid url", "`%` at position 4"),
        ("url", "a%zzb", "not valid url", "found `%zz`"),
    ];
    for (encoding, input, first, second) in cases {
        let e = err(json!({"operation": "decode", "encoding": encoding, "input": input})).await;
        assert_eq!(e.kind(), ErrorKind::InvalidArguments, "{input}");
        let msg = e.to_string();
        assert!(msg.contains("at /input"), "{input}: {msg}");
        assert!(msg.contains(first), "{input}: {msg}");
        assert!(msg.contains(second), "{input}: {msg}");
    }
}

#[tokio::test]
async fn decode_positions_count_characters_not_bytes() {
    let e = err(json!({"operation": "decode", "encoding": "hex", "input": "éé"})).await;
    assert!(e.to_string().contains("`é` at position 1"), "{e}");
    let e = err(json!({"operation": "decode", "encoding": "url", "input": "éé%4"})).await;
    assert!(e.to_string().contains("`%` at position 3"), "{e}");
}

#[tokio::test]
async fn round_trips() {
    for encoding in ["base64", "base64url", "hex", "url"] {
        for input in ["", "a", "ab", "abc", "ünïcödé ✓ /+?&=%", "line\nbreak"] {
            let encoded = encode(encoding, input).await;
            let decoded = decode(encoding, &encoded).await.text_joined();
            assert_eq!(decoded, input, "{encoding}: {input:?} → {encoded:?}");
        }
    }
}

#[tokio::test]
async fn schema_compiles_and_accepts_examples() {
    test_support::check_schema(
        &plugin(),
        &[
            json!({"operation": "hash", "algorithm": "sha256", "input": "abc"}),
            json!({"operation": "hmac", "key": "k", "key_encoding": "hex", "input": "x"}),
        ],
        &[
            json!({"operation": "hash", "algorithm": "sha3", "input": "abc"}),
            json!({"operation": "hash", "algorithm": "md5"}),
            json!({"operation": "encode", "input": "a", "extra": 1}),
        ],
    );
}
