//! A `.npy` feature matrix read where it lies: any rows, any time, without holding the file in
//! memory. A fit on data larger than memory reads its batches and its passes through it.
//!
//! Positional reads (`pread`), not a memory map: a mapped file that shrinks under the process
//! kills it with SIGBUS, while a short read is an error that names the file. Every read also
//! compares the file's length and modification time with those it had when opened, so a file
//! rewritten or truncated during a fit stops the fit with an error naming it, never a crash and
//! never a silently mixed result. (A change that keeps both the length and the modification
//! time cannot be seen; nothing short of reading every byte again could see it.)

use std::fs::{File, Metadata};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use ndarray::{ArrayViewMut2, Axis};

use super::npy_rows::{open_npy, NpyLayout};
use crate::{Error, Result};

/// An open C-order `.npy` file of shape `n × d` (any dtype [`super::NpyRows`] reads), rows
/// read on demand and converted to f32 exactly as the whole-file reader converts them.
#[derive(Debug)]
pub struct FeatureFile {
    file: File,
    path: PathBuf,
    layout: NpyLayout,
    /// Length and modification time when opened.
    stamp: (u64, Option<SystemTime>),
}

impl FeatureFile {
    /// Opens `path` and checks its header and length (the errors of [`super::NpyRows::open`]).
    /// Returns `Ok(None)` for a Fortran-order file, whose rows are not contiguous: load those
    /// whole instead.
    pub fn open(path: &Path) -> Result<Option<Self>> {
        let (file, layout) = open_npy(path)?;
        if layout.fortran {
            return Ok(None);
        }
        let meta =
            file.metadata().map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
        Ok(Some(FeatureFile { file, path: path.to_path_buf(), layout, stamp: stamp(&meta) }))
    }

    /// Rows n.
    pub fn nrows(&self) -> usize {
        self.layout.n
    }

    /// Columns d.
    pub fn ncols(&self) -> usize {
        self.layout.d
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Fills row `i` of `out` (`rows.len() × d`) with row `rows[i]` of the file. Runs of
    /// consecutive rows are read at once. Errors, naming the file: a row index past the end
    /// (a caller's bug, reported rather than trusted), a read error, or a file that changed
    /// since it was opened.
    pub fn read_rows(&self, rows: &[usize], mut out: ArrayViewMut2<f32>) -> Result<()> {
        let (n, d) = (self.layout.n, self.layout.d);
        if out.nrows() != rows.len() || out.ncols() != d {
            return Err(Error::Shape {
                what: format!("rows read from {}", self.path.display()),
                expected: format!("{} × {d}", rows.len()),
                found: format!("{} × {}", out.nrows(), out.ncols()),
            });
        }
        if let Some(&bad) = rows.iter().find(|&&r| r >= n) {
            return Err(Error::bad_file(
                &self.path,
                format!("row {bad} asked for, but the file has {n} rows"),
            ));
        }
        let native = self.layout.native_f32() && out.is_standard_layout();
        let mut buf = Vec::new();
        let mut i = 0;
        while i < rows.len() {
            let mut run = 1;
            while i + run < rows.len() && rows[i + run] == rows[i] + run {
                run += 1;
            }
            if native {
                // The file's bytes are the values: read them straight into the output rows.
                let dst = &mut out.as_slice_mut().expect("standard layout")[i * d..(i + run) * d];
                self.read_bytes(rows[i], bytemuck::cast_slice_mut(dst))?;
            } else {
                buf.resize(run * d * self.layout.size, 0);
                self.read_bytes(rows[i], &mut buf)?;
                let mut block = out.slice_axis_mut(Axis(0), (i..i + run).into());
                for (row, bytes) in
                    block.axis_iter_mut(Axis(0)).zip(buf.chunks_exact(d * self.layout.size))
                {
                    self.layout.convert(bytes, row);
                }
            }
            i += run;
        }
        self.check_unchanged()
    }

    /// Fills `buf` with the raw bytes of the rows from row `first` (a whole number of rows).
    fn read_bytes(&self, first: usize, buf: &mut [u8]) -> Result<()> {
        let row_bytes = self.layout.d * self.layout.size;
        let at = self.layout.data_start + (first * row_bytes) as u64;
        self.file.read_exact_at(buf, at).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                self.changed("it became shorter while it was read")
            }
            _ => Error::Io { path: self.path.clone(), source: e },
        })
    }

    /// An error unless the file has the length and modification time it had when opened.
    pub fn check_unchanged(&self) -> Result<()> {
        let meta =
            self.file.metadata().map_err(|source| Error::Io { path: self.path.clone(), source })?;
        let now = stamp(&meta);
        if now.0 != self.stamp.0 {
            return Err(
                self.changed(&format!("its length went from {} to {} bytes", self.stamp.0, now.0))
            );
        }
        if now.1 != self.stamp.1 {
            return Err(self.changed("it was modified"));
        }
        Ok(())
    }

    fn changed(&self, what: &str) -> Error {
        Error::bad_file(
            &self.path,
            format!("the features file changed while glshift was reading it ({what}); rerun once it is written"),
        )
    }
}

fn stamp(meta: &Metadata) -> (u64, Option<SystemTime>) {
    (meta.len(), meta.modified().ok())
}

#[cfg(test)]
mod tests;
