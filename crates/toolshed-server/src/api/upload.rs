//! `POST /upload` and `GET /uploads/{file}`: files sent to the workspace (Agent Spaces'
//! upload), kept in its `uploads/` folder under a fresh name, so that tools, plugins and
//! workflows reach them by path and people by URL. A body is at most the server's body
//! limit; it is either the file's bytes (`?name=` names it) or a `multipart/form-data`
//! form whose first file part is taken.

use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolshed_host::identity::Caller;
use toolshed_ops::Parents;

use super::{AppState, owner};
use crate::error::ApiError;

/// The workspace folder uploads are kept in.
pub(crate) const UPLOAD_DIR: &str = "uploads";

/// The largest file `GET /uploads/{file}` serves: what an upload may be (the server's
/// default body limit); a larger file put there by other means is read with tools.
const MAX_DOWNLOAD_BYTES: u64 = 4 * 1024 * 1024;

/// The longest name kept of an uploaded file.
const MAX_NAME_CHARS: usize = 100;

/// The query of `POST /upload`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UploadQuery {
    /// The file's name (a raw body's; a form's part names its own). Default `upload`.
    #[schemars(length(max = 255))]
    pub name: Option<String>,
}

/// A file stored.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Uploaded {
    /// Its name in `uploads/`: a fresh prefix and the name it was sent with, made safe.
    pub file: String,
    /// Its workspace path, for tools and plugins (`workspace_read`, `ctx.fs`).
    pub path: String,
    /// Where to download it again (`GET`, with a token).
    pub url: String,
    /// The same URL under the name Agent Spaces' `uploadFile` answers with.
    #[serde(rename = "httpPath")]
    pub http_path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its SHA-256, hex.
    pub sha256: String,
    /// The owner who sent it.
    pub owner: String,
}

/// `name` made a plain file name: its last path part, letters, digits, `.`, `-` and `_`
/// only (others become `_`), not starting with a dot, at most [`MAX_NAME_CHARS`].
fn safe_name(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or("");
    let cleaned: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME_CHARS)
        .collect();
    let cleaned = cleaned.trim_start_matches('.').to_string();
    if cleaned.is_empty() {
        "upload".into()
    } else {
        cleaned
    }
}

/// The file of a `multipart/form-data` body (its file name and bytes): the `file` field,
/// else the first part that names a file; `None` when there is neither.
fn form_file(content_type: &str, body: &[u8]) -> Option<(Option<String>, Vec<u8>)> {
    let boundary = content_type
        .split(';')
        .map(str::trim)
        .find_map(|p| p.strip_prefix("boundary="))?
        .trim_matches('"');
    if boundary.is_empty() {
        return None;
    }
    let delimiter = format!("--{boundary}");
    let mut parts = Vec::new();
    let mut rest = body;
    while let Some(at) = find(rest, delimiter.as_bytes()) {
        rest = &rest[at + delimiter.len()..];
        if rest.starts_with(b"--") {
            break;
        }
        let rest_start = rest.strip_prefix(b"\r\n").unwrap_or(rest);
        let Some(head_end) = find(rest_start, b"\r\n\r\n") else {
            break;
        };
        let head = String::from_utf8_lossy(&rest_start[..head_end]).into_owned();
        let content = &rest_start[head_end + 4..];
        let end = find(content, format!("\r\n{delimiter}").as_bytes()).unwrap_or(content.len());
        let disposition = head
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("content-disposition"))
            .unwrap_or("");
        let field = |key: &str| {
            disposition
                .split(';')
                .map(str::trim)
                .find_map(|p| p.strip_prefix(key))
                .map(|v| v.trim_matches('"').to_string())
        };
        let (name, filename) = (field("name="), field("filename="));
        parts.push((name, filename, content[..end].to_vec()));
        rest = &content[end..];
    }
    // The `file` field, else the first part that names a file.
    let index = parts
        .iter()
        .position(|(name, _, _)| name.as_deref() == Some("file"))
        .or_else(|| parts.iter().position(|(_, f, _)| f.is_some()))?;
    let (_, filename, bytes) = parts.swap_remove(index);
    Some((filename, bytes))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `POST /upload`.
pub(crate) async fn upload(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    query: Result<Query<UploadQuery>, axum::extract::rejection::QueryRejection>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let query = super::query(query)?;
    if let Some(name) = query.name.as_deref().filter(|n| n.chars().count() > 255) {
        return Err(ApiError::bad_request(format!(
            "the name is {} characters long; give at most 255",
            name.chars().count()
        )));
    }
    let owner = owner(caller.as_deref(), &headers)?;
    // A token held to a read-only sandbox, or pinned to another workspace, writes nothing
    // here.
    if let Some(rules) = caller.as_deref().and_then(|c| c.tools.as_deref()) {
        if rules.sandbox == Some(toolshed_ops::sandbox::SandboxMode::ReadOnly) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "denied",
                "this token is held to a read-only sandbox: it uploads no files",
            ));
        }
        if let Some(pinned) = rules
            .workspace
            .as_deref()
            .filter(|w| *w != state.host.workspace_name())
        {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "denied",
                format!("this token is pinned to the workspace {pinned}, not this one"),
            ));
        }
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let (sent_name, bytes) = if content_type
        .to_ascii_lowercase()
        .starts_with("multipart/form-data")
    {
        let (name, bytes) = form_file(content_type, &body).ok_or_else(|| {
            ApiError::bad_request(
                "the multipart/form-data body has no `file` field and no part naming a file; send the file as the `file` field, or the bytes alone with ?name=",
            )
        })?;
        (name.or(query.name), bytes)
    } else {
        (query.name, body.to_vec())
    };
    let prefix =
        toolshed_core::secret::random_hex(4).map_err(|e| ApiError::internal(e.to_string()))?;
    let file = format!(
        "{prefix}-{}",
        safe_name(sent_name.as_deref().unwrap_or("upload"))
    );
    let path = format!("{UPLOAD_DIR}/{file}");
    let files = state.host.services().ops.files.clone();
    let size = bytes.len() as u64;
    let sha256 = {
        use sha2::Digest as _;
        sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let written = path.clone();
    tokio::task::spawn_blocking(move || files.write(&written, &bytes, Parents::Create))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map_err(|e| {
            ApiError::new(
                StatusCode::FORBIDDEN,
                "denied",
                format!("the upload could not be stored at {path}: {e}"),
            )
        })?;
    tracing::info!(owner = %owner.0, path = %path, size, "stored an upload");
    let url = format!("/api/v1/uploads/{file}");
    let mut response = (
        StatusCode::CREATED,
        axum::Json(Uploaded {
            file,
            path,
            url: url.clone(),
            http_path: url.clone(),
            size,
            sha256,
            owner: owner.0,
        }),
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&url) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    Ok(response)
}

/// `GET /uploads/{file}`: a file of `uploads/`, as an attachment.
pub(crate) async fn download(
    State(state): State<AppState>,
    Path(file): Path<String>,
) -> Result<Response, ApiError> {
    let plain = !file.is_empty()
        && file != "."
        && file != ".."
        && !file.contains(['/', '\\', '\0'])
        && !file.starts_with('.');
    if !plain {
        return Err(ApiError::not_found(format!(
            "`{file}` is not an upload's name; POST /api/v1/upload answers with one"
        )));
    }
    let files = state.host.services().ops.files.clone();
    let path = format!("{UPLOAD_DIR}/{file}");
    let max = MAX_DOWNLOAD_BYTES;
    let read = tokio::task::spawn_blocking(move || files.read(&path, max))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map_err(|_| {
            ApiError::not_found(format!(
                "no upload `{file}`; POST /api/v1/upload stores one"
            ))
        })?;
    let mut response = read.bytes.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{file}\"")) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_made_plain_and_forms_are_read() {
        assert_eq!(safe_name("../../etc/passwd"), "passwd");
        assert_eq!(safe_name("..hidden"), "hidden");
        assert_eq!(safe_name("my report (1).pdf"), "my_report__1_.pdf");
        assert_eq!(safe_name(""), "upload");
        let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhi\r\n--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.csv\"\r\nContent-Type: text/csv\r\n\r\nx,y\r\n1,2\r\n--XyZ--\r\n";
        let (name, bytes) = form_file("multipart/form-data; boundary=XyZ", body).unwrap();
        assert_eq!(name.as_deref(), Some("a.csv"));
        assert_eq!(bytes, b"x,y\r\n1,2");
    }
}
