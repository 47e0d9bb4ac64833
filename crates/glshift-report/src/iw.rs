//! The figure and page of the importance-weighting ablation of the paper ("effect of importance
//! weighting"): F's decision regions on a 2-D Z without and with importance weighting, with the
//! target rows and the source class prototypes, from the runs `glshift_experiments::iw` trained.

use std::path::{Path, PathBuf};

use glshift_experiments::iw::{IwAblation, IwRun};

use crate::error::{Error, Result};
use crate::figure::Figure;
use crate::figures::{Boundaries, BoundaryPanel};
use crate::html::{num, pct, Page};
use crate::run::{figure_files, Written};

/// The figure of the ablation: one panel per run.
pub fn figure(a: &IwAblation) -> Result<Figure> {
    Boundaries {
        title: format!("Decision regions on a 2-D Z, {}→{} (first {} classes, {} shared)", a.source, a.target, a.class_names.len(), a.shared.iter().filter(|&&s| s).count()),
        class_names: a.class_names.clone(),
        shared: a.shared.clone(),
        panels: a.runs.iter().map(panel).collect(),
    }
    .render("iw_boundary", "F's decision regions on Z without (left) and with (right) importance weighting; dots: target rows by true class, squares: source class prototypes")
}

fn panel(r: &IwRun) -> BoundaryPanel {
    BoundaryPanel {
        title: format!(
            "MUL {} IW: accuracy {}%",
            if r.importance_weighting { "with" } else { "without" },
            pct(r.target_accuracy)
        ),
        regions: r.regions.clone(),
    }
}

fn page(a: &IwAblation, fig: &Figure) -> String {
    let mut p =
        Page::new(&format!("glshift IW ablation: {} → {}, seed {}", a.source, a.target, a.seed));
    p.para("MUL with a 2-D representation, trained with and without importance-weighted cross-entropy on a partial task: the target keeps only the shared classes. Target labels were read to build the task (as the PDA protocol does) and to score, never by training.", None);
    let header = [
        "importance weighting",
        "target accuracy (%)",
        "target rows predicted as outlier classes",
        "area assigned to outlier classes",
        "estimated target prior",
    ]
    .map(String::from);
    let rows: Vec<Vec<String>> = a
        .runs
        .iter()
        .map(|r| {
            let prior = r.estimated_target_prior.as_ref().map_or("–".into(), |v| {
                v.iter().map(|x| format!("{x:.3}")).collect::<Vec<_>>().join(", ")
            });
            vec![
                if r.importance_weighting { "with" } else { "without" }.into(),
                pct(r.target_accuracy),
                pct(Some(r.outlier_prediction_share)),
                pct(Some(r.outlier_area_share)),
                prior,
            ]
        })
        .collect();
    p.table(&header, &rows);
    p.para(
        &format!(
            "Classes: {}.",
            a.class_names
                .iter()
                .zip(&a.shared)
                .map(|(n, &s)| format!("{n} ({})", if s { "shared" } else { "outlier" }))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None,
    );
    p.figure(fig, "figures/iw_boundary.svg");
    p.para(
        &format!(
            "Accuracy gain of IW: {} points.",
            num(
                a.runs
                    .get(1)
                    .and_then(|w| Some(100.0 * (w.target_accuracy? - a.runs[0].target_accuracy?))),
                1
            )
        ),
        None,
    );
    p.finish()
}

/// Writes `out/figures/iw_boundary.{png,svg}`, `out/iw_ablation.json` and `out/report.html`
/// atomically.
pub fn write(a: &IwAblation, out: &Path) -> Result<Written> {
    let fig = figure(a)?;
    let mut files = figure_files(out, std::slice::from_ref(&fig));
    let paths: Vec<PathBuf> = files.iter().map(|f| f.0.clone()).collect();
    let json = serde_json::to_vec_pretty(a)
        .map_err(|e| Error::bad_input("iw_ablation.json", e.to_string()))?;
    files.push((out.join("iw_ablation.json"), json));
    let html = out.join("report.html");
    files.push((html.clone(), page(a, &fig).into_bytes()));
    glshift::output::write_files_atomically(&files)?;
    Ok(Written { html, figures: paths, notes: Vec::new() })
}
