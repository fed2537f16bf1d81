//! `system.download`: `download_file` and `download_batch` fetch URLs into workspace
//! files through the host's guarded HTTP client (public addresses only, plus `[web]
//! allow`, checked on every redirect), streamed to a partial file beside the target and
//! renamed into place once complete (and, with `sha256`, verified). A partial file left by
//! an interrupted download is resumed with a `Range` request where the server supports
//! ranges. Progress is reported in bytes (of the total, when the server says it).

pub(crate) use toolshed_kit::{args, on_files};

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolshed_core::{
    BuiltinPlugin, CallContext, HttpRequest, NetPolicy, Plugin, PluginKind, PluginManifest,
    Progress, Tool, ToolAnnotations, ToolError, ToolOutput, ToolSpec,
};
use toolshed_ops::{FileOps, NetClient, Overwrite, Parents, Services};

use crate::on_files as blocking;
use url::Url;

#[cfg(test)]
mod tests;

/// The plugin's id.
pub const PLUGIN_ID: &str = "system.download";

/// The largest file downloaded.
pub const MAX_DOWNLOAD_BYTES: u64 = 1 << 30;

/// The most redirects followed.
const MAX_REDIRECTS: usize = 5;

/// The most items in one batch, and downloads at once.
const MAX_BATCH: usize = 100;
const MAX_CONCURRENCY: usize = 8;
const DEFAULT_CONCURRENCY: usize = 3;

/// How long reaching a server's answer may take.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// The suffix of a partial download beside its target.
const PARTIAL: &str = ".toolshed-partial";

/// Progress is reported at most every this many bytes.
const REPORT_EVERY: u64 = 256 * 1024;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FileArgs {
    /// http(s) URL
    #[schemars(length(min = 1, max = 8192))]
    url: String,
    /// Workspace path to write
    #[schemars(length(min = 1, max = 4096))]
    path: String,
    /// Expected SHA-256, hex
    #[schemars(length(min = 64, max = 64))]
    sha256: Option<String>,
    /// Replace an existing file
    #[serde(default)]
    overwrite: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Item {
    /// http(s) URL
    #[schemars(length(min = 1, max = 8192))]
    url: String,
    /// Workspace path to write
    #[schemars(length(min = 1, max = 4096))]
    path: String,
    /// Expected SHA-256, hex
    #[schemars(length(min = 64, max = 64))]
    sha256: Option<String>,
}

fn default_concurrency() -> usize {
    DEFAULT_CONCURRENCY
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct BatchArgs {
    /// What to download
    #[schemars(length(min = 1, max = MAX_BATCH))]
    items: Vec<Item>,
    /// Downloads at once
    #[serde(default = "default_concurrency")]
    #[schemars(range(min = 1, max = MAX_CONCURRENCY))]
    concurrency: usize,
    /// Replace existing files
    #[serde(default)]
    overwrite: bool,
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    File,
    Batch,
}

struct DownloadTool {
    spec: ToolSpec,
    kind: Kind,
    files: Arc<dyn FileOps>,
    net: Arc<NetClient>,
}

/// The `system.download` plugin over `services`' files and HTTP client.
pub fn plugin(services: &Services) -> Arc<dyn Plugin> {
    let annotations = ToolAnnotations {
        read_only: false,
        destructive: false,
        idempotent: true,
        open_world: true,
    };
    let tool = |spec: ToolSpec, kind: Kind| -> Arc<dyn Tool> {
        let mut spec = spec.group("download").annotations(annotations);
        spec.mutates_state = true;
        spec.danger = toolshed_core::Danger::High;
        spec.default_timeout_ms = Some(600_000);
        Arc::new(DownloadTool {
            spec,
            kind,
            files: services.ops.files.clone(),
            net: services.net.clone(),
        })
    };
    let tools = vec![
        tool(
            ToolSpec::new(
                "download_file",
                "Download a URL into a workspace file: streamed, resumed where the server allows ranges, checked against sha256 when given, and put in place only once complete. Public addresses only (plus [web] allow), on every redirect. Returns { path, bytes, sha256, resumed, url }.",
            )
            .title("Download a file")
            .input_schema(crate::args::schema::<FileArgs>())
            .touch(toolshed_core::TouchKind::Writes, "path")
            .touch(toolshed_core::TouchKind::Hosts, "url"),
            Kind::File,
        ),
        tool(
            ToolSpec::new(
                "download_batch",
                "Download several URLs into workspace files, a few at once (concurrency, default 3), each as download_file does. Returns { downloaded, failed, items: [{ path, url, ok, bytes?, sha256?, error? }] }.",
            )
            .title("Download files")
            .input_schema(crate::args::schema::<BatchArgs>())
            .touch(toolshed_core::TouchKind::Writes, "items.*.path")
            .touch(toolshed_core::TouchKind::Hosts, "items.*.url"),
            Kind::Batch,
        ),
    ];
    let mut manifest = PluginManifest::new(
        PLUGIN_ID,
        env!("CARGO_PKG_VERSION"),
        "Downloads",
        PluginKind::Builtin,
    );
    manifest.description =
        "Download URLs into workspace files: streamed, resumable, checksum-verified, through the guarded HTTP client.".into();
    manifest.tags = vec!["download".into(), "web".into()];
    Arc::new(BuiltinPlugin::new(manifest, tools))
}

#[async_trait]
impl Tool for DownloadTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        match self.kind {
            Kind::File => {
                let args: FileArgs = crate::args::parse(args)?;
                let job = Job::new(
                    &args.url,
                    &args.path,
                    args.sha256.as_deref(),
                    args.overwrite,
                )?;
                let done = job.run(&ctx, &self.files, &self.net, None).await?;
                let text = format!(
                    "downloaded {} bytes to {}{}{}",
                    done.bytes,
                    done.path,
                    if done.resumed { " (resumed)" } else { "" },
                    if job.sha256.is_some() {
                        ", sha256 verified"
                    } else {
                        ""
                    }
                );
                Ok(ToolOutput::text_and_structured(text, done.json()))
            }
            Kind::Batch => self.batch(ctx, crate::args::parse(args)?).await,
        }
    }
}

impl DownloadTool {
    async fn batch(&self, ctx: CallContext, args: BatchArgs) -> Result<ToolOutput, ToolError> {
        let mut jobs = Vec::with_capacity(args.items.len());
        for (i, item) in args.items.iter().enumerate() {
            let job = Job::new(
                &item.url,
                &item.path,
                item.sha256.as_deref(),
                args.overwrite,
            )
            .map_err(|e| ToolError::invalid_at(format!("/items/{i}"), e.to_string()))?;
            if jobs.iter().any(|j: &Job| j.path == job.path) {
                return Err(ToolError::invalid_at(
                    format!("/items/{i}/path"),
                    format!(
                        "`{}` is the target of two items; give each its own path",
                        job.path
                    ),
                ));
            }
            jobs.push(job);
        }
        let total = jobs.len();
        let limit = args.concurrency.clamp(1, MAX_CONCURRENCY);
        let gate = Arc::new(tokio::sync::Semaphore::new(limit));
        let finished = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let runs = jobs.iter().map(|job| {
            let (gate, finished, ctx) = (gate.clone(), finished.clone(), &ctx);
            async move {
                let _slot = gate.acquire().await;
                let out = job
                    .run(ctx, &self.files, &self.net, Some((finished.clone(), total)))
                    .await;
                let n = finished.fetch_add(1, std::sync::atomic::Ordering::AcqRel) + 1;
                ctx.progress.send(Progress {
                    progress: Some(n as f64),
                    total: Some(total as f64),
                    message: Some(format!("{n} of {total} done: {}", job.path)),
                });
                out
            }
        });
        let results = futures_util::future::join_all(runs).await;
        let mut items = Vec::with_capacity(total);
        let (mut ok, mut failed) = (0, 0);
        let mut text = String::new();
        for (job, result) in jobs.iter().zip(results) {
            match result {
                Ok(done) => {
                    ok += 1;
                    text.push_str(&format!("ok  {} ({} bytes)\n", done.path, done.bytes));
                    let mut v = done.json();
                    v["ok"] = json!(true);
                    items.push(v);
                }
                Err(e) => {
                    failed += 1;
                    text.push_str(&format!("err {}: {e}\n", job.path));
                    items.push(json!({"path": job.path, "url": job.shown, "ok": false, "error": e.to_string()}));
                }
            }
        }
        text.insert_str(0, &format!("{ok} of {total} downloaded\n"));
        let out = ToolOutput::text_and_structured(
            text.trim_end().to_string(),
            json!({"downloaded": ok, "failed": failed, "items": items}),
        );
        Ok(if failed > 0 { out.into_error() } else { out })
    }
}

/// One download, checked.
struct Job {
    url: Url,
    /// The URL without credentials or query, for messages.
    shown: String,
    path: String,
    sha256: Option<String>,
    overwrite: bool,
}

/// A finished download.
struct Done {
    path: String,
    url: String,
    bytes: u64,
    sha256: String,
    resumed: bool,
}

impl Done {
    fn json(&self) -> Value {
        json!({"path": self.path, "url": self.url, "bytes": self.bytes, "sha256": self.sha256, "resumed": self.resumed})
    }
}

impl Job {
    fn new(
        url: &str,
        path: &str,
        sha256: Option<&str>,
        overwrite: bool,
    ) -> Result<Self, ToolError> {
        let parsed = Url::parse(url.trim())
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
            .ok_or_else(|| {
                ToolError::invalid_at(
                    "/url",
                    format!(
                        "`{}` is not an absolute http or https URL",
                        toolshed_ops::net::redact_url(url)
                    ),
                )
            })?;
        let path = path.trim().trim_start_matches("./").to_string();
        if path.is_empty() || path.ends_with('/') {
            return Err(ToolError::invalid_at(
                "/path",
                "`path` must name a file in the workspace, e.g. downloads/data.csv",
            ));
        }
        let sha256 = match sha256 {
            None => None,
            Some(s) => {
                let hex = s.trim().to_ascii_lowercase();
                if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                    return Err(ToolError::invalid_at(
                        "/sha256",
                        "`sha256` must be 64 hexadecimal characters",
                    ));
                }
                Some(hex)
            }
        };
        let shown = toolshed_ops::net::redact_url(parsed.as_str());
        Ok(Self {
            url: parsed,
            shown,
            path,
            sha256,
            overwrite,
        })
    }

    fn partial(&self) -> String {
        match self.path.rsplit_once('/') {
            Some((dir, name)) => format!("{dir}/.{name}{PARTIAL}"),
            None => format!(".{}{PARTIAL}", self.path),
        }
    }

    async fn run(
        &self,
        ctx: &CallContext,
        files: &Arc<dyn FileOps>,
        net: &NetClient,
        batch: Option<(Arc<std::sync::atomic::AtomicUsize>, usize)>,
    ) -> Result<Done, ToolError> {
        let target = self.path.clone();
        let partial = self.partial();
        // An existing target is kept unless the call says to replace it.
        if !self.overwrite
            && blocking(files, move |f| f.stat(&target, toolshed_ops::Follow::No))
                .await
                .is_ok()
        {
            return Err(ToolError::Conflict(format!(
                "`{}` exists; pass overwrite: true to replace it",
                self.path
            )));
        }
        // What an interrupted download left: resumed if the server allows.
        let (mut hasher, mut have) = {
            let partial = partial.clone();
            match blocking(files, move |f| f.read(&partial, MAX_DOWNLOAD_BYTES)).await {
                Ok(contents) if !contents.truncated() => {
                    let mut hasher = Sha256::new();
                    hasher.update(&contents.bytes);
                    (hasher, contents.bytes.len() as u64)
                }
                _ => (Sha256::new(), 0),
            }
        };
        let mut headers = vec![("accept-encoding".to_string(), "identity".to_string())];
        if have > 0 {
            headers.push(("range".into(), format!("bytes={have}-")));
        }
        let request = HttpRequest {
            method: "GET".into(),
            url: self.url.to_string(),
            headers,
            body: None,
            timeout: time_left(ctx).min(HEAD_TIMEOUT),
            max_response_bytes: usize::try_from(MAX_DOWNLOAD_BYTES).unwrap_or(usize::MAX),
        };
        // The client's one redirect loop: every hop checked, credentials dropped across
        // origins, the refused hop named.
        let (response, _, _) = net
            .send_streaming_following(request, &NetPolicy::Public, &ctx.cancel, MAX_REDIRECTS)
            .await?;
        let resumed = match response.status {
            206 if have > 0 => true,
            200 => {
                // The server sends it all: start over.
                if have > 0 {
                    hasher = Sha256::new();
                    have = 0;
                }
                let partial = partial.clone();
                blocking(files, move |f| f.write(&partial, b"", Parents::Create)).await?;
                false
            }
            416 if have > 0 => {
                // The partial file is already whole (or stale): start over next time.
                let partial = partial.clone();
                let _ = blocking(files, move |f| f.remove(&partial, false)).await;
                return Err(ToolError::Failed(format!(
                    "{} refused to resume at byte {have} (HTTP 416); the partial file was removed, so the next call starts over",
                    self.shown
                )));
            }
            status => {
                return Err(ToolError::Failed(format!(
                    "{} answered HTTP {status}{}",
                    self.shown,
                    if status == 404 { ": not found" } else { "" }
                )));
            }
        };
        let length =
            header(&response.headers, "content-length").and_then(|v| v.parse::<u64>().ok());
        let total = length.map(|n| n + have);
        if let Some(total) = total.filter(|t| *t > MAX_DOWNLOAD_BYTES) {
            return Err(ToolError::Failed(format!(
                "{} is {total} bytes; downloads are limited to {MAX_DOWNLOAD_BYTES} bytes",
                self.shown
            )));
        }
        let mut body = response.body;
        let mut next_report = have + REPORT_EVERY;
        // Each report says more than the one before (MCP progress only grows).
        let reported = std::sync::atomic::AtomicU64::new(u64::MAX);
        let report = |done: u64| {
            let before = reported.swap(done, std::sync::atomic::Ordering::Relaxed);
            if batch.is_none() && before != done {
                ctx.progress.send(Progress {
                    progress: Some(done as f64),
                    total: total.map(|t| t as f64),
                    message: Some(match total {
                        Some(t) => format!("{done} of {t} bytes"),
                        None => format!("{done} bytes"),
                    }),
                });
            }
        };
        report(have);
        loop {
            let chunk = tokio::select! {
                () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
                chunk = body.recv() => chunk,
            };
            let chunk = match chunk {
                None => break,
                Some(Ok(chunk)) => chunk,
                Some(Err(why)) => {
                    return Err(ToolError::Failed(format!(
                        "the download from {} broke off after {have} bytes ({why}); call again to resume",
                        self.shown
                    )));
                }
            };
            hasher.update(&chunk);
            have += chunk.len() as u64;
            if have > MAX_DOWNLOAD_BYTES {
                return Err(ToolError::Failed(format!(
                    "{} sent more than {MAX_DOWNLOAD_BYTES} bytes; stopped",
                    self.shown
                )));
            }
            let partial = partial.clone();
            blocking(files, move |f| f.append(&partial, &chunk)).await?;
            if have >= next_report {
                report(have);
                next_report = have + REPORT_EVERY;
            }
        }
        if let Some(total) = total
            && have < total
        {
            return Err(ToolError::Failed(format!(
                "the download from {} ended after {have} of {total} bytes; call again to resume",
                self.shown
            )));
        }
        report(have);
        let digest = hex(&hasher.finalize());
        if let Some(expected) = &self.sha256
            && *expected != digest
        {
            let partial = partial.clone();
            let _ = blocking(files, move |f| f.remove(&partial, false)).await;
            return Err(ToolError::Failed(format!(
                "the file from {} has sha256 {digest}, not the expected {expected}; it was not kept",
                self.shown
            )));
        }
        let (from, to) = (partial, self.path.clone());
        let overwrite = if self.overwrite {
            Overwrite::Yes
        } else {
            Overwrite::No
        };
        blocking(files, move |f| f.rename(&from, &to, overwrite)).await?;
        Ok(Done {
            path: self.path.clone(),
            url: self.shown.clone(),
            bytes: have,
            sha256: digest,
            resumed,
        })
    }
}

fn header(headers: &[(String, String)], name: &str) -> Option<String> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim().to_string())
}

fn time_left(ctx: &CallContext) -> Duration {
    ctx.deadline
        .saturating_duration_since(std::time::Instant::now())
        .max(Duration::from_millis(1))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
