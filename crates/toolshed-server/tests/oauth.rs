//! Bearer JWTs from an OAuth issuer, checked against its keys fetched from a loopback
//! issuer, through the real HTTP door.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

use crate::support::{self, request};

fn key() -> EcdsaKeyPair {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap()
}

fn sign(pair: &EcdsaKeyPair, claims: &Value) -> String {
    let head =
        URL_SAFE_NO_PAD.encode(json!({"alg": "ES256", "kid": "main", "typ": "JWT"}).to_string());
    let body = URL_SAFE_NO_PAD.encode(claims.to_string());
    let signed = format!("{head}.{body}");
    let sig = pair.sign(&SystemRandom::new(), signed.as_bytes()).unwrap();
    format!("{signed}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
}

/// A loopback issuer serving `jwks` at `/jwks.json`; its base URL.
async fn issuer(jwks: Value) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = axum::Router::new().route(
        "/jwks.json",
        axum::routing::get(move || {
            let jwks = jwks.clone();
            async move { axum::Json(jwks) }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}/")
}

#[tokio::test]
async fn a_jwt_from_the_issuer_runs_as_its_subject_and_a_bad_one_is_refused() {
    let pair = key();
    let point = pair.public_key().as_ref();
    let base = issuer(
        json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": "main", "use": "sig",
        "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..65])}]}),
    )
    .await;
    let server = support::start_with(&format!(
        "[server.oauth]\nissuer = \"{base}\"\njwks_url = \"{base}jwks.json\"\naudience = \"toolshed\"\n"
    ))
    .await;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let claims = json!({"iss": base, "aud": "toolshed", "sub": "alice", "exp": now + 600,
                        "scope": "tools:call tools:list"});
    let token = sign(&pair, &claims);
    let bearer = |t: &str| ("Authorization", format!("Bearer {t}"));
    let call = |headers: Vec<(&'static str, String)>| {
        let address = server.address;
        async move {
            request(
                address,
                "POST",
                "/api/v1/tools/command_run_list/execute",
                &headers,
                Some("{\"arguments\": {}}"),
            )
            .await
        }
    };
    // The keys arrive in the background just after the server starts.
    let deadline = Instant::now() + Duration::from_secs(10);
    let reply = loop {
        let reply = call(vec![bearer(&token)]).await;
        if reply.status == 200 || Instant::now() > deadline {
            break reply;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(reply.status, 200, "{}", reply.body);
    // Its subject is its owner: naming another is refused.
    let reply = call(vec![bearer(&token), ("X-Toolshed-Owner", "bob".into())]).await;
    assert_eq!(reply.status, 403, "{}", reply.body);
    let reply = call(vec![
        bearer(&token),
        ("X-Toolshed-Owner", "alice/task-1".into()),
    ])
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    // Expired, for someone else, from another issuer, or signed by another key: 401.
    let mut bad = Vec::new();
    for (key, value) in [
        ("exp", json!(now - 3600)),
        ("aud", json!("another-service")),
        ("iss", json!("http://127.0.0.1:1/")),
    ] {
        let mut claims = claims.clone();
        claims[key] = value;
        bad.push(sign(&pair, &claims));
    }
    bad.push(sign(&key(), &claims));
    for token in bad {
        let reply = call(vec![bearer(&token)]).await;
        assert_eq!(reply.status, 401, "{}", reply.body);
    }
    // Scopes come from the token: without tools:call, no calls.
    let listing_only = sign(
        &pair,
        &json!({"iss": base, "aud": "toolshed", "sub": "carol",
                                            "exp": now + 600, "scope": "tools:list"}),
    );
    let reply = call(vec![bearer(&listing_only)]).await;
    assert_eq!(reply.status, 403, "{}", reply.body);
}
