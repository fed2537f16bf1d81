//! What the browser tools do to a page.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::broadcast;
use toolshed_core::{CallContext, ToolError, ToolOutput};
use url::Url;

use super::cdp::{self, Event};
use super::spec::{self, Format};
use super::{Run, Session, Shared};
use toolshed_kit::html::{self, Mode};

/// The longest a command that should answer at once may take.
pub(super) const QUICK: Duration = Duration::from_secs(10);
/// How long after a click or Enter a navigation may take to start.
const NAVIGATION_START: Duration = Duration::from_millis(500);
/// The most HTML read from a page.
const MAX_HTML_CHARS: u64 = 5_000_000;
/// Network idle: no request in flight for this long.
const IDLE_QUIET: Duration = Duration::from_millis(500);
/// The most JSON text `browser_evaluate` returns.
const MAX_EVALUATE_BYTES: usize = 100_000;

/// What is left of the call's deadline, at most `cap`.
pub(super) fn budget(ctx: &CallContext, cap: Duration) -> Duration {
    ctx.deadline
        .saturating_duration_since(Instant::now())
        .min(cap)
        .max(Duration::from_millis(1))
}

/// `browser_open`.
pub(super) async fn open(
    shared: &Arc<Shared>,
    ctx: &CallContext,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    let args: spec::OpenArgs = crate::args::parse(args)?;
    if let Some(url) = &args.url {
        checked_url(url, "/url")?;
    }
    let session = shared
        .new_session(&ctx.owner.0, budget(ctx, Duration::from_secs(60)))
        .await?;
    let _busy = session.busy.lock().await;
    let mut text = format!(
        "Opened browser session {} ({}).",
        session.id, session.browser.version
    );
    if let Some(url) = &args.url {
        match navigate(shared, ctx, &session, url).await {
            Ok(report) => text = format!("{text}\n{report}"),
            Err(e) => {
                return Ok(ToolOutput::text(format!(
                    "{text} It stays open, but the page did not load: {e}"
                ))
                .into_error());
            }
        }
    }
    Ok(ToolOutput::text_and_structured(
        text,
        json!({"session": session.id}),
    ))
}

/// `browser_list`.
pub(super) async fn list(shared: &Arc<Shared>, ctx: &CallContext) -> Result<ToolOutput, ToolError> {
    let mine = shared.sessions_of(&ctx.owner.0).await;
    if mine.is_empty() {
        return Ok(ToolOutput::text(
            "No browser sessions; browser_open starts one.",
        ));
    }
    let mut lines = Vec::new();
    for session in &mine {
        let line = match session.lost() {
            Some(why) => format!("{}  lost: {why}", session.id),
            None => {
                let (url, title) = location(session).await.unwrap_or_default();
                format!(
                    "{}  {url}  \"{title}\"  idle {} s",
                    session.id,
                    session.idle().as_secs()
                )
            }
        };
        lines.push(line);
    }
    Ok(ToolOutput::text(lines.join("\n")))
}

/// The arguments of a tool that acts on one session.
enum Action {
    Navigate(spec::NavigateArgs),
    Info(spec::SessionArgs),
    Content(spec::ContentArgs),
    Screenshot(spec::ScreenshotArgs),
    Click(spec::ClickArgs),
    Type(spec::TypeArgs),
    Wait(spec::WaitArgs),
    Evaluate(spec::EvaluateArgs),
}

impl Action {
    fn parse(run: Run, args: Value) -> Result<Self, ToolError> {
        use crate::args::parse;
        Ok(match run {
            Run::Navigate => Self::Navigate(parse(args)?),
            Run::Info => Self::Info(parse(args)?),
            Run::Content => Self::Content(parse(args)?),
            Run::Screenshot => Self::Screenshot(parse(args)?),
            Run::Click => Self::Click(parse(args)?),
            Run::Type => Self::Type(parse(args)?),
            Run::Wait => Self::Wait(parse(args)?),
            Run::Evaluate => Self::Evaluate(parse(args)?),
            Run::Open | Run::List | Run::Close => unreachable!("served by the tool itself"),
        })
    }

    fn session(&self) -> &str {
        match self {
            Self::Navigate(a) => &a.session,
            Self::Info(a) => &a.session,
            Self::Content(a) => &a.session,
            Self::Screenshot(a) => &a.session,
            Self::Click(a) => &a.session,
            Self::Type(a) => &a.session,
            Self::Wait(a) => &a.session,
            Self::Evaluate(a) => &a.session,
        }
    }
}

/// Every tool that acts on one session.
pub(super) async fn act(
    shared: &Arc<Shared>,
    ctx: &CallContext,
    run: Run,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    let action = Action::parse(run, args)?;
    let session = shared.session(ctx, action.session()).await?;
    let _busy = session.busy.lock().await;
    let result = match action {
        Action::Navigate(args) => {
            checked_url(&args.url, "/url")?;
            navigate(shared, ctx, &session, &args.url)
                .await
                .map(ToolOutput::text)
        }
        Action::Info(_) => info(&session).await,
        Action::Content(args) => content(ctx, &session, args).await,
        Action::Screenshot(args) => {
            super::screenshot::screenshot(shared, ctx, &session, args).await
        }
        Action::Click(args) => click(shared, ctx, &session, args).await,
        Action::Type(args) => type_text(shared, ctx, &session, args).await,
        Action::Wait(args) => wait(ctx, &session, args).await,
        Action::Evaluate(args) => {
            let value = evaluate(
                &session,
                &args.expression,
                budget(ctx, Duration::from_secs(60)),
            )
            .await?;
            let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
            if text.len() > MAX_EVALUATE_BYTES {
                let cut = (0..=MAX_EVALUATE_BYTES)
                    .rev()
                    .find(|i| text.is_char_boundary(*i))
                    .unwrap_or(0);
                text = format!(
                    "{}\n… cut at {MAX_EVALUATE_BYTES} of {} bytes",
                    &text[..cut],
                    text.len()
                );
            }
            Ok(ToolOutput::text(text))
        }
    };
    session.touch();
    // A page that died under the call says so, rather than a bare protocol error.
    match (result, session.lost()) {
        (Err(_), Some(why)) => {
            shared.forget(&session.id).await;
            Err(session.lost_error(&why))
        }
        (result, _) => result,
    }
}

/// `url` if it is http(s); the browser opens nothing else (`file:`, `data:`, `chrome:`,
/// `javascript:` are refused).
fn checked_url(url: &str, pointer: &str) -> Result<Url, ToolError> {
    let parsed = Url::parse(url.trim()).map_err(|e| {
        ToolError::invalid_at(
            pointer,
            format!(
                "`{url}` is not a URL ({e}); give a full http(s) URL such as https://example.com/"
            ),
        )
    })?;
    match parsed.scheme() {
        "http" | "https" => Ok(parsed),
        scheme => Err(ToolError::invalid_at(
            pointer,
            format!("`{scheme}:` URLs are refused; the browser opens http(s) URLs only"),
        )),
    }
}

/// Runs `expression` in the page and returns its value (a promise awaited).
async fn evaluate(
    session: &Session,
    expression: &str,
    timeout: Duration,
) -> Result<Value, ToolError> {
    let reply = session
        .call(
            "Runtime.evaluate",
            json!({
                "expression": expression,
                "returnByValue": true,
                "awaitPromise": true,
                "userGesture": true,
            }),
            timeout,
        )
        .await?;
    if let Some(details) = reply.get("exceptionDetails") {
        let said = details["exception"]["description"]
            .as_str()
            .or_else(|| details["text"].as_str())
            .unwrap_or("an exception");
        return Err(ToolError::failed(format!("the script threw: {said}")));
    }
    Ok(reply["result"]["value"].clone())
}

/// The page's URL and title.
pub(super) async fn location(session: &Session) -> Result<(String, String), ToolError> {
    let value = evaluate(session, "[location.href, document.title]", QUICK).await?;
    Ok((
        value[0].as_str().unwrap_or_default().to_string(),
        value[1].as_str().unwrap_or_default().to_string(),
    ))
}

/// Waits until an event of `session` satisfies `wanted`, the browser goes, or `timeout`.
async fn wait_event(
    events: &mut broadcast::Receiver<Arc<Event>>,
    session: &Session,
    timeout: Duration,
    mut wanted: impl FnMut(&Event) -> bool,
) -> Option<Arc<Event>> {
    let end = tokio::time::Instant::now() + timeout;
    loop {
        match tokio::time::timeout_at(end, events.recv()).await {
            Err(_) => return None,
            Ok(Err(broadcast::error::RecvError::Lagged(_))) => continue,
            Ok(Err(broadcast::error::RecvError::Closed)) => return None,
            Ok(Ok(event)) => {
                if event.method == cdp::DISCONNECTED {
                    return Some(event);
                }
                if event.session.as_deref() == Some(session.cdp_session.as_str()) && wanted(&event)
                {
                    return Some(event);
                }
            }
        }
    }
}

/// Loads `url` and waits for it (at most the navigation timeout); returns the report.
async fn navigate(
    shared: &Shared,
    ctx: &CallContext,
    session: &Session,
    url: &str,
) -> Result<String, ToolError> {
    let timeout = budget(
        ctx,
        Duration::from_millis(shared.settings.navigation_timeout_ms),
    );
    let mut events = session.browser.cdp.events();
    let started = session
        .call("Page.navigate", json!({"url": url}), timeout)
        .await?;
    if let Some(error) = started["errorText"].as_str().filter(|e| !e.is_empty()) {
        return Err(ToolError::failed(load_failure(url, error)));
    }
    let frame = started["frameId"].as_str().unwrap_or_default().to_string();
    finish_load(session, &mut events, &frame, timeout).await
}

/// After a navigation started: waits for the load event, noting the document's status and
/// whether toolshed's network rules refused it.
async fn finish_load(
    session: &Session,
    events: &mut broadcast::Receiver<Arc<Event>>,
    frame: &str,
    timeout: Duration,
) -> Result<String, ToolError> {
    let mut status = None;
    let mut refused = false;
    let loaded = wait_event(events, session, timeout, |event| {
        match event.method.as_str() {
            "Network.responseReceived" => {
                let p = &event.params;
                if p["type"] == "Document" && (frame.is_empty() || p["frameId"] == frame) {
                    status = p["response"]["status"].as_u64();
                    refused = p["response"]["headers"]
                        .as_object()
                        .is_some_and(|h| h.keys().any(|k| k.eq_ignore_ascii_case(REFUSED_HEADER)));
                }
                false
            }
            "Page.loadEventFired" => true,
            _ => false,
        }
    })
    .await;
    if loaded
        .as_ref()
        .is_some_and(|e| e.method == cdp::DISCONNECTED)
    {
        return Err(session.lost_error(super::BROWSER_GONE));
    }
    let (url, title) = location(session).await?;
    if refused {
        let said = evaluate(
            session,
            "document.body ? document.body.innerText : ''",
            QUICK,
        )
        .await
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
        return Err(ToolError::Denied {
            message: format!(
                "the browser was refused `{url}` by toolshed's network rules: {}",
                said.trim().trim_start_matches("toolshed sandbox: ")
            ),
            rule: "web.network".into(),
        });
    }
    let mut report = format!("URL: {url}\nTitle: {title}");
    if let Some(status) = status {
        report.push_str(&format!("\nStatus: {status}"));
    }
    if loaded.is_none() {
        report.push_str(&format!(
            "\n(still loading after {} ms; browser_wait waits longer)",
            timeout.as_millis()
        ));
    }
    Ok(report)
}

/// The header toolshed's egress proxy sets on the answers it makes itself (a refusal).
const REFUSED_HEADER: &str = "x-toolshed-refused";

/// A Chromium network error, said for a person.
fn load_failure(url: &str, error: &str) -> String {
    let why = match error {
        "net::ERR_TUNNEL_CONNECTION_FAILED" | "net::ERR_PROXY_CONNECTION_FAILED" => {
            "toolshed's network rules refused the address (private, loopback, link-local and metadata addresses are refused unless `[web] allow` opens them), or the host could not be reached"
        }
        "net::ERR_NAME_NOT_RESOLVED" => "the host name does not resolve",
        "net::ERR_CONNECTION_REFUSED" => "nothing listens there",
        "net::ERR_BLOCKED_BY_CLIENT" | "net::ERR_BLOCKED_BY_RESPONSE" => "it was blocked",
        "net::ERR_ABORTED" => {
            "the load was aborted (a download, which is off, or a newer navigation)"
        }
        "net::ERR_UNSAFE_PORT" => "the browser refuses that port",
        _ => "the load failed",
    };
    format!("cannot load {url}: {why} ({error})")
}

/// After a click or Enter: if a navigation starts within a moment, waits for it.
async fn settle(
    shared: &Shared,
    ctx: &CallContext,
    session: &Session,
    mut events: broadcast::Receiver<Arc<Event>>,
) -> Result<String, ToolError> {
    let started = wait_event(&mut events, session, NAVIGATION_START, |e| {
        e.method == "Page.frameStartedLoading" || e.method == "Page.frameRequestedNavigation"
    })
    .await;
    match started {
        Some(e) if e.method == cdp::DISCONNECTED => Err(session.lost_error(super::BROWSER_GONE)),
        Some(_) => {
            let timeout = budget(
                ctx,
                Duration::from_millis(shared.settings.navigation_timeout_ms),
            );
            finish_load(session, &mut events, "", timeout).await
        }
        None => {
            let (url, title) = location(session).await?;
            Ok(format!("URL: {url}\nTitle: {title}"))
        }
    }
}

/// `browser_session_info`.
async fn info(session: &Session) -> Result<ToolOutput, ToolError> {
    let (url, title) = location(session).await?;
    let age = session.created.elapsed().unwrap_or_default().as_secs();
    let inflight = session
        .page
        .inflight
        .load(std::sync::atomic::Ordering::Acquire);
    Ok(ToolOutput::text_and_structured(
        format!(
            "Session {}\nURL: {url}\nTitle: {title}\nOpen for {age} s, idle {} s, {inflight} requests in flight\nBrowser: {}",
            session.id,
            session.idle().as_secs(),
            session.browser.version
        ),
        json!({
            "session": session.id, "url": url, "title": title, "age_secs": age,
            "idle_secs": session.idle().as_secs(), "requests_in_flight": inflight,
            "browser": session.browser.version,
        }),
    ))
}

/// `browser_get_content`: the rendered DOM through the web tools' readable renderer.
async fn content(
    ctx: &CallContext,
    session: &Session,
    args: spec::ContentArgs,
) -> Result<ToolOutput, ToolError> {
    let selector = args
        .selector
        .as_deref()
        .map(|s| serde_json::to_string(s).unwrap_or_default());
    let element = match &selector {
        Some(s) => format!("document.querySelector({s})"),
        None => "document.documentElement".into(),
    };
    let read = format!(
        "(() => {{ let e; try {{ e = {element}; }} catch (x) {{ return {{bad: String(x)}}; }} \
         if (!e) return null; \
         return {{html: e.outerHTML.slice(0, {MAX_HTML_CHARS}), text: (e.innerText || '').slice(0, {MAX_HTML_CHARS}), \
         url: location.href, title: document.title}}; }})()"
    );
    let value = evaluate(session, &read, budget(ctx, Duration::from_secs(30))).await?;
    valid_selector(&value)?;
    if value.is_null() {
        return Err(ToolError::NotFound(format!(
            "no element matches `{}` on this page; browser_wait waits for one to appear",
            args.selector.unwrap_or_default()
        )));
    }
    let text = |k: &str| value[k].as_str().unwrap_or_default().to_string();
    let (page_html, inner_text, url, title) =
        (text("html"), text("text"), text("url"), text("title"));
    let format = args.format;
    let whole = args.selector.is_none();
    let rendered = tokio::task::spawn_blocking(move || {
        let page = html::readable(&page_html);
        let base = Url::parse(&url).ok();
        let node = if whole {
            page.main
        } else {
            html::dom::Document::ROOT
        };
        let out = match format {
            Format::Markdown => html::render(&page.doc, node, base.as_ref(), Mode::Markdown),
            Format::Text => html::render(&page.doc, node, base.as_ref(), Mode::Text),
            Format::Html => html::to_html(&page.doc, node, base.as_ref()),
        };
        (out, url)
    })
    .await
    .map_err(|e| ToolError::Internal(format!("reading the page failed: {e}")))?;
    let (mut body, url) = rendered;
    if body.trim().is_empty() {
        // The seeds' rule: inner text when the readable content is empty.
        body = inner_text;
    }
    let mut out = format!("URL: {url}\nTitle: {title}\n");
    out.push_str(&toolshed_kit::window(
        &body,
        args.start,
        args.max_chars,
        "start",
    )?);
    Ok(ToolOutput::text(out))
}

/// The error a page script reports for a selector that is not CSS (`{bad}`), if it did.
fn valid_selector(found: &Value) -> Result<(), ToolError> {
    match found["bad"].as_str() {
        Some(bad) => Err(ToolError::invalid_at(
            "/selector",
            format!("the selector is not valid CSS: {bad}"),
        )),
        None => Ok(()),
    }
}

/// Finds an element by selector or visible text, scrolls it into view and returns its
/// centre, tag and label; `{bad}` for a selector that is not CSS, `null` when none.
fn finder(selector: Option<&str>, text: Option<&str>) -> String {
    let arg = |v: Option<&str>| serde_json::to_string(&v).unwrap_or_else(|_| "null".into());
    format!(
        r#"(() => {{
  const sel = {sel}, text = {text};
  let el = null;
  if (sel) {{
    try {{ el = document.querySelector(sel); }} catch (x) {{ return {{bad: String(x)}}; }}
  }} else {{
    const want = text.trim().toLowerCase();
    const label = e => [e.innerText, e.value, e.getAttribute('aria-label'), e.title]
      .filter(Boolean).join(' ').trim().toLowerCase();
    const likely = [...document.querySelectorAll('a,button,input,select,textarea,label,summary,[role=button],[role=link],[onclick]')];
    el = likely.find(e => label(e) === want) || likely.find(e => label(e).includes(want));
    if (!el) {{
      const all = [...document.querySelectorAll('body *')].filter(e => (e.innerText || '').toLowerCase().includes(want));
      el = all.length ? all[all.length - 1] : null;
    }}
  }}
  if (!el) return null;
  el.scrollIntoView({{block: 'center', inline: 'center'}});
  const r = el.getBoundingClientRect();
  return {{x: r.left + r.width / 2, y: r.top + r.height / 2, w: r.width, h: r.height,
    tag: el.tagName.toLowerCase(), label: (el.innerText || el.value || '').trim().slice(0, 80)}};
}})()"#,
        sel = arg(selector),
        text = arg(text),
    )
}

/// `browser_click`: a real mouse click (trusted events) at the element's centre.
async fn click(
    shared: &Shared,
    ctx: &CallContext,
    session: &Session,
    args: spec::ClickArgs,
) -> Result<ToolOutput, ToolError> {
    if args.selector.is_some() == args.text.is_some() {
        return Err(ToolError::invalid(
            "give exactly one of `selector` and `text`",
        ));
    }
    let found = evaluate(
        session,
        &finder(args.selector.as_deref(), args.text.as_deref()),
        QUICK,
    )
    .await?;
    let what = args
        .selector
        .as_deref()
        .map(|s| format!("selector `{s}`"))
        .or_else(|| args.text.as_deref().map(|t| format!("text \"{t}\"")))
        .unwrap_or_default();
    valid_selector(&found)?;
    if found.is_null() {
        return Err(ToolError::NotFound(format!(
            "nothing on the page matches {what}; browser_get_content shows what is there"
        )));
    }
    if found["w"].as_f64().unwrap_or(0.0) < 1.0 || found["h"].as_f64().unwrap_or(0.0) < 1.0 {
        return Err(ToolError::failed(format!(
            "the element matching {what} is not visible (zero size)"
        )));
    }
    let (x, y) = (
        found["x"].as_f64().unwrap_or(0.0),
        found["y"].as_f64().unwrap_or(0.0),
    );
    let events = session.browser.cdp.events();
    for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
        session
            .call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
                QUICK,
            )
            .await?;
    }
    let report = settle(shared, ctx, session, events).await?;
    Ok(ToolOutput::text(format!(
        "Clicked <{}> \"{}\".\n{report}",
        found["tag"].as_str().unwrap_or("?"),
        found["label"].as_str().unwrap_or_default()
    )))
}

/// `browser_type`: the field's value replaced by `text` typed in, then Enter if asked.
async fn type_text(
    shared: &Shared,
    ctx: &CallContext,
    session: &Session,
    args: spec::TypeArgs,
) -> Result<ToolOutput, ToolError> {
    let selector = serde_json::to_string(&args.selector).unwrap_or_default();
    let focus = format!(
        "(() => {{ let e; try {{ e = document.querySelector({selector}); }} catch (x) {{ return {{bad: String(x)}}; }} \
         if (!e) return null; e.scrollIntoView({{block: 'center'}}); e.focus(); \
         if ('value' in e) {{ e.value = ''; e.dispatchEvent(new Event('input', {{bubbles: true}})); }} \
         else if (e.isContentEditable) {{ e.textContent = ''; }} \
         return {{tag: e.tagName.toLowerCase(), focused: document.activeElement === e}}; }})()"
    );
    let found = evaluate(session, &focus, QUICK).await?;
    valid_selector(&found)?;
    if found.is_null() {
        return Err(ToolError::NotFound(format!(
            "no field matches `{}`; browser_get_content with format `html` shows the form",
            args.selector
        )));
    }
    if found["focused"] != true {
        return Err(ToolError::failed(format!(
            "the element matching `{}` (<{}>) cannot take typing (it did not take the focus)",
            args.selector,
            found["tag"].as_str().unwrap_or("?")
        )));
    }
    if !args.text.is_empty() {
        session
            .call("Input.insertText", json!({"text": args.text}), QUICK)
            .await?;
    }
    let typed = format!(
        "Typed {} characters into `{}`.",
        args.text.chars().count(),
        args.selector
    );
    if !args.submit {
        return Ok(ToolOutput::text(typed));
    }
    let events = session.browser.cdp.events();
    for kind in ["keyDown", "keyUp"] {
        let mut key = json!({"type": kind, "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "nativeVirtualKeyCode": 13});
        if kind == "keyDown" {
            key["text"] = Value::String("\r".into());
        }
        session.call("Input.dispatchKeyEvent", key, QUICK).await?;
    }
    let report = settle(shared, ctx, session, events).await?;
    Ok(ToolOutput::text(format!(
        "{typed} Pressed Enter.\n{report}"
    )))
}

/// `browser_wait`.
async fn wait(
    ctx: &CallContext,
    session: &Session,
    args: spec::WaitArgs,
) -> Result<ToolOutput, ToolError> {
    let asked = usize::from(args.selector.is_some())
        + usize::from(args.text.is_some())
        + usize::from(args.network_idle);
    if asked != 1 {
        return Err(ToolError::invalid(
            "give exactly one of `selector`, `text` and `network_idle: true`",
        ));
    }
    let timeout = budget(ctx, Duration::from_millis(args.timeout_ms));
    let started = Instant::now();
    if args.network_idle {
        loop {
            let inflight = session
                .page
                .inflight
                .load(std::sync::atomic::Ordering::Acquire);
            let quiet = session
                .page
                .last_network
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_none_or(|t| t.elapsed() >= IDLE_QUIET);
            if inflight <= 0 && quiet {
                return Ok(ToolOutput::text(format!(
                    "The network is idle (after {} ms).",
                    started.elapsed().as_millis()
                )));
            }
            if started.elapsed() >= timeout {
                return Ok(ToolOutput::text(format!(
                    "Still {inflight} requests in flight after {} ms.",
                    timeout.as_millis()
                ))
                .into_error());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let condition = match (&args.selector, &args.text) {
        (Some(s), _) => format!(
            "document.querySelector({})",
            serde_json::to_string(s).unwrap_or_default()
        ),
        (_, Some(t)) => format!(
            "(document.body && document.body.innerText.includes({}))",
            serde_json::to_string(t).unwrap_or_default()
        ),
        _ => unreachable!("checked above"),
    };
    let ms = timeout.as_millis();
    let poll = format!(
        "new Promise(done => {{ const end = Date.now() + {ms}; const look = () => {{ \
         let ok = false; try {{ ok = !!({condition}); }} catch (x) {{ return done({{bad: String(x)}}); }} \
         if (ok) return done(true); if (Date.now() >= end) return done(false); setTimeout(look, 100); }}; look(); }})"
    );
    let found = evaluate(session, &poll, timeout + QUICK).await?;
    let what = match (&args.selector, &args.text) {
        (Some(s), _) => format!("an element matching `{s}`"),
        (_, Some(t)) => format!("the text \"{t}\""),
        _ => unreachable!("checked above"),
    };
    valid_selector(&found)?;
    if found == true {
        Ok(ToolOutput::text(format!(
            "Found {what} after {} ms.",
            started.elapsed().as_millis()
        )))
    } else {
        Ok(ToolOutput::text(format!("No {what} after {ms} ms.")).into_error())
    }
}
