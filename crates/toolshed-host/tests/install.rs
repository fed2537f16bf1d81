//! Installing plugins from directories and archives, with hostile archives of our own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use toolshed_host::install::{InstallError, InstallRequest, Limits, Overwrite, install};

const MANIFEST: &str = r#"
id = "acme.hello"
version = "1.2.0"
name = "Hello"
kind = "js"
entry = "main.js"
[[tools]]
name = "hello_greet"
description = "Greet."
"#;

/// One entry of an archive built for a test.
enum E<'a> {
    File(&'a str, &'a [u8]),
    Dir(&'a str),
    Symlink(&'a str, &'a str),
    Hardlink(&'a str, &'a str),
    Char(&'a str),
    Fifo(&'a str),
}

/// A tar.gz with exactly these entries: names are written raw, so hostile ones survive.
fn tar_gz(entries: &[E]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    for entry in entries {
        let mut header = tar::Header::new_gnu();
        let (name, data): (&str, &[u8]) = match entry {
            E::File(name, data) => {
                header.set_entry_type(tar::EntryType::Regular);
                (name, data)
            }
            E::Dir(name) => {
                header.set_entry_type(tar::EntryType::Directory);
                (name, b"")
            }
            E::Symlink(name, target) | E::Hardlink(name, target) => {
                header.set_entry_type(if matches!(entry, E::Symlink(..)) {
                    tar::EntryType::Symlink
                } else {
                    tar::EntryType::Link
                });
                header.set_link_name(target).unwrap();
                (name, b"")
            }
            E::Char(name) => {
                header.set_entry_type(tar::EntryType::Char);
                header.set_device_major(1).unwrap();
                header.set_device_minor(3).unwrap();
                (name, b"")
            }
            E::Fifo(name) => {
                header.set_entry_type(tar::EntryType::Fifo);
                (name, b"")
            }
        };
        let raw = &mut header.as_old_mut().name;
        raw[..name.len()].copy_from_slice(name.as_bytes());
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append(&header, data).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

fn zip(entries: &[E]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for entry in entries {
        match entry {
            E::File(name, data) => {
                writer.start_file(*name, options).unwrap();
                writer.write_all(data).unwrap();
            }
            E::Dir(name) => writer.add_directory(*name, options).unwrap(),
            E::Symlink(name, target) => writer.add_symlink(*name, *target, options).unwrap(),
            _ => unreachable!("zip has no such entries"),
        }
    }
    writer.finish().unwrap().into_inner()
}

struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("data/plugins")
    }

    fn file(&self, name: &str, bytes: &[u8]) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path.to_string_lossy().into_owned()
    }

    fn install(
        &self,
        request: &InstallRequest,
    ) -> Result<toolshed_host::install::Installed, InstallError> {
        install(&self.root(), request, &mut |_| {})
    }

    /// Everything under the case directory except the archives themselves: what an
    /// install left behind.
    fn written(&self) -> Vec<String> {
        let mut out = Vec::new();
        walk(self.dir.path(), self.dir.path(), &mut out);
        out.retain(|p| !(p.ends_with(".tar.gz") || p.ends_with(".zip") || p.ends_with(".tgz")));
        out.sort();
        out
    }

    /// Asserts the install left only the (empty) plugin root and its lock file.
    fn assert_nothing_installed(&self) {
        let written = self.written();
        assert!(
            written
                .iter()
                .all(|p| ["data", "data/plugins", "data/plugins/.lock"].contains(&p.as_str())),
            "{written:?}"
        );
    }
}

fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        out.push(
            path.strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .into_owned(),
        );
        if std::fs::symlink_metadata(&path).unwrap().is_dir() {
            walk(base, &path, out);
        }
    }
}

fn good_entries() -> Vec<E<'static>> {
    vec![
        E::Dir("hello/"),
        E::File("hello/plugin.toml", MANIFEST.as_bytes()),
        E::File("hello/main.js", b"export function activate() {}\n"),
        E::File("hello/lang/en.json", b"{}"),
    ]
}

#[test]
fn installs_from_a_directory_a_tar_gz_and_a_zip() {
    // A directory: the plugin is the directory itself.
    let case = Case::new();
    let src = case.dir.path().join("src");
    std::fs::create_dir_all(src.join("lang")).unwrap();
    std::fs::write(src.join("plugin.toml"), MANIFEST).unwrap();
    std::fs::write(src.join("lang/en.json"), "{}").unwrap();
    let installed = case
        .install(&InstallRequest::new(src.to_string_lossy()))
        .unwrap();
    assert_eq!(installed.id, "acme.hello");
    assert_eq!(installed.version, "1.2.0");
    assert_eq!(installed.dir, case.root().join("acme.hello"));
    assert_eq!(installed.stripped, None);
    assert_eq!(
        std::fs::read_to_string(installed.dir.join("lang/en.json")).unwrap(),
        "{}"
    );

    // A tar.gz with a single top-level directory: it is stripped.
    let case = Case::new();
    let archive = case.file("hello.tar.gz", &tar_gz(&good_entries()));
    let mut progress = Vec::new();
    let installed = install(&case.root(), &InstallRequest::new(archive), &mut |p| {
        progress.push(p)
    })
    .unwrap();
    assert_eq!(installed.stripped.as_deref(), Some("hello"));
    assert_eq!(installed.entries, 4);
    assert!(progress.last().unwrap().done);
    assert!(installed.dir.join("main.js").is_file());
    assert!(installed.dir.join("plugin.toml").is_file());
    let mut left = case.written();
    left.retain(|p| p.contains(".staging"));
    assert!(left.is_empty(), "staging left behind: {left:?}");

    // A zip, flat.
    let case = Case::new();
    let archive = case.file(
        "hello.zip",
        &zip(&[
            E::File("plugin.toml", MANIFEST.as_bytes()),
            E::Dir("lang/"),
            E::File("lang/en.json", b"{}"),
        ]),
    );
    let installed = case.install(&InstallRequest::new(archive)).unwrap();
    assert_eq!(installed.stripped, None);
    assert!(installed.dir.join("lang/en.json").is_file());
}

#[test]
fn hostile_tar_entries_are_refused_and_nothing_is_written_outside_staging() {
    let cases: Vec<(&str, Vec<E>, &str)> = vec![
        ("zip-slip", vec![E::File("../evil", b"x")], "`..`"),
        ("nested slip", vec![E::File("a/../../evil", b"x")], "`..`"),
        ("absolute", vec![E::File("/abs", b"x")], "absolute"),
        (
            "symlink",
            vec![E::Symlink("link", "/etc/passwd")],
            "symbolic link",
        ),
        (
            "hard link",
            vec![E::Hardlink("link", "/etc/passwd")],
            "hard link",
        ),
        ("device", vec![E::Char("null")], "device"),
        ("fifo", vec![E::Fifo("pipe")], "FIFO"),
        (
            "duplicate",
            vec![E::File("a.txt", b"1"), E::File("a.txt", b"2")],
            "twice",
        ),
        (
            "case clash",
            vec![E::File("a.txt", b"1"), E::File("A.txt", b"2")],
            "only by case",
        ),
        (
            "file and directory",
            vec![E::File("a", b"1"), E::File("a/b", b"2")],
            "is a file",
        ),
    ];
    for (what, mut entries, expected) in cases {
        entries.insert(0, E::File("plugin.toml", MANIFEST.as_bytes()));
        let case = Case::new();
        let archive = case.file("p.tar.gz", &tar_gz(&entries));
        let err = case.install(&InstallRequest::new(archive)).unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, InstallError::Entry { .. }) && text.contains(expected),
            "{what}: {text}"
        );
        case.assert_nothing_installed();
        assert!(!case.dir.path().parent().unwrap().join("evil").exists());
    }
}

#[test]
fn hostile_zip_entries_are_refused() {
    let cases: Vec<(&str, Vec<E>, &str)> = vec![
        ("zip-slip", vec![E::File("../evil", b"x")], "`..`"),
        ("absolute", vec![E::File("/abs", b"x")], "absolute"),
        (
            "symlink",
            vec![E::Symlink("link", "/etc/passwd")],
            "symbolic link",
        ),
        (
            "case clash",
            vec![E::File("a.txt", b"1"), E::File("A.txt", b"2")],
            "only by case",
        ),
        (
            "same name after normalising",
            vec![E::File("a/b.txt", b"1"), E::File("a/./b.txt", b"2")],
            "twice",
        ),
    ];
    for (what, mut entries, expected) in cases {
        entries.insert(0, E::File("plugin.toml", MANIFEST.as_bytes()));
        let case = Case::new();
        let archive = case.file("p.zip", &zip(&entries));
        let err = case.install(&InstallRequest::new(archive)).unwrap_err();
        assert!(err.to_string().contains(expected), "{what}: {err}");
        case.assert_nothing_installed();
    }
}

#[test]
fn too_many_entries_and_too_many_bytes_are_refused() {
    let case = Case::new();
    let names: Vec<String> = (0..30).map(|i| format!("f{i}.txt")).collect();
    let mut entries = vec![E::File("plugin.toml", MANIFEST.as_bytes())];
    entries.extend(names.iter().map(|n| E::File(n, b"x")));
    let archive = case.file("many.tar.gz", &tar_gz(&entries));
    let mut request = InstallRequest::new(&archive);
    request.limits = Limits {
        max_entries: 20,
        ..Limits::default()
    };
    let err = case.install(&request).unwrap_err();
    assert!(
        matches!(&err, InstallError::Limit(m) if m.contains("more than 20 entries")),
        "{err}"
    );
    case.assert_nothing_installed();

    let big = vec![7u8; 64 * 1024];
    let archive = case.file(
        "big.zip",
        &zip(&[
            E::File("plugin.toml", MANIFEST.as_bytes()),
            E::File("big", &big),
        ]),
    );
    let mut request = InstallRequest::new(&archive);
    request.limits = Limits {
        max_total_bytes: 32 * 1024,
        ..Limits::default()
    };
    let err = case.install(&request).unwrap_err();
    assert!(
        matches!(&err, InstallError::Limit(m) if m.contains("exceeds 32768 bytes")),
        "{err}"
    );
    case.assert_nothing_installed();
}

/// 200 MiB of zeros, compressed: refused once the decompressed bytes pass 100 times the
/// archive's size, long before all of it is written.
#[test]
fn a_compression_bomb_is_stopped_while_streaming() {
    let zeros = vec![0u8; 200 * 1024 * 1024];
    for (name, bytes) in [
        (
            "bomb.tar.gz",
            tar_gz(&[
                E::File("plugin.toml", MANIFEST.as_bytes()),
                E::File("zeros", &zeros),
            ]),
        ),
        (
            "bomb.zip",
            zip(&[
                E::File("plugin.toml", MANIFEST.as_bytes()),
                E::File("zeros", &zeros),
            ]),
        ),
    ] {
        let case = Case::new();
        assert!(bytes.len() < 2 * 1024 * 1024, "{name}: {}", bytes.len());
        let archive = case.file(name, &bytes);
        let mut most = 0;
        let err = install(&case.root(), &InstallRequest::new(archive), &mut |p| {
            most = most.max(p.bytes)
        })
        .unwrap_err();
        assert!(
            matches!(&err, InstallError::Limit(m) if m.contains("compression bomb")),
            "{name}: {err}"
        );
        assert!(most <= bytes.len() as u64 * 100, "{name}: wrote {most}");
        case.assert_nothing_installed();
    }
}

#[test]
fn the_checksum_is_checked_before_the_archive_is_parsed() {
    let case = Case::new();
    let good = tar_gz(&good_entries());
    let sha: String = Sha256::digest(&good)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let archive = case.file("hello.tar.gz", &good);
    let mut request = InstallRequest::new(&archive);
    request.sha256 = Some(sha.to_uppercase());
    case.install(&request).unwrap();

    // Garbage that is no archive at all: with a wrong checksum the answer is the checksum,
    // so the parser never saw it.
    let case = Case::new();
    let archive = case.file("corrupt.tar.gz", b"this is not gzip at all");
    let mut request = InstallRequest::new(&archive);
    request.sha256 = Some("0".repeat(64));
    let err = case.install(&request).unwrap_err();
    assert!(
        matches!(err, InstallError::ChecksumMismatch { .. }),
        "{err}"
    );
    assert!(err.to_string().contains(&"0".repeat(64)));
    case.assert_nothing_installed();
    // Without one, the same file is refused by the parser.
    let err = case.install(&InstallRequest::new(&archive)).unwrap_err();
    assert!(matches!(err, InstallError::Corrupt { .. }), "{err}");

    let mut request = InstallRequest::new(&archive);
    request.sha256 = Some("abc".into());
    assert!(matches!(
        case.install(&request).unwrap_err(),
        InstallError::ChecksumSyntax { .. }
    ));
}

#[test]
fn a_truncated_archive_is_refused() {
    let case = Case::new();
    let names: Vec<String> = (0..50).map(|i| format!("f{i}.txt")).collect();
    let mut entries = good_entries();
    let bodies: Vec<Vec<u8>> = (0..50u32)
        .map(|i| format!("{i}").repeat(500).into_bytes())
        .collect();
    for (n, body) in names.iter().zip(&bodies) {
        entries.push(E::File(n, body));
    }
    let mut bytes = tar_gz(&entries);
    bytes.truncate(bytes.len() / 2);
    let archive = case.file("cut.tar.gz", &bytes);
    let err = case.install(&InstallRequest::new(archive)).unwrap_err();
    assert!(matches!(err, InstallError::Corrupt { .. }), "{err}");
    case.assert_nothing_installed();
}

#[test]
fn the_id_must_match_and_the_manifest_must_be_valid() {
    let case = Case::new();
    let archive = case.file("hello.tar.gz", &tar_gz(&good_entries()));
    let mut request = InstallRequest::new(&archive);
    request.expected_id = Some("acme.other".into());
    let err = case.install(&request).unwrap_err();
    assert!(
        matches!(&err, InstallError::IdMismatch { expected, found } if expected == "acme.other" && found == "acme.hello"),
        "{err}"
    );
    case.assert_nothing_installed();

    let bad = MANIFEST.replace("acme.hello", "Acme Hello");
    let archive = case.file(
        "bad.tar.gz",
        &tar_gz(&[E::File("plugin.toml", bad.as_bytes())]),
    );
    let err = case.install(&InstallRequest::new(archive)).unwrap_err();
    assert!(
        matches!(&err, InstallError::Manifest { field, .. } if field == "id"),
        "{err}"
    );
    case.assert_nothing_installed();

    let archive = case.file("none.tar.gz", &tar_gz(&[E::File("README", b"hi")]));
    let err = case.install(&InstallRequest::new(archive)).unwrap_err();
    assert!(matches!(err, InstallError::NoManifest { .. }), "{err}");

    let mut request = InstallRequest::new("https://example.invalid/p.tar.gz");
    request.sha256 = Some("0".repeat(64));
    let err = case.install(&request).unwrap_err();
    assert!(
        matches!(err, InstallError::Url { .. }),
        "the synchronous install takes files only: {err}"
    );
}

#[test]
fn an_installed_plugin_is_replaced_only_with_force() {
    let case = Case::new();
    let archive = case.file("hello.tar.gz", &tar_gz(&good_entries()));
    case.install(&InstallRequest::new(&archive)).unwrap();
    std::fs::write(case.root().join("acme.hello/local-note"), "mine").unwrap();
    let err = case.install(&InstallRequest::new(&archive)).unwrap_err();
    assert!(matches!(err, InstallError::Exists { .. }), "{err}");
    assert!(err.to_string().contains("--force"));
    assert!(case.root().join("acme.hello/local-note").exists());

    let v2 = MANIFEST.replace("1.2.0", "2.0.0");
    let archive = case.file(
        "hello2.tar.gz",
        &tar_gz(&[E::File("plugin.toml", v2.as_bytes())]),
    );
    let mut request = InstallRequest::new(&archive);
    request.overwrite = Overwrite::Replace;
    let installed = case.install(&request).unwrap();
    assert!(installed.replaced);
    assert_eq!(installed.version, "2.0.0");
    assert!(!case.root().join("acme.hello/local-note").exists());
    let left: Vec<_> = std::fs::read_dir(case.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut left = left;
    left.sort();
    assert_eq!(left, [".lock", "acme.hello"]);
}

#[test]
fn concurrent_installs_of_one_id_are_serialized() {
    let case = Case::new();
    let archive = case.file("hello.tar.gz", &tar_gz(&good_entries()));
    let root = case.root();
    let outcomes: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let (root, archive) = (root.clone(), archive.clone());
                s.spawn(move || install(&root, &InstallRequest::new(archive), &mut |_| {}))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let ok = outcomes.iter().filter(|o| o.is_ok()).count();
    let exists = outcomes
        .iter()
        .filter(|o| matches!(o, Err(InstallError::Exists { .. })))
        .count();
    assert_eq!((ok, exists), (1, 3), "{outcomes:?}");
}

#[tokio::test]
async fn a_killed_install_leaves_no_plugin_and_its_staging_is_cleaned_at_start() {
    let workspace = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    // What a process killed after extracting, before the rename, leaves behind.
    let staging = data.path().join("plugins/.staging-k1ll3d/tree");
    std::fs::create_dir_all(&staging).unwrap();
    std::fs::write(staging.join("plugin.toml"), MANIFEST).unwrap();
    let t = support::open_in(workspace, data, vec![], "").await;
    assert!(t.host.registry().plugin("acme.hello").is_none());
    assert!(!t.data.path().join("plugins/.staging-k1ll3d").exists());
}

#[tokio::test]
async fn uninstall_removes_the_files_and_the_state() {
    let workspace = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let case = Case::new();
    let archive = case.file("hello.tar.gz", &tar_gz(&good_entries()));
    let installed = install(
        &data.path().join("plugins"),
        &InstallRequest::new(archive),
        &mut |_| {},
    )
    .unwrap();
    let t = support::open_in(workspace, data, vec![], "").await;
    let registry = t.host.registry();
    assert_eq!(
        registry.plugin("acme.hello").unwrap().root,
        toolshed_host::Root::User
    );
    t.host
        .store()
        .set_config_value("acme.hello", "token", &serde_json::json!("s3cret"), true)
        .unwrap();
    registry.set_enabled("acme.hello", false).await.unwrap();
    registry.uninstall("acme.hello").await.unwrap();
    assert!(!installed.dir.exists());
    assert!(registry.plugin("acme.hello").is_none());
    assert!(
        t.host
            .store()
            .config_values("acme.hello")
            .unwrap()
            .is_empty()
    );
    assert_eq!(t.host.store().plugin_enabled("acme.hello").unwrap(), None);
}

/// Serves `body` with status `status` to every request on 127.0.0.1; counts connections.
async fn serve_once_per_request(
    status: u16,
    body: Vec<u8>,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let body = body.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut seen = Vec::new();
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(&body).await;
            });
        }
    });
    (address, hits)
}

#[tokio::test]
async fn a_url_is_downloaded_only_with_a_checksum_and_only_from_allowed_hosts() {
    use std::sync::atomic::Ordering;
    use toolshed_host::install::download::{NetClient, install_from};
    let archive = tar_gz(&good_entries());
    let sha: String = Sha256::digest(&archive)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let (address, hits) = serve_once_per_request(200, archive).await;
    let case = Case::new();
    let client = NetClient::new();
    let quiet = std::sync::Arc::new(|_: String| {});
    let url = format!("http://{address}/hello-1.2.0.tar.gz");
    let attempt = |source: &str, sha: Option<&str>, hosts: Vec<String>| {
        let mut request = InstallRequest::new(source);
        request.sha256 = sha.map(str::to_string);
        let root = case.root();
        let client = &client;
        let quiet = quiet.clone();
        async move { install_from(&root, request, client, &hosts, quiet).await }
    };

    let err = attempt(&url, None, vec![]).await.unwrap_err();
    assert!(err.to_string().contains("needs --sha256"), "{err}");
    let err = attempt(&url, Some(&sha), vec![]).await.unwrap_err();
    assert!(err.to_string().contains("only https"), "{err}");
    // https to a loopback address is refused before anything is dialled.
    let https = format!("https://{address}/hello-1.2.0.tar.gz");
    let err = attempt(&https, Some(&sha), vec![]).await.unwrap_err();
    assert!(err.to_string().contains("loopback"), "{err}");
    let err = attempt(
        &format!("http://{address}/hello"),
        Some(&sha),
        vec![address.to_string()],
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains(".tar.gz, .tgz or .zip"), "{err}");
    // A URL whose host a hand-split reads as the listed one, but the client would dial
    // `evil.example` (a `\` ends the host): judged on the host dialled. Failed before: the
    // listed host's rules were chosen for it.
    let err = attempt(
        &format!("http://evil.example\\@{address}/hello-1.2.0.tar.gz"),
        Some(&sha),
        vec![address.to_string()],
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("only https"), "{err}");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "nothing was fetched yet");

    // A listed host: a wrong checksum installs nothing and leaves nothing behind.
    let wrong = "0".repeat(64);
    let err = attempt(&url, Some(&wrong), vec![address.to_string()])
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, InstallError::Download { .. }) && text.contains("SHA-256"),
        "{text}"
    );
    assert!(
        !text.contains(".staging"),
        "names the URL, not the temporary file: {text}"
    );
    assert!(!case.root().join("acme.hello").exists());
    let leftovers: Vec<_> = std::fs::read_dir(case.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != ".lock")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // The right one installs; the query string never reaches a message.
    let installed = attempt(
        &format!("{url}?token=s3cret"),
        Some(&sha),
        vec![address.to_string()],
    )
    .await
    .unwrap();
    assert_eq!(installed.id, "acme.hello");
    assert!(case.root().join("acme.hello/plugin.toml").is_file());
    assert_eq!(hits.load(Ordering::SeqCst), 2);

    let (missing, _) = serve_once_per_request(404, b"no".to_vec()).await;
    let err = attempt(
        &format!("http://{missing}/x.zip?token=s3cret"),
        Some(&sha),
        vec![missing.to_string()],
    )
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("HTTP 404") && !text.contains("s3cret"),
        "{text}"
    );
}

#[test]
fn a_directory_without_a_plugin_is_refused_before_anything_is_copied() {
    let case = Case::new();
    let src = case.dir.path().join("not-a-plugin");
    std::fs::create_dir_all(src.join("a/b")).unwrap();
    std::fs::write(src.join("a/b/plugin.toml"), MANIFEST).unwrap();
    std::fs::write(src.join("README"), "hi").unwrap();
    let err = case
        .install(&InstallRequest::new(src.to_str().unwrap()))
        .unwrap_err();
    assert!(matches!(err, InstallError::NoManifest { .. }), "{err}");
    assert!(
        !case.root().exists(),
        "not even the plugin root was created"
    );
}

#[tokio::test]
async fn a_download_reports_its_progress() {
    use toolshed_host::install::download::{NetClient, install_from};
    // 6 MiB that do not compress: more than one progress step.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let noise: Vec<u8> = (0..6 * 1024 * 1024)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 32) as u8
        })
        .collect();
    let mut entries = good_entries();
    entries.push(E::File("hello/data.bin", &noise));
    let archive = tar_gz(&entries);
    let sha: String = Sha256::digest(&archive)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let (address, _) = serve_once_per_request(200, archive).await;
    let case = Case::new();
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = lines.clone();
    let mut request = InstallRequest::new(format!("http://{address}/hello.tar.gz"));
    request.sha256 = Some(sha);
    let installed = install_from(
        &case.root(),
        request,
        &NetClient::new(),
        &[address.to_string()],
        std::sync::Arc::new(move |line: String| seen.lock().unwrap().push(line)),
    )
    .await
    .unwrap();
    assert_eq!(installed.id, "acme.hello");
    let lines = lines.lock().unwrap().clone();
    assert!(lines[0].starts_with("downloading http://"), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("downloading: 4.") && l.ends_with("MiB so far")),
        "{lines:?}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("downloaded 6.0 MiB")),
        "{lines:?}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("extracted:")),
        "{lines:?}"
    );
}
