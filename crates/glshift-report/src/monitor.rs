//! The page of `glshift monitor`: a kept model on a sequence of batches. One panel per class:
//! the estimated proportion of each batch with its interval (the true proportion as a cross
//! where the batch has labels), batches whose target test fired (not a label shift of the
//! fitted target) marked, and a table of every batch with its three tests (failed batches with
//! their error).

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::{Error, Result};
use crate::figure::{class_color, font, render, short_label, Draw, DrawResult, Figure};
use crate::html::{num, pct, Page};
use glshift::model::BatchPrior;

/// Below this p-value a test's alarm fires (the target test's, the residual test's, the move
/// test's): the core's [`glshift::model::TARGET_ALARM_P`].
pub const ALARM_P: f64 = glshift::model::TARGET_ALARM_P;

/// One batch of the sequence, in name order.
#[derive(Clone, Debug)]
pub struct MonitorBatch {
    pub name: String,
    pub n_rows: usize,
    /// The estimate, or why the batch could not be used (`Err`: the message names its file).
    pub outcome: std::result::Result<BatchPrior, String>,
    /// True class proportions and accuracies (re-weighted, plain) where labels were given.
    pub truth: Option<Vec<f64>>,
    pub accuracy: Option<f64>,
    pub unadapted_accuracy: Option<f64>,
}

impl MonitorBatch {
    pub fn residual_alarm(&self) -> bool {
        self.outcome.as_ref().is_ok_and(|b| b.label_shift_p_value < ALARM_P)
    }

    /// The batch is not a label shift of the target the model was fitted on.
    pub fn target_alarm(&self) -> bool {
        self.outcome
            .as_ref()
            .is_ok_and(|b| b.target_shift.as_ref().is_some_and(|t| t.p_value < ALARM_P))
    }

    pub fn move_alarm(&self) -> bool {
        self.outcome.as_ref().is_ok_and(|b| b.batch_prior_move_p_value < ALARM_P)
    }
}

struct PriorPanels<'a> {
    classes: &'a [String],
    batches: &'a [MonitorBatch],
}

impl Draw for PriorPanels<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let root = root.titled("estimated class proportion per batch (bars: interval; ×: true proportion; ringed: target alarm)", font(15.0))?;
        let c = self.classes.len();
        let cols = c.clamp(1, 3);
        let panels = root.split_evenly((c.div_ceil(cols), cols));
        let n = self.batches.len() as f64;
        for (k, area) in panels.iter().enumerate().take(c) {
            let hi = self
                .batches
                .iter()
                .filter_map(|b| b.outcome.as_ref().ok().map(|p| p.batch_prior_ci_high[k]))
                .fold(0.05f64, f64::max);
            let hi = self
                .batches
                .iter()
                .filter_map(|b| b.truth.as_ref().map(|t| t[k]))
                .fold(hi, f64::max)
                * 1.1;
            let mut chart = ChartBuilder::on(area)
                .caption(short_label(&self.classes[k], 28), font(12.0))
                .margin(6)
                .x_label_area_size(20)
                .y_label_area_size(40)
                .build_cartesian_2d(-0.5..(n - 0.5).max(0.5), 0.0..hi)?;
            chart
                .configure_mesh()
                .light_line_style(TRANSPARENT)
                .x_labels(8)
                .x_label_formatter(&|x| format!("{x:.0}"))
                .y_label_formatter(&|y| format!("{y:.2}"))
                .label_style(font(9.0))
                .draw()?;
            for (i, b) in self.batches.iter().enumerate() {
                let x = i as f64;
                if let Ok(p) = &b.outcome {
                    let colour = class_color(k);
                    chart.draw_series(std::iter::once(PathElement::new(
                        vec![(x, p.batch_prior_ci_low[k]), (x, p.batch_prior_ci_high[k])],
                        colour.stroke_width(2),
                    )))?;
                    chart.draw_series(std::iter::once(Circle::new(
                        (x, p.batch_prior[k]),
                        3,
                        colour.filled(),
                    )))?;
                    if b.target_alarm() {
                        chart.draw_series(std::iter::once(Circle::new(
                            (x, p.batch_prior[k]),
                            7,
                            BLACK.stroke_width(2),
                        )))?;
                    }
                }
                if let Some(t) = &b.truth {
                    chart.draw_series(std::iter::once(Cross::new(
                        (x, t[k]),
                        4,
                        BLACK.stroke_width(1),
                    )))?;
                }
            }
        }
        Ok(())
    }
}

/// The figure of the estimates (one panel per class).
pub fn prior_figure(classes: &[String], batches: &[MonitorBatch]) -> Result<Figure> {
    if classes.is_empty() || batches.is_empty() {
        return Err(Error::bad_input("monitor", "no classes or no batches to draw"));
    }
    let rows = classes.len().div_ceil(3) as u32;
    render(
        "batch_priors",
        "Each batch's estimated class proportions with their intervals",
        (1000, 80 + 220 * rows),
        &PriorPanels { classes, batches },
    )
}

/// The page: a summary, the figure (when a batch succeeded), one table row per batch.
pub fn monitor_page(
    model: &str,
    classes: &[String],
    batches: &[MonitorBatch],
) -> Result<(String, Vec<Figure>)> {
    let mut page = Page::new("glshift monitor");
    let ok = batches.iter().filter(|b| b.outcome.is_ok()).count();
    let residual = batches.iter().filter(|b| b.residual_alarm()).count();
    let target = batches.iter().filter(|b| b.target_alarm()).count();
    let moved = batches.iter().filter(|b| b.move_alarm()).count();
    page.para(
        &format!(
            "Model {model}: {} batches, {ok} estimated, {} failed. Target alarm (the batch is not a label shift of the target the model was fitted on: refit, p < {ALARM_P}) on {target}; residual alarm (not a label shift of the source, p < {ALARM_P}) on {residual}; proportions moved from the model's target prior (p < {ALARM_P}) on {moved}.",
            batches.len(),
            batches.len() - ok
        ),
        Some("verdict"),
    );
    let mut figures = Vec::new();
    if ok > 0 {
        let fig = prior_figure(classes, batches)?;
        page.figure(&fig, "figures/batch_priors.svg");
        figures.push(fig);
    }
    let header: Vec<String> = [
        "batch",
        "rows",
        "move ℓ1",
        "move p",
        "residual p",
        "target p",
        "alarm",
        "accuracy",
        "plain accuracy",
        "error",
    ]
    .map(String::from)
    .to_vec();
    let rows: Vec<Vec<String>> = batches.iter().map(table_row).collect();
    page.table(&header, &rows);
    Ok((page.finish(), figures))
}

fn table_row(b: &MonitorBatch) -> Vec<String> {
    let fired =
        [(b.target_alarm(), "target"), (b.residual_alarm(), "residual"), (b.move_alarm(), "moved")];
    let alarm =
        fired.iter().filter(|(on, _)| *on).map(|(_, name)| *name).collect::<Vec<_>>().join(", ");
    match &b.outcome {
        Ok(p) => vec![
            b.name.clone(),
            b.n_rows.to_string(),
            num(Some(p.batch_prior_move_l1), 3),
            num(Some(p.batch_prior_move_p_value), 3),
            num(Some(p.label_shift_p_value), 3),
            num(p.target_shift.as_ref().map(|t| t.p_value), 3),
            alarm,
            pct(b.accuracy),
            pct(b.unadapted_accuracy),
            String::new(),
        ],
        Err(e) => vec![
            b.name.clone(),
            b.n_rows.to_string(),
            "–".into(),
            "–".into(),
            "–".into(),
            "–".into(),
            String::new(),
            "–".into(),
            "–".into(),
            e.clone(),
        ],
    }
}
