//! The HTML page of one run (optionally compared with a baseline run of the same task).

use glshift::pipeline::FitReport;

use super::load::{setting, RunData};
use crate::figure::Figure;
use crate::html::{num, pct, Page};

fn diag(m: &[Vec<Option<f64>>], k: usize) -> Option<f64> {
    m.get(k).and_then(|r| r.get(k)).copied().flatten()
}

/// Sentences comparing `run` with `base` on the analysis metrics: whether the run's target
/// J_b/J_w is higher and its mean D^st diagonal smaller, said plainly either way.
pub fn comparison(run: &FitReport, base: &FitReport) -> Vec<String> {
    let mut out = Vec::new();
    if (run.source.as_str(), run.target.as_str(), setting(run))
        != (base.source.as_str(), base.target.as_str(), setting(base))
    {
        out.push(format!(
            "Warning: the baseline is a different task ({}→{} {}) from this run ({}→{} {}).",
            base.source,
            base.target,
            setting(base),
            run.source,
            run.target,
            setting(run)
        ));
    }
    let (Some(a), Some(b)) = (&run.embedding_metrics, &base.embedding_metrics) else {
        out.push("One of the two runs has no embedding metrics (unlabelled target or an older run): no comparison.".into());
        return out;
    };
    let (m, n) = (&run.method, &base.method);
    let higher = a.target.ratio > b.target.ratio;
    out.push(format!(
        "Target J_b/J_w: {m} {:.3} vs {n} {:.3}: {m}'s is {}higher than {n}'s.",
        a.target.ratio,
        b.target.ratio,
        if higher { "" } else { "NOT " }
    ));
    let smaller = a.d_st_diagonal_mean < b.d_st_diagonal_mean;
    out.push(format!(
        "Mean diagonal of Dˢᵗ (same class across domains): {m} {:.4} vs {n} {:.4}: {m}'s is {}smaller than {n}'s.",
        a.d_st_diagonal_mean,
        b.d_st_diagonal_mean,
        if smaller { "" } else { "NOT " }
    ));
    out
}

fn summary_rows(s: &FitReport) -> Vec<Vec<String>> {
    vec![
        vec!["method".into(), s.method.clone()],
        vec!["task".into(), format!("{} → {}", s.source, s.target)],
        vec!["setting".into(), setting(s)],
        vec!["seed".into(), s.seed.to_string()],
        vec!["source / target rows".into(), format!("{} / {}", s.n_source, s.n_target)],
        vec!["classes".into(), s.classes.len().to_string()],
        vec!["target accuracy (%)".into(), pct(s.target_accuracy)],
        vec!["‖p̂ᵗ − pᵗ‖₁".into(), num(s.prior_l1_error, 3)],
        vec!["‖pˢ − pᵗ‖₁ (label shift of the task)".into(), num(s.source_target_prior_l1, 3)],
        vec!["training time (s)".into(), num(Some(s.elapsed_seconds), 1)],
    ]
}

fn metrics_section(p: &mut Page, s: &FitReport) {
    p.h2("Representation metrics (Z rescaled to unit RMS row norm)");
    let Some(m) = &s.embedding_metrics else {
        p.para(
            "No embedding metrics: the target has no labels, or the run predates them.",
            Some("note"),
        );
        return;
    };
    let header = ["domain", "J_b (inter-class)", "J_w (intra-class)", "J_b/J_w", "classes"]
        .map(String::from);
    let row = |name: &str, d: &glshift::eval::Separability| {
        vec![
            name.into(),
            num(Some(d.j_b), 4),
            num(Some(d.j_w), 4),
            num(Some(d.ratio), 3),
            d.classes_present.to_string(),
        ]
    };
    p.table(&header, &[row("source", &m.source), row("target", &m.target)]);
    p.para(
        &format!(
            "Dˢᵗ: mean diagonal {:.4} (same class across domains), mean off-diagonal {:.4}. J_b = (1/c′)Σ‖z̄_k − z̄‖², J_w = (1/n)Σ‖z_i − z̄_{{y_i}}‖²; scale factor applied to Z: {:.4}; MCMD bandwidth {}.",
            m.d_st_diagonal_mean,
            m.d_st_off_diagonal_mean,
            m.scale,
            num(m.mcmd_bandwidth, 4)
        ),
        None,
    );
}

/// The fit's label-free diagnostics (report.json → diagnostics), when it has them.
fn diagnostics_section(p: &mut Page, s: &FitReport) {
    p.h2("Diagnostics (no target label read)");
    let Some(d) = &s.diagnostics else {
        p.para(
            "No diagnostics: the fit had no source hold-out, or the run predates them.",
            Some("note"),
        );
        return;
    };
    for line in d.summary_lines() {
        p.para(&line, None);
    }
    p.table(
        &["estimate of the target prior".into(), "values".into()],
        &[
            vec!["BBSE-QP (final network)".into(), fmt(&d.bbse_qp_prior)],
            vec!["MLLS-BCTS (final network)".into(), fmt(&d.mlls_prior)],
        ],
    );
}

fn fmt(v: &[f64]) -> String {
    v.iter().map(|x| format!("{x:.3}")).collect::<Vec<_>>().join(", ")
}

fn per_class_section(p: &mut Page, s: &FitReport) {
    p.h2("Per class");
    let header = [
        "class",
        "pˢ",
        "p̂ᵗ",
        "pᵗ",
        "|p̂ᵗ − pᵗ|",
        "w",
        "accuracy (%)",
        "predicted",
        "MCMD²(s,t)",
        "Dˢᵗ_kk",
    ]
    .map(String::from);
    let m = s.embedding_metrics.as_ref();
    let rows: Vec<Vec<String>> = s
        .classes
        .iter()
        .enumerate()
        .map(|(k, name)| {
            let est = s.estimated_target_prior.as_ref().map(|v| v[k]);
            let truth = s.true_target_prior.as_ref().map(|v| v[k]);
            let err = est.zip(truth).map(|(a, b)| (a - b).abs());
            let floored = if s.floored_classes.contains(&k) { " (floored)" } else { "" };
            vec![
                name.clone(),
                num(Some(s.source_prior[k]), 3),
                format!("{}{floored}", num(est, 3)),
                num(truth, 3),
                num(err, 3),
                num(s.importance_weights.as_ref().and_then(|w| w.get(k).copied()), 2),
                pct(s.per_class_accuracy.as_ref().and_then(|v| v.get(k).copied().flatten())),
                s.predicted_class_counts.get(k).map_or("–".into(), |n| n.to_string()),
                num(m.and_then(|m| m.mcmd2_per_class.get(k).copied().flatten()), 4),
                num(m.and_then(|m| diag(&m.d_st, k)), 4),
            ]
        })
        .collect();
    p.table(&header, &rows);
}

/// The full page. `figures` are embedded; their SVGs are linked at `figures/NAME.svg`.
pub fn run_page(
    run: &RunData,
    base: Option<&RunData>,
    figures: &[Figure],
    notes: &[String],
) -> String {
    let s = &run.summary;
    let mut p = Page::new(&format!(
        "glshift {}: {} → {} ({}), seed {}",
        s.method,
        s.source,
        s.target,
        setting(s),
        s.seed
    ));
    p.table(&["run".into(), "value".into()], &summary_rows(s));
    if let Some(b) = base {
        p.h2(&format!("Compared with the baseline run {}", b.dir.display()));
        for line in comparison(s, &b.summary) {
            p.para(&line, Some("verdict"));
        }
        let header = ["", &s.method, &b.summary.method].map(String::from);
        let get = |r: &FitReport| r.embedding_metrics.clone();
        let (a, bm) = (get(s), get(&b.summary));
        p.table(
            &header,
            &[
                vec![
                    "target accuracy (%)".into(),
                    pct(s.target_accuracy),
                    pct(b.summary.target_accuracy),
                ],
                vec![
                    "target J_b/J_w".into(),
                    num(a.as_ref().map(|m| m.target.ratio), 3),
                    num(bm.as_ref().map(|m| m.target.ratio), 3),
                ],
                vec![
                    "target J_b".into(),
                    num(a.as_ref().map(|m| m.target.j_b), 4),
                    num(bm.as_ref().map(|m| m.target.j_b), 4),
                ],
                vec![
                    "target J_w".into(),
                    num(a.as_ref().map(|m| m.target.j_w), 4),
                    num(bm.as_ref().map(|m| m.target.j_w), 4),
                ],
                vec![
                    "mean diagonal of Dˢᵗ".into(),
                    num(a.as_ref().map(|m| m.d_st_diagonal_mean), 4),
                    num(bm.as_ref().map(|m| m.d_st_diagonal_mean), 4),
                ],
                vec![
                    "mean off-diagonal of Dˢᵗ".into(),
                    num(a.as_ref().map(|m| m.d_st_off_diagonal_mean), 4),
                    num(bm.as_ref().map(|m| m.d_st_off_diagonal_mean), 4),
                ],
            ],
        );
    }
    diagnostics_section(&mut p, s);
    metrics_section(&mut p, s);
    per_class_section(&mut p, s);
    p.h2("Figures");
    for f in figures {
        p.figure(f, &format!("figures/{}.svg", f.name));
    }
    for n in notes {
        p.para(n, Some("note"));
    }
    p.h2("Configuration");
    // Through a JSON value, so that keys are listed in name order as before.
    let config = serde_json::to_value(&s.config)
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_default();
    p.details("the full configuration of the fit (report.json → config)", &config);
    p.para("Target labels were read only to score the run and to draw these figures, never by training.", Some("note"));
    p.finish()
}
