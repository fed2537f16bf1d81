//! OAuth 2.1 resource server: bearer tokens that are JWTs from a configured issuer.
//!
//! ```toml
//! [server.oauth]
//! issuer = "https://login.example.com/"           # the `iss` every token must carry
//! jwks_url = "https://login.example.com/jwks.json" # its signing keys
//! audience = "toolshed"                           # the `aud` every token must carry
//! owner_claim = "sub"                             # the claim that names the owner
//! scopes_claim = "scope"                          # space-separated toolshed scopes
//! ```
//!
//! A token is accepted when its signature verifies with a key of the issuer's JWKS (ES256
//! or RS256; the `kid` picks the key), its `iss` and `aud` match, and it is within `nbf` and
//! `exp` (a minute of clock skew allowed). Its owner is the owner claim; its scopes are the
//! scope claim's words that toolshed knows (`tools:call`, `tool:group:web`, …), or the
//! default pair when the claim is absent. Verification uses `ring`, which toolshed already
//! has; the JWKS is fetched by the server ([`Jwks`]).

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::identity::{Caller, DEFAULT_SCOPES, SCOPES, TOOL_SCOPE};

/// Seconds of clock difference tolerated on `exp` and `nbf`.
const LEEWAY_SECS: i64 = 60;

/// The largest token accepted.
const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// `[server.oauth]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthConfig {
    /// The issuer (`iss`).
    pub issuer: String,
    /// Where its JSON Web Key Set is.
    pub jwks_url: String,
    /// The audience (`aud`) tokens must be for.
    pub audience: String,
    /// The claim naming the owner.
    #[serde(default = "default_owner_claim")]
    pub owner_claim: String,
    /// The claim holding space-separated scopes.
    #[serde(default = "default_scopes_claim")]
    pub scopes_claim: String,
}

impl OAuthConfig {
    /// `Ok` when the settings can work: an issuer, an audience, an http(s) `jwks_url`.
    pub fn check(&self) -> Result<(), OAuthConfigError> {
        if self.issuer.trim().is_empty() || self.audience.trim().is_empty() {
            return Err(OAuthConfigError::Incomplete);
        }
        crate::kit::http_host(&self.jwks_url)?;
        Ok(())
    }
}

/// Why `[server.oauth]` cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthConfigError {
    /// No issuer or no audience.
    #[error("give the issuer and the audience tokens must carry")]
    Incomplete,
    /// `jwks_url` is not an http(s) URL with a host.
    #[error(transparent)]
    JwksUrl(#[from] crate::kit::NotAnHttpUrl),
}

/// Why a JWKS document cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum JwksError {
    /// Not JSON.
    #[error("the JWKS is not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// A key's number is not base64url.
    #[error("bad base64url: {0}")]
    BadBase64(#[source] base64::DecodeError),
    /// No key of a kind toolshed verifies.
    #[error("the JWKS holds no ES256 or RS256 key")]
    NoKey,
}

/// The `host:port` of an `http` or `https` URL (see [`crate::kit::http_host`]).
pub use crate::kit::http_host;

fn default_owner_claim() -> String {
    "sub".into()
}

fn default_scopes_claim() -> String {
    "scope".into()
}

/// A verification key.
#[derive(Debug, Clone)]
enum Key {
    /// P-256, as the uncompressed point.
    Es256(Vec<u8>),
    /// RSA modulus and exponent.
    Rs256 { n: Vec<u8>, e: Vec<u8> },
}

/// The issuer's signing keys, by `kid`.
#[derive(Debug, Clone, Default)]
pub struct Jwks {
    keys: HashMap<String, Key>,
}

fn b64(text: &str) -> Result<Vec<u8>, JwksError> {
    URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .map_err(JwksError::BadBase64)
}

impl Jwks {
    /// Parses a JWKS document; keys of other types are skipped.
    pub fn parse(document: &[u8]) -> Result<Self, JwksError> {
        let value: Value = serde_json::from_slice(document).map_err(JwksError::NotJson)?;
        let mut keys = HashMap::new();
        for jwk in value["keys"].as_array().into_iter().flatten() {
            let text = |k: &str| jwk[k].as_str().unwrap_or_default();
            let kid = text("kid").to_string();
            let key = match (text("kty"), text("crv")) {
                ("EC", "P-256") => {
                    let (x, y) = (b64(text("x"))?, b64(text("y"))?);
                    if x.len() != 32 || y.len() != 32 {
                        continue;
                    }
                    let mut point = vec![4u8];
                    point.extend(x);
                    point.extend(y);
                    Key::Es256(point)
                }
                ("RSA", _) => Key::Rs256 {
                    n: b64(text("n"))?,
                    e: b64(text("e"))?,
                },
                _ => continue,
            };
            keys.insert(kid, key);
        }
        if keys.is_empty() {
            return Err(JwksError::NoKey);
        }
        Ok(Self { keys })
    }

    /// How many keys it holds.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether it holds no key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// Why a JWT was refused (for logs; the client only hears `invalid_token`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not a JWT, or its parts do not decode.
    Malformed(String),
    /// Its `kid` is not in the JWKS (the keys may have rotated).
    UnknownKey,
    /// The signature does not verify.
    BadSignature,
    /// A claim is wrong: issuer, audience, time, owner.
    Claims(String),
}

/// Whether `token` looks like a JWT (three dot-separated parts).
pub fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3 && token.len() <= MAX_TOKEN_BYTES
}

/// Verifies `token` against `jwks` and `config` at `now` (Unix seconds); the caller it
/// authenticates.
pub fn verify(token: &str, jwks: &Jwks, config: &OAuthConfig, now: i64) -> Result<Caller, Refusal> {
    let malformed = |what: &str| Refusal::Malformed(what.to_string());
    if token.len() > MAX_TOKEN_BYTES {
        return Err(malformed("too long"));
    }
    let mut parts = token.split('.');
    let (Some(head), Some(body), Some(sig), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(malformed("not three parts"));
    };
    let header: Value =
        serde_json::from_slice(&b64(head).map_err(|e| Refusal::Malformed(e.to_string()))?)
            .map_err(|_| malformed("header is not JSON"))?;
    let claims: Value =
        serde_json::from_slice(&b64(body).map_err(|e| Refusal::Malformed(e.to_string()))?)
            .map_err(|_| malformed("claims are not JSON"))?;
    let signature = b64(sig).map_err(|e| Refusal::Malformed(e.to_string()))?;
    let kid = header["kid"].as_str().unwrap_or_default();
    let key = jwks.keys.get(kid).ok_or(Refusal::UnknownKey)?;
    let signed = format!("{head}.{body}");
    let verified = match (header["alg"].as_str(), key) {
        (Some("ES256"), Key::Es256(point)) => {
            UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
                .verify(signed.as_bytes(), &signature)
                .is_ok()
        }
        (Some("RS256"), Key::Rs256 { n, e }) => RsaPublicKeyComponents { n, e }
            .verify(
                &signature::RSA_PKCS1_2048_8192_SHA256,
                signed.as_bytes(),
                &signature,
            )
            .is_ok(),
        _ => return Err(malformed("alg is not the key's ES256 or RS256")),
    };
    if !verified {
        return Err(Refusal::BadSignature);
    }
    let claim = Refusal::Claims;
    if claims["iss"].as_str() != Some(config.issuer.as_str()) {
        return Err(claim(format!("iss is not {}", config.issuer)));
    }
    let audience_ok = match &claims["aud"] {
        Value::String(a) => *a == config.audience,
        Value::Array(list) => list.iter().any(|a| a.as_str() == Some(&config.audience)),
        _ => false,
    };
    if !audience_ok {
        return Err(claim(format!("aud does not name {}", config.audience)));
    }
    match claims["exp"].as_i64() {
        Some(exp) if exp + LEEWAY_SECS > now => {}
        Some(_) => return Err(claim("expired".into())),
        None => return Err(claim("no exp".into())),
    }
    if claims["nbf"]
        .as_i64()
        .is_some_and(|nbf| nbf - LEEWAY_SECS > now)
    {
        return Err(claim("not valid yet".into()));
    }
    let owner = claims[config.owner_claim.as_str()]
        .as_str()
        .ok_or_else(|| claim(format!("no {} claim", config.owner_claim)))?;
    crate::identity::check_agent_owner(owner).map_err(|e| claim(e.to_string()))?;
    let scopes: Vec<String> = match claims[config.scopes_claim.as_str()].as_str() {
        None => DEFAULT_SCOPES.iter().map(|s| s.to_string()).collect(),
        Some(words) => words
            .split_whitespace()
            .filter(|w| SCOPES.contains(w) || w.starts_with(TOOL_SCOPE))
            .map(str::to_string)
            .collect(),
    };
    let id = claims["jti"]
        .as_str()
        .map_or_else(|| format!("jwt:{owner}"), |jti| format!("jwt:{jti}"));
    Ok(crate::identity::TokenRecord {
        id,
        owner: owner.to_string(),
        scopes,
        created_ms: 0,
        expires_ms: None,
        last_used_ms: None,
        revoked_ms: None,
    }
    .caller())
}

#[cfg(test)]
mod tests {
    // Test keys, made with ring as the verifier reads them.
    #![allow(clippy::unwrap_used, clippy::disallowed_methods)]
    use ring::rand::SystemRandom;
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
    use serde_json::json;

    use super::*;

    fn config() -> OAuthConfig {
        OAuthConfig {
            issuer: "http://127.0.0.1:1/".into(),
            jwks_url: "http://127.0.0.1:1/jwks.json".into(),
            audience: "toolshed".into(),
            owner_claim: "sub".into(),
            scopes_claim: "scope".into(),
        }
    }

    fn signer() -> (EcdsaKeyPair, Jwks) {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let point = pair.public_key().as_ref();
        let jwks = json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..65])}]});
        (pair, Jwks::parse(jwks.to_string().as_bytes()).unwrap())
    }

    fn sign(pair: &EcdsaKeyPair, kid: &str, claims: &Value) -> String {
        let head =
            URL_SAFE_NO_PAD.encode(json!({"alg": "ES256", "kid": kid, "typ": "JWT"}).to_string());
        let body = URL_SAFE_NO_PAD.encode(claims.to_string());
        let signed = format!("{head}.{body}");
        let sig = pair.sign(&SystemRandom::new(), signed.as_bytes()).unwrap();
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
    }

    #[test]
    fn a_signed_token_from_the_issuer_authenticates_its_owner_and_anything_else_is_refused() {
        let (pair, jwks) = signer();
        let config = config();
        let now = 1_800_000_000;
        let good = json!({"iss": config.issuer, "aud": "toolshed", "sub": "alice",
                          "exp": now + 600, "scope": "tools:call openid tool:calculator"});
        let caller = verify(&sign(&pair, "k1", &good), &jwks, &config, now).unwrap();
        assert_eq!(caller.owner.0, "alice");
        assert!(caller.is_agent() && caller.allows("tools:call") && !caller.allows("tools:list"));
        assert!(caller.tools.is_some());
        let mut wrong = good.clone();
        wrong["aud"] = json!("other");
        assert!(matches!(
            verify(&sign(&pair, "k1", &wrong), &jwks, &config, now),
            Err(Refusal::Claims(_))
        ));
        let mut expired = good.clone();
        expired["exp"] = json!(now - 3600);
        assert!(verify(&sign(&pair, "k1", &expired), &jwks, &config, now).is_err());
        let mut issuer = good.clone();
        issuer["iss"] = json!("http://evil/");
        assert!(verify(&sign(&pair, "k1", &issuer), &jwks, &config, now).is_err());
        assert_eq!(
            verify(&sign(&pair, "k2", &good), &jwks, &config, now).unwrap_err(),
            Refusal::UnknownKey
        );
        // Signed by another key under the same kid.
        let (other, _) = signer();
        assert_eq!(
            verify(&sign(&other, "k1", &good), &jwks, &config, now).unwrap_err(),
            Refusal::BadSignature
        );
        // A tampered body.
        let token = sign(&pair, "k1", &good);
        let mut parts: Vec<&str> = token.split('.').collect();
        let forged = URL_SAFE_NO_PAD.encode(
            json!({"iss": config.issuer, "aud": "toolshed", "sub": "root", "exp": now + 600})
                .to_string(),
        );
        parts[1] = &forged;
        assert_eq!(
            verify(&parts.join("."), &jwks, &config, now).unwrap_err(),
            Refusal::BadSignature
        );
    }

    #[test]
    fn settings_that_cannot_work_are_named() {
        assert!(config().check().is_ok());
        let mut bad = config();
        bad.jwks_url = "ftp://keys.example/jwks".into();
        assert!(
            bad.check()
                .unwrap_err()
                .to_string()
                .contains("ftp://keys.example/jwks")
        );
        bad.jwks_url = "not a url".into();
        assert!(bad.check().unwrap_err().to_string().contains("not a url"));
        let mut empty = config();
        empty.audience = " ".into();
        assert!(empty.check().is_err());
        assert_eq!(
            crate::kit::http_host("https://login.example/jwks.json").unwrap(),
            "login.example:443"
        );
    }
}
