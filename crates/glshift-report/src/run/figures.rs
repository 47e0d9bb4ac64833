//! The figures of one run, from its report and saved representations.

use ndarray::{concatenate, Array2, Axis};

use glshift::pipeline::{PRIOR_CI_LEVEL, PRIOR_CI_RESAMPLES};
use glshift::train::Stage;

use super::load::{setting, Embedding, RunData};
use crate::error::Result;
use crate::figure::Figure;
use crate::figures::{CurvePoint, Heatmap, PriorFigure, Scatter, TrainingCurves};
use crate::tsne::{subsample, tsne_2d, TsneParams};

/// How the run figures are made.
#[derive(Clone, Debug)]
pub struct FigureOptions {
    pub tsne: TsneParams,
    /// At most this many rows enter a t-SNE (subsampled with the seed, split between the
    /// domains in proportion for the joint one).
    pub max_tsne_points: usize,
}

impl Default for FigureOptions {
    fn default() -> Self {
        FigureOptions { tsne: TsneParams::default(), max_tsne_points: 2500 }
    }
}

/// Rows/columns of a matrix where at least one entry is defined.
fn defined(values: &[Vec<Option<f64>>]) -> (Vec<usize>, Vec<usize>) {
    let c = values.first().map_or(0, Vec::len);
    let rows = (0..values.len()).filter(|&r| values[r].iter().any(Option::is_some)).collect();
    let cols = (0..c).filter(|&j| values.iter().any(|r| r[j].is_some())).collect();
    (rows, cols)
}

fn heatmap(
    title: String,
    subtitle: String,
    row_axis: &str,
    col_axis: &str,
    names: &[String],
    values: &[Vec<Option<f64>>],
) -> Heatmap {
    let (rows, cols) = defined(values);
    Heatmap {
        title,
        subtitle,
        row_axis: row_axis.into(),
        col_axis: col_axis.into(),
        row_names: rows.iter().map(|&r| names[r].clone()).collect(),
        col_names: cols.iter().map(|&j| names[j].clone()).collect(),
        values: rows.iter().map(|&r| cols.iter().map(|&j| values[r][j]).collect()).collect(),
    }
}

fn labelled(e: &Option<Embedding>) -> Option<(&Array2<f32>, &Vec<usize>)> {
    let e = e.as_ref()?;
    Some((&e.z, e.labels.as_ref()?))
}

/// The run's figures, in page order, and notes on figures that could not be drawn (why).
pub fn run_figures(run: &RunData, opts: &FigureOptions) -> Result<(Vec<Figure>, Vec<String>)> {
    let s = &run.summary;
    let task = format!("{} {}→{} ({})", s.method, s.source, s.target, setting(s));
    let mut figs = Vec::new();
    let mut notes = Vec::new();
    distance_heatmaps(run, &task, &mut figs, &mut notes)?;
    tsne_figures(run, opts, &task, &mut figs, &mut notes)?;
    prior_figure(run, &task, &mut figs, &mut notes)?;
    training_curves(run, &task, &mut figs, &mut notes)?;
    Ok((figs, notes))
}

/// Dˢᵗ and Dᵗᵗ heatmaps from the embedding metrics.
fn distance_heatmaps(
    run: &RunData,
    task: &str,
    figs: &mut Vec<Figure>,
    notes: &mut Vec<String>,
) -> Result<()> {
    let s = &run.summary;
    let names = &s.classes;
    match &s.embedding_metrics {
        Some(m) => {
            let sub = format!("diagonal mean {:.4}, off-diagonal mean {:.4}", m.d_st_diagonal_mean, m.d_st_off_diagonal_mean);
            let h = heatmap(format!("Dˢᵗ {task}"), sub, "source class prototypes", "target class prototypes", names, &m.d_st);
            figs.push(h.render("dst_heatmap", "Squared distances between source and target class prototypes (Z rescaled to unit RMS norm); darker = closer")?);
            let sub = format!("target J_b/J_w = {:.3} (J_b {:.4}, J_w {:.4})", m.target.ratio, m.target.j_b, m.target.j_w);
            let h = heatmap(format!("Dᵗᵗ {task}"), sub, "target class prototypes", "target class prototypes", names, &m.d_tt);
            figs.push(h.render("dtt_heatmap", "Squared distances between target class prototypes (larger off-diagonal = more separable)")?);
        }
        None => notes.push("No embedding metrics in report.json (target without labels, or a run made before they were computed): no distance heatmaps.".into()),
    }
    Ok(())
}

/// t-SNE of the target, and of source and target together.
fn tsne_figures(
    run: &RunData,
    opts: &FigureOptions,
    task: &str,
    figs: &mut Vec<Figure>,
    notes: &mut Vec<String>,
) -> Result<()> {
    let s = &run.summary;
    let names = &s.classes;
    let seed = s.seed;
    let tsne = TsneParams { seed, ..opts.tsne.clone() };
    match (labelled(&run.source), labelled(&run.target)) {
        (Some((zs, ys)), Some((zt, yt))) => {
            let it = subsample(zt.nrows(), opts.max_tsne_points, seed);
            let e = tsne_2d(zt.select(Axis(0), &it).view(), &tsne)?;
            let sc = Scatter {
                title: format!("t-SNE, target: {task}"),
                points: e.rows().into_iter().map(|r| (r[0], r[1])).collect(),
                labels: it.iter().map(|&i| yt[i]).collect(),
                is_target: vec![true; it.len()],
                class_names: names.clone(),
            };
            figs.push(sc.render("tsne_target", "t-SNE of the target representations, coloured by true class; numbers: intra-class scatter of the 2-D points")?);
            let n = zs.nrows() + zt.nrows();
            let share = |m: usize| (opts.max_tsne_points * m).div_ceil(n.max(1)).max(1);
            let is = subsample(zs.nrows(), share(zs.nrows()), seed);
            let it = subsample(zt.nrows(), share(zt.nrows()), seed ^ 1);
            let joint = concatenate![Axis(0), zs.select(Axis(0), &is), zt.select(Axis(0), &it)];
            let e = tsne_2d(joint.view(), &tsne)?;
            let sc = Scatter {
                title: format!("t-SNE, source + target: {task}"),
                points: e.rows().into_iter().map(|r| (r[0], r[1])).collect(),
                labels: is.iter().map(|&i| ys[i]).chain(it.iter().map(|&i| yt[i])).collect(),
                is_target: (0..is.len()).map(|_| false).chain((0..it.len()).map(|_| true)).collect(),
                class_names: names.clone(),
            };
            figs.push(sc.render("tsne_joint", "t-SNE of source (hollow) and target (filled) representations; numbers: intra-class scatter of the 2-D target points")?);
        }
        _ => notes.push("No z_source.npy/z_target.npy with labels in the run folder: no t-SNE figures (they need a run made by this version of glshift fit, on a labelled target).".into()),
    }
    Ok(())
}

/// Estimated vs true target prior, with the fit's interval where it has one.
fn prior_figure(
    run: &RunData,
    task: &str,
    figs: &mut Vec<Figure>,
    notes: &mut Vec<String>,
) -> Result<()> {
    let s = &run.summary;
    let names = &s.classes;
    let prior = PriorFigure {
        title: format!("Target prior, {task}"),
        class_names: names.clone(),
        source: s.source_prior.clone(),
        estimated: s.estimated_target_prior.clone(),
        truth: s.true_target_prior.clone(),
        // The fit's own bootstrap interval (`estimated_target_prior_ci_low`/`_high`), where the
        // fit could build one (an estimate and a source hold-out).
        interval: s
            .estimated_target_prior_ci_low
            .clone()
            .zip(s.estimated_target_prior_ci_high.clone()),
    };
    let caption = if prior.interval.is_some() {
        format!(
            "Estimated vs true target class proportions, the estimate's {:.0}% bootstrap interval ({} resamples), and the per-class error |p̂ᵗ − pᵗ|",
            100.0 * PRIOR_CI_LEVEL,
            PRIOR_CI_RESAMPLES
        )
    } else {
        "Estimated vs true target class proportions and the per-class error |p̂ᵗ − pᵗ|".to_string()
    };
    figs.push(prior.render("prior", &caption)?);
    if s.estimated_target_prior.is_some() && prior.interval.is_none() {
        notes.push("report.json has no bootstrap interval for the target prior (a fit without a source hold-out, or one made before fits reported it), so the prior figure has none.".into());
    }
    Ok(())
}

/// Cross-entropy, J_TU, J_DU and the prior over the iterations.
fn training_curves(
    run: &RunData,
    task: &str,
    figs: &mut Vec<Figure>,
    notes: &mut Vec<String>,
) -> Result<()> {
    let s = &run.summary;
    let names = &s.classes;
    if s.history.is_empty() {
        notes.push("report.json has no per-iteration history: no training curves.".into());
    } else {
        let curves = TrainingCurves {
            title: format!("Training, {task}"),
            class_names: names.clone(),
            points: s
                .history
                .iter()
                .map(|h| CurvePoint {
                    iter: h.iter,
                    adapt: h.stage == Stage::Adapt,
                    ce: h.ce,
                    j_tu: h.j_tu,
                    j_du: h.j_du,
                    target_prior: h.target_prior.clone(),
                })
                .collect(),
        };
        figs.push(curves.render("training_curves", "Cross-entropy, J_TU, J_DU and the target-prior estimate over the iterations (pre-training, then adaptation)")?);
    }
    Ok(())
}
