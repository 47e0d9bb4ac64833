//! Atomic output files: a run either leaves complete files or none.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

fn write_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Write { path: path.to_path_buf(), reason: e.to_string() }
}

/// Writes all `(path, contents)` pairs so that each file appears complete or not at all: every
/// file goes to a temporary sibling first (fsynced), and only when all are written are they
/// renamed into place. Parent directories are created.
pub fn write_files_atomically(files: &[(PathBuf, Vec<u8>)]) -> Result<()> {
    let mut staged = Vec::with_capacity(files.len());
    for (path, contents) in files {
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| write_err(path, e))?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| write_err(path, e))?;
        tmp.write_all(contents).map_err(|e| write_err(path, e))?;
        tmp.as_file().sync_all().map_err(|e| write_err(path, e))?;
        staged.push((tmp, path));
    }
    for (tmp, path) in staged {
        tmp.persist(path).map_err(|e| write_err(path, e.error))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_every_file_with_its_contents() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("sub/a.json");
        let b = dir.path().join("b.csv");
        write_files_atomically(&[(a.clone(), b"{}".to_vec()), (b.clone(), b"x\n".to_vec())]).unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"{}");
        assert_eq!(std::fs::read(&b).unwrap(), b"x\n");
        let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 2, "temporary files must not remain");
    }

    #[test]
    fn unwritable_destination_is_an_error_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, b"").unwrap();
        let err = write_files_atomically(&[(blocker.join("x.json"), b"{}".to_vec())]).unwrap_err();
        assert!(err.to_string().contains("x.json"), "{err}");
    }
}
