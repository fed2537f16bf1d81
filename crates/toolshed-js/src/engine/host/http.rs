//! `ctx.http`: requests through the host's HTTP client, to granted hosts only.

use std::rc::Rc;
use std::time::Duration;

use rquickjs::{Coerced, Ctx, Promise, Value};
use toolshed_core::{HttpRequest, NetPolicy};

use super::super::convert::{cap, to_json_text};
use super::{CallScope, HostValue, rejected};

/// The HTTP timeout when the script sets none.
const HTTP_DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest HTTP timeout a script may ask for.
const HTTP_MAX_TIMEOUT: Duration = Duration::from_secs(60);
/// The most response body bytes kept.
const HTTP_MAX_RESPONSE: usize = 1024 * 1024;
/// A parsed `ctx.http.request` argument.
struct RequestSpec {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
    timeout: Duration,
}

fn parse_request<'js>(ctx: &Ctx<'js>, opts: Value<'js>) -> Result<RequestSpec, String> {
    const SHAPE: &str = "http.request takes { method, url, headers, body, timeoutMs }";
    let opts = opts.into_object().ok_or(SHAPE)?;
    let field = |name: &str| -> Result<Option<Value<'js>>, String> {
        let v: Value = opts.get(name).map_err(|e| format!("{SHAPE}: {e}"))?;
        Ok((!v.is_undefined() && !v.is_null()).then_some(v))
    };
    let url = field("url")?
        .and_then(|v| v.as_string().and_then(|s| s.to_string().ok()))
        .ok_or_else(|| format!("{SHAPE}; `url` must be a string"))?;
    let method = match field("method")? {
        None => "GET".to_string(),
        Some(v) => v
            .as_string()
            .and_then(|s| s.to_string().ok())
            .map(|m| m.to_ascii_uppercase())
            .filter(|m| !m.is_empty() && m.len() <= 16 && m.bytes().all(|b| b.is_ascii_uppercase()))
            .ok_or("`method` must be an HTTP method name such as GET or POST")?,
    };
    let mut headers = Vec::new();
    if let Some(h) = field("headers")? {
        let h = h
            .into_object()
            .ok_or("`headers` must be an object of strings")?;
        for entry in h.props::<String, Coerced<String>>() {
            let (name, value) = entry.map_err(|e| format!("`headers`: {e}"))?;
            let valid_name = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if !valid_name || value.0.contains(['\r', '\n']) {
                return Err(format!("header `{}` is malformed", cap(name, 100)));
            }
            headers.push((name, value.0));
        }
    }
    let has_header = |headers: &[(String, String)], name: &str| {
        headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    let body = match field("body")? {
        None => None,
        Some(v) if v.is_string() => Some(
            v.as_string()
                .and_then(|s| s.to_string().ok())
                .unwrap_or_default()
                .into_bytes(),
        ),
        Some(v) => {
            let text = to_json_text(ctx, v)
                .map_err(|_| "`body` must be a string or a value JSON can encode".to_string())?
                .unwrap_or_default();
            if !has_header(&headers, "content-type") {
                headers.push(("content-type".into(), "application/json".into()));
            }
            Some(text.into_bytes())
        }
    };
    let timeout = match field("timeoutMs")? {
        None => HTTP_DEFAULT_TIMEOUT,
        Some(v) => {
            let ms = v
                .as_number()
                .filter(|n| n.is_finite() && *n > 0.0)
                .ok_or("`timeoutMs` must be a positive number")?;
            Duration::from_millis(ms as u64).min(HTTP_MAX_TIMEOUT)
        }
    };
    Ok(RequestSpec {
        method,
        url,
        headers,
        body,
        timeout,
    })
}

pub(super) fn http_request<'js>(
    ctx: &Ctx<'js>,
    scope: &Rc<CallScope>,
    opts: Value<'js>,
) -> rquickjs::Result<Promise<'js>> {
    let client = scope.access.http.clone();
    let spec = match parse_request(ctx, opts) {
        Ok(spec) => spec,
        Err(msg) => return rejected(ctx, &msg),
    };
    if let Err(msg) = scope.reach.check_url(&spec.url) {
        return rejected(ctx, &msg);
    }
    let timeout = spec.timeout.min(scope.time_left());
    if timeout.is_zero() {
        return rejected(ctx, "the call has no time left for an HTTP request");
    }
    let request = HttpRequest {
        method: spec.method,
        url: spec.url,
        headers: spec.headers,
        body: spec.body,
        timeout,
        max_response_bytes: HTTP_MAX_RESPONSE,
    };
    // The grants narrow the web rules; they never open a private address the person
    // running toolshed has not opened in `[web] allow`.
    let policy = NetPolicy::PublicWithin(scope.reach.host_list());
    let cancel = scope.cancel.clone();
    scope.start(ctx, async move {
        client
            .send(request, &policy, &cancel)
            .await
            .map(HostValue::Http)
            .map_err(|e| e.to_string())
    })
}
