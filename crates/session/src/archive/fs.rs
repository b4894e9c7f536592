//! [`FsArchive`]: archived objects as files under a root directory, `<root>/<session>/<seq>-<kind>.json`.
//!
//! A write goes to a temp file in the object's directory (named with a leading dot, which no object
//! name has), is synced, renamed over the final name, and the directory is synced: a reader sees
//! the old object or the new one, never a part, and a process killed at any point leaves at most a
//! stray temp file, which listings ignore.

use super::{Archive, ArchiveError, ObjectInfo, ObjectKey};
use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Archived objects in a directory.
#[derive(Debug)]
pub struct FsArchive {
    root: PathBuf,
    /// Numbers temp files, so threads writing one key at once do not share one.
    next_temp: AtomicU64,
}

fn io<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> ArchiveError + 'a {
    move |source| ArchiveError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

impl FsArchive {
    /// An archive rooted at `root`, created when absent.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, ArchiveError> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(io("create", &root))?;
        Ok(FsArchive {
            root,
            next_temp: AtomicU64::new(0),
        })
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn file(&self, key: &ObjectKey) -> PathBuf {
        self.root.join(key.path())
    }

    fn write_new(temp: &Path, body: &[u8]) -> Result<(), ArchiveError> {
        let mut file = File::create(temp).map_err(io("create", temp))?;
        file.write_all(body).map_err(io("write", temp))?;
        file.sync_all().map_err(io("sync", temp))
    }

    fn list_dir(&self, dir: &Path, out: &mut Vec<ObjectInfo>) -> Result<(), ArchiveError> {
        let entries = match fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io("list", dir)(e)),
        };
        let segment = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        for entry in entries {
            let entry = entry.map_err(io("list", dir))?;
            let name = entry.file_name();
            let Some(key) = name
                .to_str()
                .and_then(|n| ObjectKey::parse(&format!("{segment}/{n}")))
            else {
                continue; // temp files and anything not ours
            };
            let meta = match entry.metadata() {
                Ok(meta) => meta,
                // Deleted between the listing and now.
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(io("stat", &entry.path())(e)),
            };
            out.push(ObjectInfo {
                key,
                size: meta.len(),
                modified: meta.modified().map_err(io("stat", &entry.path()))?,
            });
        }
        Ok(())
    }
}

impl Archive for FsArchive {
    fn put(&self, key: &ObjectKey, body: &[u8]) -> Result<(), ArchiveError> {
        let path = self.file(key);
        let dir = path.parent().unwrap_or(&self.root).to_path_buf();
        fs::create_dir_all(&dir).map_err(io("create", &dir))?;
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("object");
        let temp = dir.join(format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            self.next_temp.fetch_add(1, Ordering::Relaxed)
        ));
        let written = Self::write_new(&temp, body)
            .and_then(|()| fs::rename(&temp, &path).map_err(io("rename", &temp)));
        if let Err(e) = written {
            let _ = fs::remove_file(&temp);
            return Err(e);
        }
        // The rename itself must reach the disk before the write counts as done.
        File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(io("sync", &dir))
    }

    fn get(&self, key: &ObjectKey) -> Result<Option<Vec<u8>>, ArchiveError> {
        let path = self.file(key);
        match fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io("read", &path)(e)),
        }
    }

    fn list(&self, session: Option<&str>) -> Result<Vec<ObjectInfo>, ArchiveError> {
        let mut out = Vec::new();
        match session {
            Some(s) => self.list_dir(&self.root.join(super::encode_session(s)), &mut out)?,
            None => {
                for entry in fs::read_dir(&self.root).map_err(io("list", &self.root))? {
                    let entry = entry.map_err(io("list", &self.root))?;
                    if entry.file_type().is_ok_and(|t| t.is_dir()) {
                        self.list_dir(&entry.path(), &mut out)?;
                    }
                }
            }
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    fn delete(&self, key: &ObjectKey) -> Result<(), ArchiveError> {
        let path = self.file(key);
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io("delete", &path)(e)),
        }
    }
}
