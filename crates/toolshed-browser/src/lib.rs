//! The `system.browser` plugin: real pages in a headless Chromium, as sessions owned by the
//! caller that opened them.
//!
//! ```text
//! browser_open {"url": "http://127.0.0.1:8000/app"}      → session b1
//! browser_type {"session": "b1", "selector": "#user", "text": "ada", "submit": true}
//! browser_get_content {"session": "b1"}                   → the page as Markdown
//! browser_screenshot {"session": "b1", "full_page": true} → a PNG image block
//! ```
//!
//! One Chromium per host, started on the first `browser_open` and stopped when no session
//! has been used for `[browser] idle_timeout_secs`. It runs inside the command sandbox
//! (read-only, its profile in the sandbox's private `/tmp`) in a network of its own: every
//! connection it makes — the page, each redirect, subresources, fetch/XHR, WebSockets,
//! iframes — goes through the sandbox's egress proxy, which resolves the host itself and
//! applies the web tools' rules (`[web] allow`), so neither a page's script nor DNS
//! rebinding gets around them; and with no network of its own, Chromium cannot connect
//! anywhere directly. It is driven over a pipe (see [`cdp`]), never a debugging port.
//!
//! Each session is a page in a browser context of its own (`profile = "session"`, the
//! default) or of its owner's (`profile = "owner"`: the owner's sessions share cookies).
//! Another owner's session is reported as missing. A Chromium that crashed or was killed
//! is started again by the next `browser_open`; its sessions are reported lost.
//!
//! The plugin is off until a person enables it (`toolshed plugins enable system.browser`):
//! it starts a 400 MB browser and its eleven tools would crowd the default catalog.

pub(crate) use toolshed_kit::{args, find_program};

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use serde_json::{Value, json};
use toolshed_core::{
    CallContext, Health, Plugin, PluginError, PluginKind, PluginManifest, Tool, ToolError,
    ToolOutput, ToolSpec,
};
use toolshed_ops::{ProcessOps, Services};

mod cdp;
mod chromium;
mod page;
mod screenshot;
mod settings;
mod spec;
#[cfg(test)]
mod tests;

use cdp::CdpError;
use chromium::Browser;
pub use chromium::{NoChromium, detect, own_sandbox_works};
pub use settings::{Profile, Settings};

/// The group every browser tool belongs to.
pub const GROUP: &str = "browser";
/// The plugin's id.
pub const PLUGIN_ID: &str = "system.browser";

/// The `system.browser` plugin over the services' process backend.
pub fn plugin(services: &Services, settings: Settings) -> Arc<dyn Plugin> {
    let shared = Arc::new(Shared {
        processes: services.ops.process.clone(),
        settings,
        state: tokio::sync::Mutex::default(),
        generation: AtomicU64::new(0),
        next_session: AtomicU64::new(1),
    });
    let tools = spec::all()
        .into_iter()
        .map(|(spec, run)| {
            Arc::new(BrowserTool {
                spec,
                run,
                shared: shared.clone(),
            }) as Arc<dyn Tool>
        })
        .collect();
    let mut manifest = PluginManifest::new(
        PLUGIN_ID,
        env!("CARGO_PKG_VERSION"),
        "Browser",
        PluginKind::Builtin,
    );
    manifest.description = "Real pages in a headless Chromium: open, read as Markdown, click, type, wait, screenshot; under the web tools' network rules.".into();
    manifest.tags = vec![GROUP.to_string()];
    manifest.tools = spec::all().into_iter().map(|(spec, _)| spec).collect();
    Arc::new(BrowserPlugin {
        manifest,
        tools,
        shared,
    })
}

struct BrowserPlugin {
    manifest: PluginManifest,
    tools: Vec<Arc<dyn Tool>>,
    shared: Arc<Shared>,
}

#[async_trait]
impl Plugin for BrowserPlugin {
    fn manifest(&self) -> &PluginManifest {
        &self.manifest
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.clone()
    }

    fn enabled_by_default(&self) -> bool {
        false
    }

    async fn stop(&self) -> Result<(), PluginError> {
        self.shared.shut_down().await;
        Ok(())
    }

    async fn health(&self) -> Health {
        if let Err(why) = chromium::find(self.shared.settings.executable.as_deref()) {
            return Health::Degraded(why.to_string());
        }
        match chromium::refusal(self.shared.processes.as_ref()) {
            Some(why) => Health::Degraded(why),
            None => Health::Ok,
        }
    }

    async fn running(&self) -> Vec<toolshed_core::Running> {
        let state = self.shared.state.lock().await;
        let mut sessions: Vec<&Arc<Session>> = state.sessions.values().collect();
        sessions.sort_by_key(|s| s.created);
        sessions
            .iter()
            .map(|s| {
                let lost = s
                    .page
                    .lost
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                toolshed_core::Running {
                    kind: "browser_session".into(),
                    id: s.id.clone(),
                    owner: s.owner.clone(),
                    summary: format!("browser page {}", s.id),
                    running: lost.is_none(),
                    started_ms: s
                        .created
                        .duration_since(std::time::UNIX_EPOCH)
                        .ok()
                        .and_then(|d| i64::try_from(d.as_millis()).ok()),
                    fields: serde_json::json!({
                        "idle_secs": s.idle().as_secs(),
                        "lost": lost,
                    }),
                    stop: Some(toolshed_core::StopCall {
                        tool: "browser_close".into(),
                        arguments: serde_json::json!({"session": s.id}),
                    }),
                }
            })
            .collect()
    }

    async fn owner_ended(&self, owner: &toolshed_core::OwnerId) {
        let ids: Vec<String> = {
            let state = self.shared.state.lock().await;
            state
                .sessions
                .values()
                .filter(|s| s.owner == owner.0)
                .map(|s| s.id.clone())
                .collect()
        };
        for id in ids {
            self.shared.close(&id).await;
        }
    }
}

/// Which tool a [`BrowserTool`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Run {
    Open,
    List,
    Navigate,
    Info,
    Content,
    Screenshot,
    Close,
    Click,
    Type,
    Wait,
    Evaluate,
}

struct BrowserTool {
    spec: ToolSpec,
    run: Run,
    shared: Arc<Shared>,
}

#[async_trait]
impl Tool for BrowserTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn unavailable(&self) -> Option<(String, Vec<String>)> {
        (self.run == Run::Evaluate && !self.shared.settings.evaluate).then(|| {
            (
                "browser_evaluate runs any JavaScript in a page and is off; a person turns it on with `[browser] evaluate = true`".to_string(),
                Vec::new(),
            )
        })
    }

    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        if let Some((why, _)) = self.unavailable() {
            return Err(ToolError::Unconfigured {
                message: why,
                variables: Vec::new(),
            });
        }
        let shared = &self.shared;
        match self.run {
            Run::Open => page::open(shared, &ctx, args).await,
            Run::List => page::list(shared, &ctx).await,
            Run::Close => {
                let args: spec::SessionArgs = crate::args::parse(args)?;
                let session = shared.session(&ctx, &args.session).await?;
                shared.close(&session.id).await;
                Ok(ToolOutput::text(format!(
                    "Closed browser session {}.",
                    session.id
                )))
            }
            run => page::act(shared, &ctx, run, args).await,
        }
    }
}

/// What a page's events tell: requests in flight, and whether it is gone.
#[derive(Debug, Default)]
pub(crate) struct PageState {
    inflight: AtomicI64,
    /// When a request last started or ended.
    last_network: Mutex<Option<Instant>>,
    /// Why the page is gone (it crashed, or was closed from outside).
    lost: Mutex<Option<String>>,
}

impl PageState {
    fn network(&self, delta: i64) {
        let now = self.inflight.fetch_add(delta, Ordering::AcqRel) + delta;
        if now < 0 {
            self.inflight.store(0, Ordering::Release);
        }
        *self.last_network.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }

    fn lose(&self, why: &str) {
        let mut lost = self.lost.lock().unwrap_or_else(|e| e.into_inner());
        lost.get_or_insert_with(|| why.to_string());
    }

    fn lost(&self) -> Option<String> {
        self.lost.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Why every session of a browser that exited is lost.
pub(crate) const BROWSER_GONE: &str = "the browser stopped (it crashed or was killed)";

/// The error of a call on session `id`, lost for `why`.
fn lost_error(id: &str, why: &str) -> ToolError {
    ToolError::failed(format!(
        "browser session {id} was lost: {why}; open a new one with browser_open"
    ))
}

/// One open page.
pub(crate) struct Session {
    pub id: String,
    pub owner: String,
    pub target: String,
    pub cdp_session: String,
    /// The browser context this session alone uses (disposed with it).
    pub own_context: Option<String>,
    pub browser: Arc<Browser>,
    pub created: SystemTime,
    pub last_used: Mutex<Instant>,
    pub page: Arc<PageState>,
    /// One action at a time on a page.
    pub busy: tokio::sync::Mutex<()>,
}

impl Session {
    fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    fn idle(&self) -> Duration {
        self.last_used
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
    }

    /// Why this session can no longer be used, if it cannot.
    fn lost(&self) -> Option<String> {
        if !self.browser.alive() {
            return Some(BROWSER_GONE.into());
        }
        self.page.lost()
    }

    /// A command to this session's page.
    pub(crate) async fn call(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, ToolError> {
        self.browser
            .cdp
            .call(method, params, Some(&self.cdp_session), timeout)
            .await
            .map_err(|e| self.error(method, e))
    }

    /// The error of a call on this session after it was lost for `why`.
    pub(crate) fn lost_error(&self, why: &str) -> ToolError {
        lost_error(&self.id, why)
    }

    fn error(&self, method: &str, e: CdpError) -> ToolError {
        match e {
            CdpError::Closed => self.lost_error(BROWSER_GONE),
            CdpError::Timeout(_) => ToolError::failed(format!(
                "the page of browser session {} did not answer `{method}` in time; it may be busy or hung (browser_close it and open a new one)",
                self.id
            )),
            CdpError::Protocol(message) => ToolError::failed(format!("{method}: {message}")),
        }
    }
}

#[derive(Default)]
struct State {
    browser: Option<Arc<Browser>>,
    sessions: HashMap<String, Arc<Session>>,
    /// `profile = "owner"`: each owner's browser context, and the browser it is in.
    owner_contexts: HashMap<String, (u64, String)>,
    reaper: Option<tokio::task::JoinHandle<()>>,
    /// When the last session closed (the browser stops after the idle timeout).
    empty_since: Option<Instant>,
}

pub(crate) struct Shared {
    processes: Arc<dyn ProcessOps>,
    settings: Settings,
    state: tokio::sync::Mutex<State>,
    generation: AtomicU64,
    next_session: AtomicU64,
}

impl Shared {
    /// The session `id` of the caller; another owner's is reported as missing, exactly like
    /// one that never existed. A lost session is forgotten and reported so.
    pub(crate) async fn session(
        &self,
        ctx: &CallContext,
        id: &str,
    ) -> Result<Arc<Session>, ToolError> {
        let session = {
            let state = self.state.lock().await;
            state
                .sessions
                .get(id)
                .filter(|s| s.owner == ctx.owner.0)
                .cloned()
        };
        let Some(session) = session else {
            return Err(ToolError::NotFound(format!(
                "no browser session `{id}`; browser_list shows yours, browser_open starts one"
            )));
        };
        if let Some(why) = session.lost() {
            self.forget(&session.id).await;
            return Err(lost_error(id, &why));
        }
        session.touch();
        Ok(session)
    }

    /// The running browser, started (again) if there is none or it died.
    async fn browser(self: &Arc<Self>) -> Result<Arc<Browser>, ToolError> {
        let mut state = self.state.lock().await;
        if let Some(browser) = &state.browser
            && browser.alive()
        {
            return Ok(browser.clone());
        }
        if let Some(dead) = state.browser.take() {
            tracing::warn!(
                generation = dead.generation,
                "the browser stopped; starting a new one"
            );
            dead.process
                .terminate(toolshed_ops::process::Stop::graceful())
                .await;
        }
        let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
        let browser = Arc::new(
            Browser::launch(self.processes.as_ref(), &self.settings, generation)
                .await
                .map_err(ToolError::failed)?,
        );
        state.owner_contexts.clear();
        state.empty_since = Some(Instant::now());
        spawn_event_task(&browser);
        state.browser = Some(browser.clone());
        if state.reaper.as_ref().is_none_or(|r| r.is_finished()) {
            state.reaper = Some(tokio::spawn(reap(Arc::downgrade(self))));
        }
        Ok(browser)
    }

    /// Opens a page for `owner` (after the caps are checked) and returns its session.
    pub(crate) async fn new_session(
        self: &Arc<Self>,
        owner: &str,
        timeout: Duration,
    ) -> Result<Arc<Session>, ToolError> {
        {
            let state = self.state.lock().await;
            let live: Vec<_> = state
                .sessions
                .values()
                .filter(|s| s.lost().is_none())
                .collect();
            let mine = live.iter().filter(|s| s.owner == owner).count();
            if mine >= self.settings.max_sessions_per_owner {
                return Err(ToolError::Conflict(format!(
                    "you have {mine} browser sessions open, the most `[browser] max_sessions_per_owner` allows; close one with browser_close (browser_list shows them)"
                )));
            }
            if live.len() >= self.settings.max_sessions {
                return Err(ToolError::Conflict(format!(
                    "{} browser sessions are open, the most `[browser] max_sessions` allows; close one of yours with browser_close, or try again later",
                    live.len()
                )));
            }
        }
        let browser = self.browser().await?;
        if let Some(used) = browser.memory() {
            let limit = self.settings.max_memory_mb * 1024 * 1024;
            if used > limit {
                return Err(ToolError::Conflict(format!(
                    "the browser uses {} MiB, over `[browser] max_memory_mb` = {}; close a session with browser_close first",
                    used / (1024 * 1024),
                    self.settings.max_memory_mb
                )));
            }
        }
        let cdp = &browser.cdp;
        let fail = |e: CdpError| ToolError::failed(format!("cannot open a page: {e}"));
        let (context, own_context) = match self.settings.profile {
            Profile::Session => {
                let id = new_context(cdp, timeout).await.map_err(fail)?;
                (id.clone(), Some(id))
            }
            Profile::Owner => {
                let known = {
                    let state = self.state.lock().await;
                    state
                        .owner_contexts
                        .get(owner)
                        .filter(|(g, _)| *g == browser.generation)
                        .map(|(_, c)| c.clone())
                };
                match known {
                    Some(context) => (context, None),
                    None => {
                        let id = new_context(cdp, timeout).await.map_err(fail)?;
                        self.state
                            .lock()
                            .await
                            .owner_contexts
                            .insert(owner.to_string(), (browser.generation, id.clone()));
                        (id, None)
                    }
                }
            }
        };
        // Downloads are off: a page cannot write files through the browser.
        cdp.call(
            "Browser.setDownloadBehavior",
            json!({"behavior": "deny", "browserContextId": context}),
            None,
            timeout,
        )
        .await
        .map_err(fail)?;
        let target = cdp
            .call(
                "Target.createTarget",
                json!({"url": "about:blank", "browserContextId": context}),
                None,
                timeout,
            )
            .await
            .map_err(fail)?["targetId"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let attached = cdp
            .call(
                "Target.attachToTarget",
                json!({"targetId": target, "flatten": true}),
                None,
                timeout,
            )
            .await
            .map_err(fail)?;
        let cdp_session = attached["sessionId"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let page = Arc::new(PageState::default());
        browser
            .pages
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(cdp_session.clone(), page.clone());
        let id = format!("b{}", self.next_session.fetch_add(1, Ordering::Relaxed));
        let session = Arc::new(Session {
            id: id.clone(),
            owner: owner.to_string(),
            target,
            cdp_session,
            own_context,
            browser: browser.clone(),
            created: SystemTime::now(),
            last_used: Mutex::new(Instant::now()),
            page,
            busy: tokio::sync::Mutex::new(()),
        });
        // The viewport is exactly the configured size (a headless window's is not).
        let viewport = json!({
            "width": self.settings.width, "height": self.settings.height,
            "deviceScaleFactor": 1, "mobile": false,
        });
        for (method, params) in [
            ("Page.enable", json!({})),
            ("Network.enable", json!({})),
            ("Runtime.enable", json!({})),
            ("Emulation.setDeviceMetricsOverride", viewport),
        ] {
            if let Err(e) = session.call(method, params, timeout).await {
                self.sessions_insert(session.clone()).await;
                self.close(&id).await;
                return Err(e);
            }
        }
        self.sessions_insert(session.clone()).await;
        Ok(session)
    }

    async fn sessions_insert(&self, session: Arc<Session>) {
        let mut state = self.state.lock().await;
        state.empty_since = None;
        state.sessions.insert(session.id.clone(), session);
    }

    /// The caller's sessions, oldest first.
    pub(crate) async fn sessions_of(&self, owner: &str) -> Vec<Arc<Session>> {
        let state = self.state.lock().await;
        let mut mine: Vec<_> = state
            .sessions
            .values()
            .filter(|s| s.owner == owner)
            .cloned()
            .collect();
        mine.sort_by_key(|s| s.created);
        mine
    }

    /// Forgets session `id` without talking to the browser (it is gone).
    async fn forget(&self, id: &str) -> Option<Arc<Session>> {
        let mut state = self.state.lock().await;
        let session = state.sessions.remove(id)?;
        session
            .browser
            .pages
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&session.cdp_session);
        if state.sessions.is_empty() {
            state.empty_since = Some(Instant::now());
        }
        Some(session)
    }

    /// Closes session `id`: its page, and its browser context when it has its own.
    pub(crate) async fn close(&self, id: &str) {
        let Some(session) = self.forget(id).await else {
            return;
        };
        let cdp = &session.browser.cdp;
        let quick = Duration::from_secs(5);
        let _ = cdp
            .call(
                "Target.closeTarget",
                json!({"targetId": session.target}),
                None,
                quick,
            )
            .await;
        if let Some(context) = &session.own_context {
            let _ = cdp
                .call(
                    "Target.disposeBrowserContext",
                    json!({"browserContextId": context}),
                    None,
                    quick,
                )
                .await;
        }
    }

    /// Closes every session and stops the browser (host shutdown, the plugin disabled).
    async fn shut_down(&self) {
        let (browser, reaper) = {
            let mut state = self.state.lock().await;
            state.sessions.clear();
            state.owner_contexts.clear();
            (state.browser.take(), state.reaper.take())
        };
        if let Some(reaper) = reaper {
            reaper.abort();
        }
        if let Some(browser) = browser {
            browser.stop().await;
        }
    }
}

/// A new browser context (its own cookies, storage and cache), disposed if the browser
/// connection goes.
async fn new_context(cdp: &cdp::Cdp, timeout: Duration) -> Result<String, CdpError> {
    let made = cdp
        .call(
            "Target.createBrowserContext",
            json!({"disposeOnDetach": true}),
            None,
            timeout,
        )
        .await?;
    Ok(made["browserContextId"]
        .as_str()
        .unwrap_or_default()
        .to_string())
}

/// Keeps each page's [`PageState`] up to date from the browser's events.
fn spawn_event_task(browser: &Arc<Browser>) {
    let mut events = browser.cdp.events();
    let pages = browser.pages.clone();
    tokio::spawn(async move {
        loop {
            let event = match events.recv().await {
                Ok(event) => event,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            let page = |session: Option<&str>| {
                session.and_then(|s| {
                    pages
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get(s)
                        .cloned()
                })
            };
            match event.method.as_str() {
                "Network.requestWillBeSent" => {
                    if let Some(p) = page(event.session.as_deref()) {
                        p.network(1);
                    }
                }
                "Network.loadingFinished" | "Network.loadingFailed" => {
                    if let Some(p) = page(event.session.as_deref()) {
                        p.network(-1);
                    }
                }
                "Inspector.targetCrashed" => {
                    if let Some(p) = page(event.session.as_deref()) {
                        p.lose("its page crashed");
                    }
                }
                "Target.detachedFromTarget" => {
                    if let Some(p) = page(event.params["sessionId"].as_str()) {
                        p.lose("its page was closed");
                    }
                }
                cdp::DISCONNECTED => return,
                _ => {}
            }
        }
    });
}

/// Closes idle sessions, and stops the browser once none has been open for the idle
/// timeout. Ends when the plugin is gone.
async fn reap(shared: Weak<Shared>) {
    loop {
        let Some(idle_timeout) = shared
            .upgrade()
            .map(|s| Duration::from_secs(s.settings.idle_timeout_secs.max(1)))
        else {
            return;
        };
        tokio::time::sleep(
            (idle_timeout / 4).clamp(Duration::from_millis(250), Duration::from_secs(30)),
        )
        .await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let idle: Vec<String> = {
            let state = shared.state.lock().await;
            state
                .sessions
                .values()
                .filter(|s| s.idle() >= idle_timeout || s.lost().is_some())
                .map(|s| s.id.clone())
                .collect()
        };
        for id in idle {
            tracing::info!(session = %id, "closing an idle browser session");
            shared.close(&id).await;
        }
        let stop = {
            let mut state = shared.state.lock().await;
            let quiet = state.sessions.is_empty()
                && state
                    .empty_since
                    .is_none_or(|t| t.elapsed() >= idle_timeout);
            if quiet { state.browser.take() } else { None }
        };
        if let Some(browser) = stop {
            tracing::info!("stopping the idle browser");
            browser.stop().await;
        }
    }
}
