//! Which files of a data folder hold which domain.
//!
//! Domain names by file: `<d>_features.npy` → `d`; `<d>.csv` → `d`; `<d>.mat` → `d`, except
//! that a `.mat` stem with an underscore lists only its part before the first underscore
//! (`amazon_SURF_L10.mat` → `amazon`), matching the `<domain>_*.mat` pattern the loader
//! accepts. (`Real_World.mat` is listed as `Real`, and loads as `Real` or `Real_World`.)

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// Where one domain's data live.
#[derive(Debug)]
pub(super) enum Source {
    Npy { features: PathBuf, labels: Option<PathBuf> },
    Mat(PathBuf),
    Csv(PathBuf),
}

impl Source {
    fn describe(&self) -> String {
        match self {
            Source::Npy { features, .. } => file_name(features),
            Source::Mat(p) | Source::Csv(p) => file_name(p),
        }
    }
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// Names of the domains present in `dir`, sorted.
pub fn list_domains(dir: &Path) -> Result<Vec<String>> {
    let mut out: Vec<String> = file_names(dir)?.iter().filter_map(|f| domain_of(f)).collect();
    out.sort();
    out.dedup();
    Ok(out)
}

fn domain_of(file: &str) -> Option<String> {
    let name = if let Some(d) = file.strip_suffix("_features.npy") {
        d
    } else if let Some(d) = file.strip_suffix(".csv") {
        d
    } else if let Some(stem) = file.strip_suffix(".mat") {
        match stem.split_once('_') {
            Some((d, _)) if !d.is_empty() => d,
            _ => stem,
        }
    } else {
        return None;
    };
    (!name.is_empty()).then(|| name.to_string())
}

/// The files holding `domain` in `dir`; an error when there are none or several.
pub(super) fn find_domain(dir: &Path, domain: &str) -> Result<Source> {
    let names = file_names(dir)?;
    let unknown = |reason: String| Error::UnknownDomain {
        dir: dir.to_path_buf(),
        domain: domain.to_string(),
        reason,
    };
    if domain.is_empty() || domain.contains(['/', '\\']) || domain == "." || domain == ".." {
        return Err(unknown("not a valid domain name".into()));
    }
    let has = |f: &str| names.iter().any(|n| n == f);
    let mut found = Vec::new();
    let feats = format!("{domain}_features.npy");
    if has(&feats) {
        let labels = format!("{domain}_labels.npy");
        found.push(Source::Npy {
            features: dir.join(&feats),
            labels: has(&labels).then(|| dir.join(&labels)),
        });
    }
    let prefix = format!("{domain}_");
    for n in &names {
        let is_mat = n.strip_suffix(".mat").is_some_and(|s| s == domain || s.starts_with(&prefix));
        if is_mat {
            found.push(Source::Mat(dir.join(n)));
        }
    }
    let csv = format!("{domain}.csv");
    if has(&csv) {
        found.push(Source::Csv(dir.join(&csv)));
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => {
            let known = list_domains(dir)?;
            let mut reason = if known.is_empty() {
                "the folder holds no domain files (<domain>_features.npy, <domain>.mat, <domain>_*.mat, <domain>.csv)".to_string()
            } else {
                format!("domains in this folder: {}", known.join(", "))
            };
            if has(&format!("{domain}_labels.npy")) {
                reason.push_str(&format!("; {domain}_labels.npy exists but {feats} is missing"));
            }
            Err(unknown(reason))
        }
        _ => Err(Error::bad_file(
            dir,
            format!(
                "domain '{domain}' is ambiguous, several files match: {} (keep one, or rename the others)",
                found.iter().map(Source::describe).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

/// All `.mat` files of `dir` (for the folder-wide 1-based label rule), sorted.
pub(super) fn mat_files(dir: &Path) -> Result<Vec<PathBuf>> {
    Ok(file_names(dir)?.into_iter().filter(|n| n.ends_with(".mat")).map(|n| dir.join(n)).collect())
}

/// Names of the regular files in `dir`, sorted; a clear error when `dir` is not a folder.
fn file_names(dir: &Path) -> Result<Vec<String>> {
    if !dir.exists() {
        return Err(Error::bad_file(dir, "data folder does not exist"));
    }
    if !dir.is_dir() {
        return Err(Error::bad_file(dir, "not a folder (a data folder is expected)"));
    }
    let io = |source| Error::Io { path: dir.to_path_buf(), source };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        // Follow symlinks: data folders are often links to shared storage.
        if entry.path().is_file() {
            if let Some(n) = entry.file_name().to_str() {
                out.push(n.to_string());
            }
        }
    }
    out.sort();
    Ok(out)
}
