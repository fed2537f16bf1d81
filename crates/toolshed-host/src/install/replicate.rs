//! Installed plugins shared through Postgres: a plugin installed through one toolshed is
//! put in place on every other toolshed sharing the database, and one uninstalled goes
//! from all of them.
//!
//! An install's files are a directory in the data dir of the toolshed that ran it. On a
//! shared database that toolshed also stores the plugin as a gzipped tar (at most
//! [`MAX_ARCHIVE_BYTES`]) with the digest of its files; an uninstall leaves a tombstone (the
//! digest, no archive). The others hear of it (`LISTEN`/`NOTIFY`) and, before they sync
//! their registry, put each plugin whose files they lack or hold in another version in
//! place with the same strict extractor and atomic rename as any install (a directory of
//! the same id holding other files is replaced by the shared version), and remove a plugin
//! whose tombstone names the files they hold. Directories of other ids are never touched,
//! and a row whose id is not a plugin id is ignored.

use std::path::{Path, PathBuf};

use super::provenance::{hash_tree, tree_digest};
use crate::store::db::args;
use crate::store::{StateStore, StoreError, now_ms};

/// The largest plugin archive kept in the database.
pub(crate) const MAX_ARCHIVE_BYTES: usize = 64 << 20;

/// What [`StateStore::replicate_installs`] changed in the plugin root.
#[derive(Debug, Default)]
pub(crate) struct Replicated {
    /// Plugin directories put in place (new, or replacing another version).
    pub(crate) placed: Vec<PathBuf>,
    /// Plugins removed (uninstalled by another toolshed).
    pub(crate) removed: Vec<String>,
}

impl StateStore {
    /// Whether the store is shared with other toolsheds (Postgres).
    pub fn is_shared(&self) -> bool {
        self.engine_name() == "postgres"
    }

    /// Where installs go: `plugins/` beside the database file.
    fn install_root(&self) -> PathBuf {
        self.path().with_file_name(super::PLUGINS_DIR)
    }

    /// Shares the plugin just installed into `dir` with the other toolsheds on the
    /// database; does nothing on the embedded engine.
    pub(crate) fn share_install(&self, id: &str, dir: &Path) -> Result<(), StoreError> {
        if !self.is_shared() {
            return Ok(());
        }
        let failed = |what: &str, e: &dyn std::fmt::Display| {
            StoreError::Db(format!(
                "cannot share plugin `{id}` with the other toolsheds: {what}: {e}"
            ))
        };
        let digest = tree_digest(&hash_tree(dir).map_err(|e| failed("hashing its files", &e))?);
        let archive = pack(dir).map_err(|e| failed("packing its files", &e))?;
        if archive.len() > MAX_ARCHIVE_BYTES {
            return Err(failed(
                "packing its files",
                &format!(
                    "{} bytes packed, more than the {MAX_ARCHIVE_BYTES} a shared install may hold",
                    archive.len()
                ),
            ));
        }
        self.db(|db| {
            db.execute(
                "INSERT INTO plugin_archives (plugin_id, tree_sha256, archive, updated_ms)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (plugin_id) DO UPDATE SET tree_sha256 = excluded.tree_sha256,
                   archive = excluded.archive, updated_ms = excluded.updated_ms",
                args![id, &digest, archive, now_ms()],
            )?;
            Ok(())
        })?;
        self.seen_installs().remember(id, &digest);
        self.mark_changed();
        Ok(())
    }

    /// Tells the other toolsheds that the plugin whose files were `dir` is uninstalled
    /// (call before removing them); does nothing on the embedded engine.
    pub(crate) fn unshare_install(&self, id: &str, dir: &Path) -> Result<(), StoreError> {
        if !self.is_shared() {
            return Ok(());
        }
        // The tombstone keeps the digest of the version that was shared, which is what the
        // others hold; a plugin never shared is described by its files here.
        let shared = self.db(|db| {
            db.execute(
                "UPDATE plugin_archives SET archive = NULL, updated_ms = ?2 WHERE plugin_id = ?1",
                args![id, now_ms()],
            )
        })?;
        if shared == 0 {
            let files = hash_tree(dir).map_err(|e| {
                StoreError::Db(format!(
                    "cannot tell the other toolsheds that plugin `{id}` is uninstalled: hashing its files: {e}"
                ))
            })?;
            let digest = tree_digest(&files);
            self.db(|db| {
                db.execute(
                    "INSERT INTO plugin_archives (plugin_id, tree_sha256, archive, updated_ms)
                     VALUES (?1, ?2, NULL, ?3)
                     ON CONFLICT (plugin_id) DO UPDATE SET archive = NULL,
                       updated_ms = excluded.updated_ms",
                    args![id, &digest, now_ms()],
                )?;
                Ok(())
            })?;
        }
        self.seen_installs().forget(id);
        Ok(())
    }

    /// Puts in place the plugins other toolsheds installed, and removes those they
    /// uninstalled (see the module docs). Blocking; does nothing on the embedded engine.
    pub(crate) fn replicate_installs(&self) -> Result<Replicated, StoreError> {
        let mut out = Replicated::default();
        if !self.is_shared() {
            return Ok(out);
        }
        let root = self.install_root();
        let rows = self.db(|db| {
            db.query(
                "SELECT plugin_id, tree_sha256, archive IS NULL FROM plugin_archives",
                args![],
            )?
            .iter()
            .map(|r| Ok((r.text(0)?, r.text(1)?, r.bool(2)?)))
            .collect::<Result<Vec<_>, StoreError>>()
        })?;
        for (id, digest, gone) in rows {
            if self.seen_installs().is(&id, &digest, gone) {
                continue;
            }
            // A row names a directory of the plugin root by a valid id, or nothing.
            if !toolshed_core::is_valid_plugin_id(&id) {
                tracing::warn!(plugin = %id.chars().take(80).collect::<String>(), "a shared install's id is not a plugin id; it is ignored");
                self.seen_installs().mark(&id, &digest, gone);
                continue;
            }
            let dir = root.join(&id);
            if dir.parent() != Some(root.as_path()) {
                continue;
            }
            let local = dir
                .is_dir()
                .then(|| hash_tree(&dir).ok().map(|files| tree_digest(&files)))
                .flatten();
            match (gone, local) {
                (true, Some(held)) if held == digest => {
                    if let Err(e) = std::fs::remove_dir_all(&dir) {
                        tracing::warn!(plugin = %id, error = %e, "cannot remove a plugin another toolshed uninstalled");
                        continue;
                    }
                    out.removed.push(id.clone());
                }
                (true, _) => {}
                (false, Some(held)) if held == digest => {}
                (false, _) => match self.place(&root, &id) {
                    Ok(placed) => out.placed.push(placed),
                    Err(why) => {
                        tracing::warn!(plugin = %id, %why, "cannot put in place a plugin another toolshed installed");
                        continue;
                    }
                },
            }
            self.seen_installs().mark(&id, &digest, gone);
        }
        Ok(out)
    }

    /// Unpacks the shared archive of `id` into `root` as an install would.
    fn place(&self, root: &Path, id: &str) -> Result<PathBuf, String> {
        let archive = self
            .db(|db| {
                db.query_opt(
                    "SELECT archive FROM plugin_archives WHERE plugin_id = ?1",
                    args![id],
                )?
                .map(|r| r.opt_blob(0))
                .transpose()
            })
            .map_err(|e| e.to_string())?
            .flatten()
            .ok_or_else(|| "its archive is gone".to_string())?;
        std::fs::create_dir_all(root).map_err(|e| e.to_string())?;
        let file = tempfile::Builder::new()
            .prefix(".replica-")
            .suffix(".tar.gz")
            .tempfile_in(root)
            .map_err(|e| e.to_string())?;
        std::fs::write(file.path(), &archive).map_err(|e| e.to_string())?;
        let mut request = crate::install::InstallRequest::new(file.path().display().to_string());
        request.expected_id = Some(id.to_string());
        request.overwrite = crate::install::Overwrite::Replace;
        crate::install::install(root, &request, &mut |_| {})
            .map(|installed| installed.dir)
            .map_err(|e| e.to_string())
    }
}

/// A plugin directory as a gzipped tar, paths relative to it, symbolic links as the files
/// they name.
fn pack(dir: &Path) -> std::io::Result<Vec<u8>> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    tar.follow_symlinks(true);
    tar.append_dir_all(".", dir)?;
    tar.into_inner()?.finish()
}
