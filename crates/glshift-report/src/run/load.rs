//! Reading a run folder written by `glshift fit`: `report.json` (required; read as the type
//! that wrote it, [`FitReport`]) and the saved
//! representations `z_*.npy` / `labels_*.npy` (optional: runs made before they were saved, or
//! bench records, have none). Every problem is an error naming the file.

use std::path::{Path, PathBuf};

use glshift::pipeline::{
    FitReport, LABELS_SOURCE_FILE, LABELS_TARGET_FILE, Z_SOURCE_FILE, Z_TARGET_FILE,
};
use ndarray::{Array1, Array2};

use crate::error::{Error, Result};

/// "uda", "pda (5 target classes)", …: the setting of a run as the page shows it.
pub fn setting(report: &FitReport) -> String {
    report.protocol.label()
}

/// Z and labels of one domain.
#[derive(Clone, Debug)]
pub struct Embedding {
    pub z: Array2<f32>,
    pub labels: Option<Vec<usize>>,
}

/// A loaded run folder.
#[derive(Clone, Debug)]
pub struct RunData {
    pub dir: PathBuf,
    pub summary: FitReport,
    pub source: Option<Embedding>,
    pub target: Option<Embedding>,
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| Error::Read { path: path.to_path_buf(), reason: e.to_string() })
}

fn check_len(path: &Path, what: &str, len: usize, c: usize) -> Result<()> {
    if len == c {
        Ok(())
    } else {
        Err(Error::bad_file(path, format!("{what} has {len} entries, but there are {c} classes")))
    }
}

/// Parses and checks `report.json`.
pub fn read_summary(path: &Path) -> Result<FitReport> {
    let bytes = read(path)?;
    let s: FitReport = serde_json::from_slice(&bytes)
        .map_err(|e| Error::bad_file(path, format!("not a glshift fit report ({e})")))?;
    let c = s.classes.len();
    if c < 2 {
        return Err(Error::bad_file(
            path,
            format!("`classes` lists {c} class(es); a run has at least 2"),
        ));
    }
    check_len(path, "source_prior", s.source_prior.len(), c)?;
    for (what, v) in [
        ("estimated_target_prior", &s.estimated_target_prior),
        ("estimated_target_prior_ci_low", &s.estimated_target_prior_ci_low),
        ("estimated_target_prior_ci_high", &s.estimated_target_prior_ci_high),
        ("true_target_prior", &s.true_target_prior),
    ] {
        if let Some(v) = v {
            check_len(path, what, v.len(), c)?;
        }
    }
    if let Some(m) = &s.embedding_metrics {
        check_len(path, "embedding_metrics.d_st", m.d_st.len(), c)?;
        check_len(path, "embedding_metrics.d_tt", m.d_tt.len(), c)?;
    }
    Ok(s)
}

fn read_z(path: &Path) -> Result<Array2<f32>> {
    let z: Array2<f32> = ndarray_npy::ReadNpyExt::read_npy(std::io::Cursor::new(read(path)?))
        .map_err(|e| Error::bad_file(path, format!("not an n × d float32 .npy array ({e})")))?;
    if z.iter().any(|v| !v.is_finite()) {
        return Err(Error::bad_file(path, "holds NaN or Inf"));
    }
    Ok(z)
}

fn read_labels(path: &Path, rows: usize, c: usize) -> Result<Vec<usize>> {
    let y: Array1<i64> = ndarray_npy::ReadNpyExt::read_npy(std::io::Cursor::new(read(path)?))
        .map_err(|e| Error::bad_file(path, format!("not a 1-D int64 .npy array ({e})")))?;
    if y.len() != rows {
        return Err(Error::bad_file(path, format!("{} labels for {rows} rows of Z", y.len())));
    }
    y.iter()
        .map(|&k| {
            usize::try_from(k)
                .ok()
                .filter(|&k| k < c)
                .ok_or_else(|| Error::bad_file(path, format!("label {k} out of range 0..{c}")))
        })
        .collect()
}

fn read_embedding(
    dir: &Path,
    z_file: &str,
    labels_file: &str,
    c: usize,
) -> Result<Option<Embedding>> {
    let zp = dir.join(z_file);
    if !zp.exists() {
        return Ok(None);
    }
    let z = read_z(&zp)?;
    let lp = dir.join(labels_file);
    let labels = if lp.exists() { Some(read_labels(&lp, z.nrows(), c)?) } else { None };
    Ok(Some(Embedding { z, labels }))
}

/// Loads `dir/report.json` and, when present, the representations.
pub fn load_run(dir: &Path) -> Result<RunData> {
    let report = dir.join("report.json");
    if !dir.is_dir() {
        return Err(Error::NotAReportFolder {
            path: dir.to_path_buf(),
            reason: "no such folder".into(),
        });
    }
    let summary = read_summary(&report)?;
    let c = summary.classes.len();
    let source = read_embedding(dir, Z_SOURCE_FILE, LABELS_SOURCE_FILE, c)?;
    let target = read_embedding(dir, Z_TARGET_FILE, LABELS_TARGET_FILE, c)?;
    if let (Some(s), Some(t)) = (&source, &target) {
        if s.z.ncols() != t.z.ncols() {
            return Err(Error::bad_file(
                dir.join(Z_TARGET_FILE),
                format!("{} columns, {} has {}", t.z.ncols(), Z_SOURCE_FILE, s.z.ncols()),
            ));
        }
    }
    Ok(RunData { dir: dir.to_path_buf(), summary, source, target })
}
