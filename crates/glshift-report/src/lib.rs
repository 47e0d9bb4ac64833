//! Figures and HTML reports for glshift runs (the paper's analysis figures on our data). The
//! crate renders records it is given or reads back (`report.json` as `FitReport`,
//! `results.json` as `BenchRecord`s, an `IwAblation`); it trains nothing.
//!
//! - [`figure`]: one drawing routine rendered to PNG and SVG with the embedded font.
//! - [`figures`]: the figures themselves (heatmaps, t-SNE scatter, prior, training curves,
//!   decision boundary, bench bars).
//! - [`tsne`]: seeded Barnes–Hut t-SNE with an explicit learning rate.
//! - [`html`]: self-contained pages (figures as data URIs).
//! - [`iw`]: the figure and page of the importance-weighting ablation (decision regions on a
//!   2-D Z; the training is `glshift_experiments::iw`).
//! - [`run`]: the report of one `glshift fit` folder; [`bench`]: of a `glshift bench` folder.

// Product code: no function over clippy.toml's 80 lines (test code may be longer).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod error;
pub mod figure;
pub mod figures;
pub mod tsne;

pub use error::{Error, Result};
pub mod bench;
pub mod html;
pub mod iw;
pub mod monitor;
pub mod run;

use std::path::Path;

/// What kind of folder `glshift report` was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FolderKind {
    /// A `glshift fit` output (holds `report.json`).
    Run,
    /// A `glshift bench` output (holds `results.json`).
    Bench,
}

/// Tells a run folder from a bench folder; an error naming both files when it is neither.
pub fn folder_kind(dir: &Path) -> Result<FolderKind> {
    if !dir.is_dir() {
        return Err(Error::NotAReportFolder {
            path: dir.to_path_buf(),
            reason: "no such folder".into(),
        });
    }
    if dir.join("report.json").exists() {
        Ok(FolderKind::Run)
    } else if dir.join("results.json").exists() {
        Ok(FolderKind::Bench)
    } else {
        Err(Error::NotAReportFolder {
            path: dir.to_path_buf(),
            reason: "holds neither report.json (a `glshift fit` folder) nor results.json (a `glshift bench` folder)".into(),
        })
    }
}
