//! The host helpers behind the globals of `globals.js`: the plugin's log for `console`,
//! waits for timers and requests for `fetch` (both host operations of the running call,
//! so they end with it), random bytes for `crypto`, and WHATWG URL parsing for `URL`.

use std::cell::RefCell;
use std::io::Read;
use std::rc::Rc;
use std::time::Duration;

use rquickjs::function::Opt;
use rquickjs::{Ctx, Exception, Function, Object, Promise, Value};

use super::http::http_request;
use super::objects::logger_object;
use super::{CallScope, HostValue, Shared, rejected};

/// The call running now, if one is: set by the engine around each `run`.
pub(crate) type Current = Rc<RefCell<Option<Rc<CallScope>>>>;

/// The most random bytes one `getRandomValues` fills (the Web Crypto limit).
const MAX_RANDOM_BYTES: usize = 65536;

/// Defines the globals, with `install` (the function `globals.js` evaluates to).
pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    current: &Current,
    install: Function<'js>,
) -> rquickjs::Result<()> {
    let host = Object::new(ctx.clone())?;
    host.set("logger", logger_object(ctx, &shared.log)?)?;

    let running = current.clone();
    let sleep = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, ms: f64| -> rquickjs::Result<Promise<'js>> {
            let scope = running.borrow().clone().ok_or_else(|| {
                Exception::throw_message(
                    &ctx,
                    "timers run only while a call runs (inside run()); they end with it",
                )
            })?;
            let ms = if ms.is_finite() && ms > 0.0 { ms } else { 0.0 };
            let wait = Duration::from_millis(ms.min(u32::MAX as f64) as u64);
            scope.start(&ctx, async move {
                tokio::time::sleep(wait).await;
                Ok::<_, String>(HostValue::Unit)
            })
        },
    )?;
    host.set("sleep", sleep)?;

    let running = current.clone();
    let plugin_id = shared.plugin_id.clone();
    let request = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, opts: Value<'js>| -> rquickjs::Result<Promise<'js>> {
            let Some(scope) = running.borrow().clone() else {
                return rejected(&ctx, "fetch works only while a call runs (inside run())");
            };
            if !scope.reach.has_http() {
                return rejected(
                    &ctx,
                    &format!(
                        "fetch needs the `network` capability in the manifest and a grant of the host (toolshed plugins grant {plugin_id} http:HOST)"
                    ),
                );
            }
            http_request(&ctx, &scope, opts)
        },
    )?;
    host.set("request", request)?;

    let random = Function::new(
        ctx.clone(),
        |ctx: Ctx<'js>, n: usize| -> rquickjs::Result<Vec<u8>> {
            if n > MAX_RANDOM_BYTES {
                return Err(Exception::throw_range(
                    &ctx,
                    &format!("at most {MAX_RANDOM_BYTES} random bytes at once"),
                ));
            }
            let mut bytes = vec![0u8; n];
            std::fs::File::open("/dev/urandom")
                .and_then(|mut f| f.read_exact(&mut bytes))
                .map_err(|e| Exception::throw_message(&ctx, &format!("no random bytes: {e}")))?;
            Ok(bytes)
        },
    )?;
    host.set("randomBytes", random)?;

    // crypto.createHash/createHmac/subtle: the digest of bytes, keyed for an HMAC.
    let digest = Function::new(
        ctx.clone(),
        |ctx: Ctx<'js>, algorithm: String, data: Vec<u8>, key: Opt<Vec<u8>>| {
            digest(&algorithm, &data, key.0.as_deref())
                .map_err(|why| Exception::throw_type(&ctx, &why))
        },
    )?;
    host.set("digest", digest)?;

    let parse = Function::new(
        ctx.clone(),
        |ctx: Ctx<'js>, input: String, base: Opt<Option<String>>| {
            let base = match base.0.flatten() {
                Some(base) => match url::Url::parse(&base) {
                    Ok(base) => Some(base),
                    Err(_) => return Ok(None),
                },
                None => None,
            };
            match url::Url::options().base_url(base.as_ref()).parse(&input) {
                Ok(url) => url_parts(&ctx, &url).map(Some),
                Err(_) => Ok(None),
            }
        },
    )?;
    host.set("url", parse)?;

    let with = Function::new(
        ctx.clone(),
        |ctx: Ctx<'js>, href: String, part: String, value: String| {
            let Ok(mut url) = url::Url::parse(&href) else {
                return Ok(None);
            };
            let value = value.trim_start_matches(match part.as_str() {
                "search" => '?',
                "hash" => '#',
                _ => '\0',
            });
            match part.as_str() {
                "pathname" => url.set_path(value),
                "search" => url.set_query((!value.is_empty()).then_some(value)),
                "hash" => url.set_fragment((!value.is_empty()).then_some(value)),
                _ => return Ok(None),
            }
            url_parts(&ctx, &url).map(Some)
        },
    )?;
    host.set("urlWith", with)?;

    install.call((host,))
}

/// A parsed URL as the parts `URL` shows.
fn url_parts<'js>(ctx: &Ctx<'js>, url: &url::Url) -> rquickjs::Result<Object<'js>> {
    let parts = Object::new(ctx.clone())?;
    let hostname = url.host_str().unwrap_or_default();
    let port = url.port().map(|p| p.to_string()).unwrap_or_default();
    parts.set("href", url.as_str())?;
    parts.set("origin", url.origin().ascii_serialization())?;
    parts.set("protocol", format!("{}:", url.scheme()))?;
    parts.set("username", url.username())?;
    parts.set("password", url.password().unwrap_or_default())?;
    parts.set("hostname", hostname)?;
    parts.set("port", port.as_str())?;
    parts.set(
        "host",
        if port.is_empty() {
            hostname.to_string()
        } else {
            format!("{hostname}:{port}")
        },
    )?;
    parts.set("pathname", url.path())?;
    parts.set(
        "search",
        url.query()
            .filter(|q| !q.is_empty())
            .map(|q| format!("?{q}"))
            .unwrap_or_default(),
    )?;
    parts.set(
        "hash",
        url.fragment()
            .filter(|f| !f.is_empty())
            .map(|f| format!("#{f}"))
            .unwrap_or_default(),
    )?;
    Ok(parts)
}

/// The digest of `data` under `algorithm` (Node's names: `sha256`, `sha1`, `sha384`,
/// `sha512`, `md5`; WebCrypto's `SHA-256` too), an HMAC with `key`.
fn digest(algorithm: &str, data: &[u8], key: Option<&[u8]>) -> Result<Vec<u8>, String> {
    use hmac::{Hmac, KeyInit, Mac};
    use sha2::Digest;
    macro_rules! compute {
        ($hash:ty) => {
            match key {
                None => <$hash>::digest(data).to_vec(),
                Some(key) => {
                    let mut mac = Hmac::<$hash>::new_from_slice(key)
                        .map_err(|e| format!("the HMAC key was refused: {e}"))?;
                    mac.update(data);
                    mac.finalize().into_bytes().to_vec()
                }
            }
        };
    }
    let name: String = algorithm
        .chars()
        .filter(|c| *c != '-')
        .collect::<String>()
        .to_ascii_lowercase();
    Ok(match name.as_str() {
        "sha256" => compute!(sha2::Sha256),
        "sha512" => compute!(sha2::Sha512),
        "sha384" => compute!(sha2::Sha384),
        "sha224" => compute!(sha2::Sha224),
        "sha1" => compute!(sha1::Sha1),
        "md5" => compute!(md5::Md5),
        _ => {
            return Err(format!(
                "digest algorithm `{algorithm}` is not supported; use sha256, sha512, sha384, sha224, sha1 or md5"
            ));
        }
    })
}
