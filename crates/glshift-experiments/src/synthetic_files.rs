//! Writes a [`crate::synthetic`] task of any size as a data folder `glshift fit` reads
//! (`glshift generate`): `source_features.npy` / `target_features.npy` (f32, n × d, C order),
//! `source_labels.npy` / `target_labels.npy` (i64), `classes.txt` and `generate.json` (the
//! settings and the target prior drawn).
//!
//! Rows are drawn and written in chunks of [`CHUNK_ROWS`], so memory is O(chunk × d + n) (the
//! labels), whatever the size: a million rows of 2048 dims (an 8 GB file) need a few tens of MB.
//! The files are the same bytes as the in-memory [`crate::synthetic::generate`] of the same
//! settings (one ChaCha8 stream, drawn in the same order). Every file is written to a temporary
//! sibling and renamed into place only when all are complete: a failure leaves no partial file.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use tempfile::NamedTempFile;

use crate::synthetic::{SyntheticConfig, SyntheticStream};
use crate::{Error, Result};

/// Rows drawn and written per chunk.
pub const CHUNK_ROWS: usize = 4096;

/// What `generate.json` holds.
#[derive(Clone, Debug, Serialize)]
pub struct GenerateReport {
    pub glshift_version: String,
    pub settings: SyntheticConfig,
    /// The Dirichlet draw the target labels were sampled from (the target's true prior).
    pub target_prior: Vec<f64>,
    pub files: Vec<String>,
}

fn write_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Write { path: path.to_path_buf(), reason: e.to_string() }
}

/// The `.npy` version-1.0 header of a little-endian C-order array of `descr` and `shape`.
fn npy_header(descr: &str, shape: &[usize]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|s| s.to_string()).collect();
    let shape =
        if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // Magic (6) + version (2) + length (2) + dict + '\n' is padded to a multiple of 64.
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((dict.len() as u16).to_le_bytes());
    out.extend(dict.as_bytes());
    out
}

/// A file being written beside its final path.
struct Staged {
    tmp: BufWriter<NamedTempFile>,
    path: PathBuf,
}

impl Staged {
    fn new(dir: &Path, name: &str) -> Result<Staged> {
        let path = dir.join(name);
        let tmp = glshift::output::temp_file_in(dir).map_err(|e| write_err(&path, e))?;
        Ok(Staged { tmp: BufWriter::with_capacity(1 << 20, tmp), path })
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.tmp.write_all(bytes).map_err(|e| write_err(&self.path, e))
    }

    fn finish(self) -> Result<(NamedTempFile, PathBuf)> {
        let path = self.path;
        let tmp = self.tmp.into_inner().map_err(|e| write_err(&path, e.error()))?;
        tmp.as_file().sync_all().map_err(|e| write_err(&path, e))?;
        Ok((tmp, path))
    }
}

/// Draws `n` rows (`draw(class, out)` per row, classes `labels`) in chunks into a staged f32
/// `.npy`, and the labels into a staged i64 `.npy`.
fn write_domain(
    dir: &Path,
    name: &str,
    labels: &[usize],
    d: usize,
    draw: &mut dyn FnMut(usize, &mut [f32]),
) -> Result<[Staged; 2]> {
    let mut x = Staged::new(dir, &format!("{name}_features.npy"))?;
    x.write(&npy_header("<f4", &[labels.len(), d]))?;
    let mut rows = vec![0f32; CHUNK_ROWS * d];
    let mut bytes = Vec::with_capacity(CHUNK_ROWS * d * 4);
    for chunk in labels.chunks(CHUNK_ROWS) {
        for (i, &k) in chunk.iter().enumerate() {
            draw(k, &mut rows[i * d..(i + 1) * d]);
        }
        bytes.clear();
        bytes.extend(rows[..chunk.len() * d].iter().flat_map(|v| v.to_le_bytes()));
        x.write(&bytes)?;
    }
    let mut y = Staged::new(dir, &format!("{name}_labels.npy"))?;
    y.write(&npy_header("<i8", &[labels.len()]))?;
    let label_bytes: Vec<u8> = labels.iter().flat_map(|&k| (k as i64).to_le_bytes()).collect();
    y.write(&label_bytes)?;
    Ok([x, y])
}

/// Writes the task of `cfg` into `dir` (created if needed) as the module docs describe, calling
/// `progress(rows)` after each domain; returns what `generate.json` holds.
pub fn write_synthetic_folder(
    cfg: &SyntheticConfig,
    dir: &Path,
    progress: &mut dyn FnMut(usize),
) -> Result<GenerateReport> {
    let mut stream = SyntheticStream::new(cfg)?;
    std::fs::create_dir_all(dir).map_err(|e| write_err(dir, e))?;
    let d = cfg.dim;
    let (ys, yt) = (std::mem::take(&mut stream.ys), std::mem::take(&mut stream.yt));
    let mut staged: Vec<Staged> = Vec::new();
    staged.extend(write_domain(dir, "source", &ys, d, &mut |k, out| stream.source_row(k, out))?);
    progress(ys.len());
    let mut scratch = vec![0f64; d];
    staged.extend(write_domain(dir, "target", &yt, d, &mut |k, out| {
        stream.target_row(k, &mut scratch, out)
    })?);
    progress(yt.len());
    let mut classes = Staged::new(dir, "classes.txt")?;
    classes
        .write((0..cfg.n_classes).map(|k| format!("class{k}\n")).collect::<String>().as_bytes())?;
    staged.push(classes);
    let mut files: Vec<String> = staged
        .iter()
        .map(|s| s.path.file_name().unwrap_or_default().to_string_lossy().into_owned())
        .collect();
    files.push("generate.json".into());
    let report = GenerateReport {
        glshift_version: env!("CARGO_PKG_VERSION").to_string(),
        settings: cfg.clone(),
        target_prior: stream.target_prior.clone(),
        files,
    };
    let mut json = Staged::new(dir, "generate.json")?;
    json.write(&serde_json::to_vec_pretty(&report).expect("report serialises"))?;
    staged.push(json);
    let finished = staged.into_iter().map(Staged::finish).collect::<Result<Vec<_>>>()?;
    for (tmp, path) in finished {
        tmp.persist(&path).map_err(|e| write_err(&path, e.error))?;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::generate;
    use ndarray::{Array1, Array2};

    #[test]
    fn the_files_hold_the_in_memory_task_bit_for_bit_across_chunks() {
        let dir = tempfile::tempdir().unwrap();
        // More rows than one chunk, so the chunk boundary is crossed.
        let cfg = SyntheticConfig {
            n_source: CHUNK_ROWS + 37,
            n_target: 500,
            dim: 6,
            n_classes: 3,
            ..Default::default()
        };
        let report = write_synthetic_folder(&cfg, dir.path(), &mut |_| {}).unwrap();
        let task = generate(&cfg).unwrap();
        let xs: Array2<f32> =
            ndarray_npy::read_npy(dir.path().join("source_features.npy")).unwrap();
        let xt: Array2<f32> =
            ndarray_npy::read_npy(dir.path().join("target_features.npy")).unwrap();
        let yt: Array1<i64> = ndarray_npy::read_npy(dir.path().join("target_labels.npy")).unwrap();
        assert_eq!(xs, task.source.features);
        assert_eq!(xt, task.target.features);
        let want: Vec<i64> = task.target.labels.unwrap().iter().map(|&k| k as i64).collect();
        assert_eq!(yt.to_vec(), want);
        assert_eq!(report.target_prior, task.target_prior);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("classes.txt")).unwrap(),
            "class0\nclass1\nclass2\n"
        );
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let mut want = report.files.clone();
        want.sort();
        assert_eq!(names, want, "no temporary file may remain");
    }

    #[test]
    fn the_folder_loads_as_two_domains() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = SyntheticConfig {
            n_source: 120,
            n_target: 80,
            dim: 5,
            n_classes: 4,
            ..Default::default()
        };
        write_synthetic_folder(&cfg, dir.path(), &mut |_| {}).unwrap();
        let s = glshift::data::load_domain(dir.path(), "source").unwrap();
        let t = glshift::data::load_domain(dir.path(), "target").unwrap();
        assert_eq!((s.n(), t.n(), s.n_classes()), (120, 80, 4));
    }

    #[test]
    fn invalid_settings_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let cfg = SyntheticConfig { n_classes: 1, ..Default::default() };
        assert!(write_synthetic_folder(&cfg, &out, &mut |_| {}).is_err());
        assert!(!out.exists());
    }
}
