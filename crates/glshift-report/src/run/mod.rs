//! `glshift report RUN_DIR`: figures and a self-contained `report.html` for one fit.

mod figures;
mod load;
mod page;

pub use figures::{run_figures, FigureOptions};
pub use load::{load_run, read_summary, setting, Embedding, RunData};
pub use page::{comparison, run_page};

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::figure::Figure;

/// What a report wrote.
#[derive(Clone, Debug)]
pub struct Written {
    pub html: PathBuf,
    pub figures: Vec<PathBuf>,
    pub notes: Vec<String>,
}

/// `(path, bytes)` of each figure as `dir/figures/NAME.png` and `.svg`.
pub fn figure_files(dir: &Path, figures: &[Figure]) -> Vec<(PathBuf, Vec<u8>)> {
    figures
        .iter()
        .flat_map(|f| {
            [
                (dir.join("figures").join(format!("{}.png", f.name)), f.png.clone()),
                (dir.join("figures").join(format!("{}.svg", f.name)), f.svg.clone().into_bytes()),
            ]
        })
        .collect()
}

/// Loads the run (and the baseline), draws every figure, and writes `dir/figures/*` and
/// `dir/report.html` together atomically: on any error nothing is written.
pub fn write_run_report(
    dir: &Path,
    baseline: Option<&Path>,
    opts: &FigureOptions,
) -> Result<Written> {
    let run = load_run(dir)?;
    let base = baseline.map(load_run).transpose()?;
    let (figures, notes) = run_figures(&run, opts)?;
    let html = run_page(&run, base.as_ref(), &figures, &notes);
    let mut files = figure_files(dir, &figures);
    let paths = files.iter().map(|f| f.0.clone()).collect();
    let html_path = dir.join("report.html");
    files.push((html_path.clone(), html.into_bytes()));
    glshift::output::write_files_atomically(&files)?;
    Ok(Written { html: html_path, figures: paths, notes })
}
