//! Atomic output files: a run either leaves complete files or none.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

fn write_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Write { path: path.to_path_buf(), reason: e.to_string() }
}

/// A temporary file in `dir`, to be renamed into place, created with the permissions of any new
/// file (0o666 less the umask, as `std::fs::write` gives) rather than `NamedTempFile`'s 0o600,
/// which left every report, model and prediction readable by its owner alone.
pub fn temp_file_in(dir: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    let mut builder = tempfile::Builder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    builder.tempfile_in(dir)
}

/// `a` as the bytes of a `.npy` file, to be written (with the other files of a run) by
/// [`write_files_atomically`]; `path` names the file in the error.
pub fn npy_bytes<T: ndarray_npy::WriteNpyExt + ?Sized>(a: &T, path: &Path) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    a.write_npy(&mut bytes).map_err(|e| write_err(path, e))?;
    Ok(bytes)
}

/// Writes all `(path, contents)` pairs so that each file appears complete or not at all: every
/// file goes to a temporary sibling first (fsynced), and only when all are written are they
/// renamed into place. Parent directories are created.
pub fn write_files_atomically(files: &[(PathBuf, Vec<u8>)]) -> Result<()> {
    write_files_atomically_with(Vec::new(), files)
}

/// A file written piece by piece (e.g. predictions of 1M rows, as they are made) into a
/// temporary sibling of `path`; it appears at `path` only through
/// [`write_files_atomically_with`], together with the other files of the run. Dropped
/// unfinished, it leaves nothing.
pub struct StagedFile {
    out: std::io::BufWriter<tempfile::NamedTempFile>,
    path: PathBuf,
}

impl StagedFile {
    /// Creates the temporary file beside `path` (and `path`'s folder if needed).
    pub fn new(path: PathBuf) -> Result<Self> {
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| write_err(&path, e))?;
        let tmp = temp_file_in(dir).map_err(|e| write_err(&path, e))?;
        Ok(StagedFile { out: std::io::BufWriter::with_capacity(1 << 20, tmp), path })
    }

    /// Appends `bytes`.
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes).map_err(|e| write_err(&self.path, e))
    }

    /// `a` as a `.npy` file at `path`, staged: written from the array as it is, without a copy
    /// of its bytes in memory ([`npy_bytes`] holds one: 1.3 GB for the Z of a 1.3 M-row fit).
    pub fn npy<T: ndarray_npy::WriteNpyExt + ?Sized>(a: &T, path: PathBuf) -> Result<Self> {
        let mut staged = StagedFile::new(path)?;
        a.write_npy(&mut staged.out).map_err(|e| write_err(&staged.path, e))?;
        Ok(staged)
    }
}

/// [`write_files_atomically`] with files already written piece by piece: the `(path, contents)`
/// pairs are staged, every file is fsynced, and only then are all renamed into place.
pub fn write_files_atomically_with(
    streamed: Vec<StagedFile>,
    files: &[(PathBuf, Vec<u8>)],
) -> Result<()> {
    let mut staged = Vec::with_capacity(streamed.len() + files.len());
    for s in streamed {
        let tmp = s.out.into_inner().map_err(|e| write_err(&s.path, e.error()))?;
        tmp.as_file().sync_all().map_err(|e| write_err(&s.path, e))?;
        staged.push((tmp, s.path));
    }
    for (path, contents) in files {
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| write_err(path, e))?;
        let mut tmp = temp_file_in(dir).map_err(|e| write_err(path, e))?;
        tmp.write_all(contents).map_err(|e| write_err(path, e))?;
        tmp.as_file().sync_all().map_err(|e| write_err(path, e))?;
        staged.push((tmp, path.clone()));
    }
    for (tmp, path) in staged {
        tmp.persist(&path).map_err(|e| write_err(&path, e.error))?;
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
        write_files_atomically(&[(a.clone(), b"{}".to_vec()), (b.clone(), b"x\n".to_vec())])
            .unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"{}");
        assert_eq!(std::fs::read(&b).unwrap(), b"x\n");
        let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 2, "temporary files must not remain");
    }

    #[test]
    fn streamed_files_appear_only_when_written_together() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.csv");
        let mut s = StagedFile::new(a.clone()).unwrap();
        s.write(b"x,").unwrap();
        s.write(b"y\n").unwrap();
        assert!(!a.exists(), "nothing appears before the end");
        write_files_atomically_with(vec![s], &[(dir.path().join("b.json"), b"{}".to_vec())])
            .unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"x,y\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        drop(StagedFile::new(dir.path().join("c.csv")).unwrap());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            2,
            "an unfinished file leaves nothing"
        );
    }

    #[test]
    fn a_staged_npy_file_has_the_bytes_of_npy_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let z = ndarray::Array2::from_shape_fn((70, 3), |(i, j)| i as f32 * 0.5 - j as f32);
        let path = dir.path().join("z.npy");
        let staged = StagedFile::npy(&z, path.clone()).unwrap();
        assert!(!path.exists(), "nothing appears before the end");
        write_files_atomically_with(vec![staged], &[]).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), npy_bytes(&z, &path).unwrap());
        // A transposed view (Fortran order): the same bytes too.
        let t = z.t();
        let tpath = dir.path().join("t.npy");
        write_files_atomically_with(vec![StagedFile::npy(&t, tpath.clone()).unwrap()], &[])
            .unwrap();
        assert_eq!(std::fs::read(&tpath).unwrap(), npy_bytes(&t, &tpath).unwrap());
    }

    #[cfg(unix)]
    #[test]
    fn outputs_get_the_permissions_of_any_new_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, b"").unwrap();
        let (a, b) = (dir.path().join("a.json"), dir.path().join("b.csv"));
        let mut staged = StagedFile::new(b.clone()).unwrap();
        staged.write(b"x\n").unwrap();
        write_files_atomically_with(vec![staged], &[(a.clone(), b"{}".to_vec())]).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        // Under the usual umask 022: 0o644, where NamedTempFile's default left 0o600.
        assert_eq!(
            (mode(&a), mode(&b)),
            (mode(&plain), mode(&plain)),
            "as std::fs::write, umask applied"
        );
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
