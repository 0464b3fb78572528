//! Files that hold message data (purge archives, exports, the audit log and its ids files,
//! kept edits, journals): created private (0600, in directories created 0700), never written
//! through a symbolic link, and their directory synced once they exist, so that a crash right
//! after the creation does not lose the file's name.

use std::fs::File;
use std::io;
use std::path::Path;

/// dlqctl's state directory: `configured` (`DLQCTL_STATE_DIR`), else the user's state
/// directory (`~/.local/state/dlqctl` on Linux), else a temporary one. The audit log, kept
/// edits and the SQS journal live here.
pub fn state_dir(configured: Option<&Path>) -> std::path::PathBuf {
    configured
        .map(Path::to_path_buf)
        .or_else(|| dirs::state_dir().map(|d| d.join("dlqctl")))
        .or_else(|| dirs::data_local_dir().map(|d| d.join("dlqctl")))
        .unwrap_or_else(|| std::env::temp_dir().join("dlqctl"))
}

/// Create the directory `dir` (and its parents) where missing: 0700 on Unix.
pub fn create_dir_private(dir: &Path) -> io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
}

/// Open `path` for appending, creating it (0600) when missing; a symbolic link at `path` is
/// refused. A file created here has its directory synced before it is returned.
pub fn append_private(path: &Path) -> io::Result<File> {
    match open(path, true) {
        Ok(f) => {
            sync_parent(path)?;
            Ok(f)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => open(path, false),
        Err(e) => Err(e),
    }
}

/// Create `path`, which must not exist yet (0600, never through a symbolic link), its
/// directory synced.
pub fn create_private(path: &Path) -> io::Result<File> {
    let f = open(path, true)?;
    sync_parent(path)?;
    Ok(f)
}

/// Sync the directory holding `path` (a new or renamed entry in it survives a crash).
pub fn sync_parent(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        // Windows cannot open a directory as a file; NTFS journals the entry itself.
        let _ = path;
        Ok(())
    }
}

/// `new`: create (fail when it exists); else open an existing file. Appending either way.
fn open(path: &Path, new: bool) -> io::Result<File> {
    let mut o = std::fs::OpenOptions::new();
    o.append(true);
    if new {
        o.create_new(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    #[cfg(not(unix))]
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(symlink(path));
    }
    o.open(path).map_err(|e| {
        // O_NOFOLLOW on a symbolic link: ELOOP (and create_new on a dangling one: EEXIST,
        // which the caller retries without it, meeting ELOOP).
        #[cfg(unix)]
        if e.raw_os_error() == Some(libc::ELOOP) {
            return symlink(path);
        }
        e
    })
}

fn symlink(path: &Path) -> io::Error {
    io::Error::other(format!(
        "{} is a symlink; dlqctl writes message data only to a file of its own (0600), never through a link: remove the link or choose another path",
        path.display()
    ))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn private_files_and_no_links() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub/a.jsonl");
        create_dir_private(p.parent().unwrap()).unwrap();
        let mut f = append_private(&p).unwrap();
        f.write_all(b"1\n").unwrap();
        let mut f = append_private(&p).unwrap();
        f.write_all(b"2\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "1\n2\n");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&p), 0o600);
        assert_eq!(mode(p.parent().unwrap()), 0o700);
        assert!(
            create_private(&p).is_err(),
            "create_private never reuses a file"
        );

        let link = d.path().join("link");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        let e = append_private(&link).unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
        let dangling = d.path().join("dangling");
        std::os::unix::fs::symlink(d.path().join("nowhere"), &dangling).unwrap();
        assert!(append_private(&dangling).is_err());
        assert!(!d.path().join("nowhere").exists());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "1\n2\n");
    }
}
