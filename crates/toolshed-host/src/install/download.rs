//! Downloading a plugin archive from a URL before it is installed.
//!
//! Only with a SHA-256 checksum (the archive is then checked against it before it is
//! opened, like any file), only over HTTPS to public addresses — through the SSRF-guarded
//! client, redirects re-checked hop by hop — unless the host is listed in
//! `[plugins] download_hosts`. The archive is written into the plugin root's hidden staging
//! space, so a killed download leaves nothing visible and is cleaned at the next start.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toolshed_core::{HttpRequest, NetPolicy};
/// The client downloads go through, re-exported for doors that install.
pub use toolshed_ops::NetClient;

use super::{InstallError, STAGING_PREFIX};

/// The largest archive downloaded.
pub const MAX_DOWNLOAD_BYTES: usize = 64 * 1024 * 1024;

/// How long a download may take.
pub const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(300);

/// How often a download reports progress, in bytes received.
const PROGRESS_EVERY: u64 = 4 * 1024 * 1024;

/// The most redirects followed.
pub const MAX_REDIRECTS: usize = 5;

/// A downloaded archive, removed when dropped.
pub struct Downloaded {
    /// Where it is: a hidden file in the plugin root, ending in the archive's extension.
    pub path: tempfile::TempPath,
    /// Its size.
    pub bytes: u64,
    /// The URL it came from after redirects.
    pub final_url: String,
}

/// `n` bytes for people: `812 bytes`, `2.7 KiB`, `1.4 MiB`.
pub fn human_bytes(n: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if n >= MIB {
        format!("{:.1} MiB", n as f64 / MIB as f64)
    } else if n >= 1024 {
        format!("{:.1} KiB", n as f64 / 1024.0)
    } else {
        format!("{n} bytes")
    }
}

/// Whether `source` is a URL rather than a path.
pub fn is_url(source: &str) -> bool {
    source.contains("://")
}

fn refuse(url: &str, reason: impl Into<String>) -> InstallError {
    InstallError::Download {
        url: redact(url),
        reason: reason.into(),
    }
}

/// `url` as messages and logs show it: no credentials, nothing past the host but `/…`.
pub fn redact(url: &str) -> String {
    toolshed_ops::net::redact_url(url)
}

/// Downloads the archive at `url` into `root`'s staging space. `sha256` must be given; it
/// is checked by the install that follows. `extra_hosts` are `[plugins] download_hosts`.
pub async fn download(
    client: &NetClient,
    url: &str,
    sha256: Option<&str>,
    extra_hosts: &[String],
    root: &Path,
    progress: &mut (dyn FnMut(String) + Send),
) -> Result<Downloaded, InstallError> {
    match sha256 {
        None => {
            return Err(refuse(
                url,
                "a URL needs --sha256 HEX (the archive's SHA-256, from its publisher), so what is installed is what was published",
            ));
        }
        Some(given) => {
            super::parse_sha256(given)?;
        }
    }
    // Parsed as the HTTP client will dial it: the host decided on is the host reached.
    let to = toolshed_ops::net::destination(url).map_err(|e| refuse(url, e.to_string()))?;
    let listed = extra_hosts.iter().any(|h| {
        toolshed_ops::net::HostPattern::parse(h).is_ok_and(|p| p.matches(&to.host, to.port))
    });
    let policy = if listed {
        NetPolicy::Only(extra_hosts.to_vec())
    } else if to.tls {
        NetPolicy::Public
    } else {
        return Err(refuse(
            url,
            "only https URLs are downloaded (or hosts listed in [plugins] download_hosts); \
             `http` is not",
        ));
    };
    let path_part = to.path.to_ascii_lowercase();
    let suffix = if path_part.ends_with(".tar.gz") {
        ".tar.gz"
    } else if path_part.ends_with(".tgz") {
        ".tgz"
    } else if path_part.ends_with(".zip") {
        ".zip"
    } else {
        return Err(refuse(
            url,
            "the URL's path must end in .tar.gz, .tgz or .zip, so the archive's format is known",
        ));
    };
    progress(format!("downloading {}", redact(url)));
    let request = HttpRequest {
        method: "GET".into(),
        url: url.to_string(),
        headers: Vec::new(),
        body: None,
        timeout: DOWNLOAD_TIMEOUT,
        max_response_bytes: MAX_DOWNLOAD_BYTES,
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    // Progress lines at most every 4 MiB; the callback runs on the reading task, so the
    // lines are collected and printed here, between chunks, by a watcher.
    let (tx, mut rx) = tokio::sync::watch::channel(0u64);
    let observed = std::sync::Arc::new(move |bytes: u64| {
        tx.send_if_modified(|last| {
            let report = bytes >= *last + PROGRESS_EVERY;
            if report {
                *last = bytes;
            }
            report
        });
    });
    let fetch =
        client.send_following_with_progress(request, &policy, &cancel, MAX_REDIRECTS, observed);
    tokio::pin!(fetch);
    let followed = loop {
        tokio::select! {
            done = &mut fetch => break done,
            Ok(()) = rx.changed() => {
                let bytes = *rx.borrow_and_update();
                progress(format!("downloading: {} so far", human_bytes(bytes)));
            }
        }
    }
    .map_err(|e| refuse(url, e.to_string()))?;
    let response = followed.response;
    if !(200..300).contains(&response.status) {
        return Err(refuse(
            url,
            format!("the server answered HTTP {}", response.status),
        ));
    }
    if response.truncated {
        return Err(refuse(
            url,
            format!(
                "the archive is larger than {} MiB",
                MAX_DOWNLOAD_BYTES / (1024 * 1024)
            ),
        ));
    }
    let bytes = response.body.len() as u64;
    progress(format!("downloaded {}", human_bytes(bytes)));
    let root_path: PathBuf = root.to_path_buf();
    let body = response.body;
    let path = tokio::task::spawn_blocking(move || -> std::io::Result<tempfile::TempPath> {
        std::fs::create_dir_all(&root_path)?;
        let mut file = tempfile::Builder::new()
            .prefix(STAGING_PREFIX)
            .suffix(suffix)
            .tempfile_in(&root_path)?;
        file.write_all(&body)?;
        file.as_file().sync_all()?;
        Ok(file.into_temp_path())
    })
    .await
    .map_err(|e| refuse(url, e.to_string()))?
    .map_err(super::io_err("write the download into", root))?;
    Ok(Downloaded {
        path,
        bytes,
        final_url: redact(&followed.url),
    })
}

/// Installs from a directory, an archive file or a URL (downloaded first, see
/// [`download`]) into `root`. Progress lines (download, extraction) go to `progress`.
pub async fn install_from(
    root: &Path,
    mut request: super::InstallRequest,
    client: &NetClient,
    extra_hosts: &[String],
    progress: std::sync::Arc<dyn Fn(String) + Send + Sync>,
) -> Result<super::Installed, InstallError> {
    let mut downloaded = None;
    let url = request.source.clone();
    if is_url(&request.source) {
        let report = progress.clone();
        let file = download(
            client,
            &request.source,
            request.sha256.as_deref(),
            extra_hosts,
            root,
            &mut move |line| report(line),
        )
        .await?;
        request.source = file.path.to_string_lossy().into_owned();
        downloaded = Some(file);
    }
    let root = root.to_path_buf();
    let outcome = tokio::task::spawn_blocking(move || {
        super::install(&root, &request, &mut |p| {
            let state = if p.done { "extracted" } else { "extracting" };
            progress(format!(
                "{state}: {} entries, {}",
                p.entries,
                human_bytes(p.bytes)
            ));
        })
    })
    .await
    .map_err(|e| InstallError::Download {
        url: redact(&url),
        reason: format!("the install task failed: {e}"),
    })?;
    match (outcome, downloaded) {
        // The archive was a hidden temporary file: name the URL, not that file.
        (
            Err(InstallError::ChecksumMismatch {
                expected, actual, ..
            }),
            Some(file),
        ) => {
            let _ = file;
            Err(InstallError::Download {
                url: redact(&url),
                reason: format!(
                    "its SHA-256 is {actual}, not {expected} as given; the archive is not the one published, or the checksum is wrong"
                ),
            })
        }
        (outcome, _) => outcome,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_keeps_only_scheme_and_host() {
        assert_eq!(
            redact("https://user:pw@example.com/a.zip?token=x#y"),
            "https://example.com/…"
        );
        assert_eq!(
            redact("https://reg.example/@scope/pkg.tgz"),
            "https://reg.example/…"
        );
        assert_eq!(redact("https://example.com"), "https://example.com/");
    }
}
