//! `system.mail`: `mail_send` over SMTP with STARTTLS or implicit TLS and AUTH, with
//! workspace files as attachments. The relay, the sender and the login are the plugin's
//! config (the password a secret); the relay is the one a person named, so it is reached
//! wherever it is. Every failure says what the server answered and what to check, never
//! the password.

pub(crate) use toolshed_kit::{args, on_files};

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use lettre::message::header::ContentType;
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolshed_core::{
    BuiltinPlugin, CallContext, ConfigField, ConfigFieldType, Danger, Plugin, PluginKind,
    PluginManifest, Tool, ToolAnnotations, ToolError, ToolOutput, ToolSpec,
};
use toolshed_ops::{FileOps, Services};

#[cfg(test)]
mod tests;

/// The plugin's id.
pub const PLUGIN_ID: &str = "system.mail";

/// The most recipients of one message, to, cc and bcc together.
const MAX_RECIPIENTS: usize = 50;
/// The longest text or HTML body.
const MAX_BODY_BYTES: usize = 1 << 20;
/// The most attachments, and their largest total size.
const MAX_ATTACHMENTS: usize = 10;
const MAX_ATTACHMENT_BYTES: u64 = 20 << 20;
/// How long the exchange with the server may take, by default.
const DEFAULT_TIMEOUT_MS: u64 = 30_000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SendArgs {
    /// Recipients (addresses, or "Name <address>")
    #[schemars(length(min = 1, max = MAX_RECIPIENTS))]
    to: Vec<String>,
    /// Copy recipients
    #[serde(default)]
    #[schemars(length(max = MAX_RECIPIENTS))]
    cc: Vec<String>,
    /// Hidden recipients
    #[serde(default)]
    #[schemars(length(max = MAX_RECIPIENTS))]
    bcc: Vec<String>,
    /// The subject
    #[schemars(length(min = 1, max = 998))]
    subject: String,
    /// Plain-text body
    text: Option<String>,
    /// HTML body
    html: Option<String>,
    /// Workspace files to attach
    #[serde(default)]
    #[schemars(length(max = MAX_ATTACHMENTS))]
    attachments: Vec<String>,
}

/// The config, as read at each call.
struct Relay {
    host: String,
    port: u16,
    security: String,
    user: Option<String>,
    password: Option<String>,
    from: Mailbox,
    ca_pem: Option<Vec<u8>>,
    timeout: Duration,
}

struct MailTool {
    spec: ToolSpec,
    files: Arc<dyn FileOps>,
}

fn field(key: &str, ty: ConfigFieldType, description: &str) -> ConfigField {
    ConfigField {
        key: key.into(),
        label: None,
        field_type: ty,
        description: Some(description.into()),
        default: None,
        options: Vec::new(),
        secret: false,
        required: false,
        writable: false,
    }
}

/// The `system.mail` plugin: its attachments are read through `services`' files.
pub fn plugin(services: &Services) -> Arc<dyn Plugin> {
    let mut spec = ToolSpec::new(
        "mail_send",
        "Send an email through the configured SMTP server: to, cc, bcc, a subject, a text and/or HTML body, and workspace files as attachments. Every call sends a new message. Returns { sent, to, cc, bcc, subject, attachments, server }.",
    )
    .title("Send an email")
    .group("mail")
    .annotations(ToolAnnotations {
        read_only: false,
        destructive: false,
        idempotent: false,
        open_world: true,
    })
    .input_schema(crate::args::schema::<SendArgs>())
    .touch(toolshed_core::TouchKind::Reads, "attachments.*");
    spec.mutates_state = true;
    spec.danger = Danger::High;
    let mut manifest = PluginManifest::new(
        PLUGIN_ID,
        env!("CARGO_PKG_VERSION"),
        "Mail",
        PluginKind::Builtin,
    );
    manifest.description =
        "Send email over SMTP (STARTTLS or TLS, with AUTH), with workspace files attached.".into();
    manifest.tags = vec!["mail".into(), "email".into(), "notify".into()];
    let mut host = field(
        "host",
        ConfigFieldType::String,
        "The SMTP server, e.g. smtp.example.com.",
    );
    host.required = true;
    let mut port = field(
        "port",
        ConfigFieldType::Number,
        "The SMTP port: 587 for STARTTLS, 465 for TLS.",
    );
    port.default = Some(json!(587));
    let mut security = field(
        "security",
        ConfigFieldType::Select,
        "starttls (upgrade the connection, required), tls (TLS from the start) or none (plain: only for a relay on this machine).",
    );
    security.options = vec![json!("starttls"), json!("tls"), json!("none")];
    security.default = Some(json!("starttls"));
    let user = field(
        "user",
        ConfigFieldType::String,
        "The login, when the server asks for one.",
    );
    let mut password = field(
        "password",
        ConfigFieldType::String,
        "The password; set it with `printf %s \"$PASSWORD\" | toolshed plugins config system.mail password -`.",
    );
    password.secret = true;
    let mut from = field(
        "from",
        ConfigFieldType::String,
        "The sender, e.g. \"Build bot <bot@example.com>\".",
    );
    from.required = true;
    let ca_file = field(
        "ca_file",
        ConfigFieldType::String,
        "A PEM file of a certificate authority to trust besides the usual ones (a private relay).",
    );
    let mut timeout = field(
        "timeout_ms",
        ConfigFieldType::Number,
        "How long the exchange with the server may take, in milliseconds.",
    );
    timeout.default = Some(json!(DEFAULT_TIMEOUT_MS));
    manifest.config = vec![host, port, security, user, password, from, ca_file, timeout];
    let tool = MailTool {
        spec,
        files: services.ops.files.clone(),
    };
    Arc::new(BuiltinPlugin::new(manifest, vec![Arc::new(tool)]))
}

#[async_trait]
impl Tool for MailTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        let args: SendArgs = crate::args::parse(args)?;
        let relay = relay(&ctx.config)?;
        let message = self.message(&relay, &args).await?;
        let transport = transport(&relay)?;
        let sent = tokio::select! {
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            sent = transport.send(message) => sent,
        };
        sent.map_err(|e| smtp_error(&relay, &e))?;
        let server = format!("{}:{}", relay.host, relay.port);
        let out = json!({
            "sent": true, "to": args.to, "cc": args.cc, "bcc": args.bcc.len(),
            "subject": args.subject, "attachments": args.attachments, "server": server,
        });
        let text = format!(
            "sent \"{}\" to {} recipient(s) through {server}{}",
            args.subject,
            args.to.len() + args.cc.len() + args.bcc.len(),
            if args.attachments.is_empty() {
                String::new()
            } else {
                format!(" with {} attachment(s)", args.attachments.len())
            }
        );
        Ok(ToolOutput::text_and_structured(text, out))
    }
}

impl MailTool {
    async fn message(&self, relay: &Relay, args: &SendArgs) -> Result<Message, ToolError> {
        let count = args.to.len() + args.cc.len() + args.bcc.len();
        if count > MAX_RECIPIENTS {
            return Err(ToolError::invalid(format!(
                "{count} recipients; at most {MAX_RECIPIENTS} in one message"
            )));
        }
        if args.text.is_none() && args.html.is_none() {
            return Err(ToolError::invalid(
                "give `text`, `html` or both: the message has no body",
            ));
        }
        for (name, body) in [("text", &args.text), ("html", &args.html)] {
            if let Some(b) = body
                && b.len() > MAX_BODY_BYTES
            {
                return Err(ToolError::invalid_at(
                    format!("/{name}"),
                    format!("`{name}` is {} bytes; at most {MAX_BODY_BYTES}", b.len()),
                ));
            }
        }
        if args.subject.contains(['\r', '\n']) {
            return Err(ToolError::invalid_at("/subject", "the subject is one line"));
        }
        let mut builder = Message::builder()
            .from(relay.from.clone())
            .subject(args.subject.clone());
        for (field, list) in [("to", &args.to), ("cc", &args.cc), ("bcc", &args.bcc)] {
            for (i, raw) in list.iter().enumerate() {
                let mailbox: Mailbox = raw.trim().parse().map_err(|e| {
                    ToolError::invalid_at(
                        format!("/{field}/{i}"),
                        format!("`{}` is not an email address ({e}); write name@example.com or \"Name <name@example.com>\"", raw.chars().take(100).collect::<String>()),
                    )
                })?;
                builder = match field {
                    "to" => builder.to(mailbox),
                    "cc" => builder.cc(mailbox),
                    _ => builder.bcc(mailbox),
                };
            }
        }
        let body = match (&args.text, &args.html) {
            (Some(text), Some(html)) => {
                MultiPart::alternative_plain_html(text.clone(), html.clone())
            }
            (Some(text), None) => MultiPart::mixed().singlepart(SinglePart::plain(text.clone())),
            (None, Some(html)) => MultiPart::mixed().singlepart(SinglePart::html(html.clone())),
            (None, None) => unreachable_body()?,
        };
        let mut total = 0u64;
        let mut parts = Vec::with_capacity(args.attachments.len());
        for (i, path) in args.attachments.iter().enumerate() {
            let owned = path.clone();
            let left = MAX_ATTACHMENT_BYTES - total;
            let contents = crate::on_files(&self.files, move |f| f.read(&owned, left))
                .await
                .map_err(|e| ToolError::invalid_at(format!("/attachments/{i}"), e.to_string()))?;
            if contents.truncated() {
                return Err(ToolError::invalid_at(
                    format!("/attachments/{i}"),
                    format!(
                        "the attachments pass {} MiB together; send fewer or smaller files",
                        MAX_ATTACHMENT_BYTES >> 20
                    ),
                ));
            }
            total += contents.bytes.len() as u64;
            let name = path.rsplit('/').next().unwrap_or(path).to_string();
            let kind = ContentType::parse(content_type(&name)).unwrap_or(
                ContentType::parse("application/octet-stream")
                    .map_err(|e| ToolError::Internal(e.to_string()))?,
            );
            parts.push(Attachment::new(name).body(contents.bytes, kind));
        }
        let multipart = if parts.is_empty() {
            body
        } else {
            let mut mixed = MultiPart::mixed().multipart(body);
            for part in parts {
                mixed = mixed.singlepart(part);
            }
            mixed
        };
        builder
            .multipart(multipart)
            .map_err(|e| ToolError::invalid(format!("the message cannot be built: {e}")))
    }
}

fn unreachable_body() -> Result<MultiPart, ToolError> {
    Err(ToolError::invalid("the message has no body"))
}

/// The content type of an attachment, from its name.
fn content_type(name: &str) -> &'static str {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "txt" | "log" | "md" => "text/plain; charset=utf-8",
        "csv" => "text/csv; charset=utf-8",
        "html" | "htm" => "text/html; charset=utf-8",
        "json" => "application/json",
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "zip" => "application/zip",
        "gz" | "tgz" => "application/gzip",
        _ => "application/octet-stream",
    }
}

fn relay(config: &Map<String, Value>) -> Result<Relay, ToolError> {
    let text = |key: &str| {
        config
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let unconfigured = |key: &str, how: &str| ToolError::Unconfigured {
        message: format!("mail_send needs `{key}`: {how}"),
        variables: Vec::new(),
    };
    let host = text("host").ok_or_else(|| {
        unconfigured(
            "host",
            "set it with `toolshed plugins config system.mail host smtp.example.com`",
        )
    })?;
    let from_text = text("from").ok_or_else(|| {
        unconfigured(
            "from",
            "set it with `toolshed plugins config system.mail from \"Bot <bot@example.com>\"`",
        )
    })?;
    let from: Mailbox = from_text.parse().map_err(|e| ToolError::Unconfigured {
        message: format!("the configured sender `{from_text}` is not an email address ({e}); fix it with `toolshed plugins config system.mail from \"Bot <bot@example.com>\"`"),
        variables: Vec::new(),
    })?;
    let port = config
        .get("port")
        .and_then(Value::as_u64)
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p > 0)
        .unwrap_or(587);
    let security = text("security").unwrap_or_else(|| "starttls".into());
    let user = text("user");
    let password = config
        .get("password")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    if user.is_some() != password.is_some() {
        return Err(unconfigured(
            if user.is_some() { "password" } else { "user" },
            "set both `user` and `password` (or neither, for a relay without a login)",
        ));
    }
    let loopback = matches!(host.as_str(), "localhost" | "127.0.0.1" | "::1");
    if security == "none" && user.is_some() && !loopback {
        return Err(ToolError::Unconfigured {
            message: format!(
                "security = none would send the password to {host} in the clear; use starttls or tls"
            ),
            variables: Vec::new(),
        });
    }
    let ca_pem = match text("ca_file") {
        None => None,
        Some(path) => Some(std::fs::read(&path).map_err(|e| ToolError::Unconfigured {
            message: format!("cannot read ca_file `{path}`: {e}"),
            variables: Vec::new(),
        })?),
    };
    let timeout = Duration::from_millis(
        config
            .get("timeout_ms")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_TIMEOUT_MS)
            .clamp(1000, 300_000),
    );
    Ok(Relay {
        host,
        port,
        security,
        user,
        password,
        from,
        ca_pem,
        timeout,
    })
}

fn transport(relay: &Relay) -> Result<AsyncSmtpTransport<Tokio1Executor>, ToolError> {
    let tls = |relay: &Relay| -> Result<TlsParameters, ToolError> {
        let mut builder = TlsParameters::builder(relay.host.clone());
        if let Some(pem) = &relay.ca_pem {
            let cert = Certificate::from_pem(pem).map_err(|e| ToolError::Unconfigured {
                message: format!("ca_file is not a PEM certificate: {e}"),
                variables: Vec::new(),
            })?;
            builder = builder.add_root_certificate(cert);
        }
        builder
            .build_rustls()
            .map_err(|e| ToolError::Internal(format!("TLS cannot be set up: {e}")))
    };
    let mode = match relay.security.as_str() {
        "tls" => Tls::Wrapper(tls(relay)?),
        "none" => Tls::None,
        _ => Tls::Required(tls(relay)?),
    };
    let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(relay.host.clone())
        .port(relay.port)
        .tls(mode)
        .timeout(Some(relay.timeout));
    if let (Some(user), Some(password)) = (&relay.user, &relay.password) {
        builder = builder.credentials(Credentials::new(user.clone(), password.clone()));
    }
    Ok(builder.build())
}

/// What went wrong, with what to check; the password never appears.
fn smtp_error(relay: &Relay, e: &lettre::transport::smtp::Error) -> ToolError {
    let server = format!("{}:{}", relay.host, relay.port);
    let mut said = e.to_string();
    if let Some(password) = &relay.password {
        said = said.replace(password.as_str(), "…");
    }
    let code = e.status().map(|c| c.to_string());
    let hint = match code.as_deref() {
        Some("535" | "534" | "530" | "454") => {
            "the server refused the login: check `user` and `password` (toolshed plugins config system.mail)"
        }
        Some("550" | "551" | "553" | "554" | "501") => {
            "the server refused an address: check the recipients and the sender (`from`)"
        }
        Some("552") => "the message is too large for the server",
        Some(c) if c.starts_with('4') => "a temporary failure: try again later",
        _ if e.is_tls() => {
            "TLS failed: check `security` (starttls on 587, tls on 465) and, for a private relay, `ca_file`"
        }
        _ if e.is_timeout() => {
            "the server did not answer in time: check host, port and `timeout_ms`"
        }
        _ => "check host, port and security",
    };
    ToolError::Failed(format!("mail to {server} failed: {said}; {hint}"))
}
