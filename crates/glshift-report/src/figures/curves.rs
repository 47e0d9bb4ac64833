//! Training curves: cross-entropy over all iterations, J_TU and J_DU over the adaptation
//! stage, and the target-prior estimate per class over the adaptation iterations.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::{Error, Result};
use crate::figure::{class_color, font, render, short_label, Draw, DrawResult, Figure};

/// One iteration of `report.json`'s `history`.
#[derive(Clone, Debug)]
pub struct CurvePoint {
    pub iter: usize,
    pub adapt: bool,
    pub ce: f64,
    pub j_tu: f64,
    pub j_du: f64,
    pub target_prior: Option<Vec<f64>>,
}

#[derive(Clone, Debug)]
pub struct TrainingCurves {
    pub title: String,
    pub class_names: Vec<String>,
    pub points: Vec<CurvePoint>,
}

impl TrainingCurves {
    pub fn render(&self, name: &str, caption: &str) -> Result<Figure> {
        if self.points.is_empty() {
            return Err(Error::bad_input(name, "the history has no iteration"));
        }
        render(name, caption, (900, 760), self)
    }
}

fn span(v: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = v
        .filter(|x| x.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
    if !lo.is_finite() {
        return 0.0..1.0;
    }
    let pad = ((hi - lo) * 0.08).max(1e-6);
    (lo - pad)..(hi + pad)
}

impl Draw for TrainingCurves {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let root = root.titled(&self.title, font(17.0))?;
        let panels = root.split_evenly((3, 1));
        let x_end = self.points.iter().map(|p| p.iter).max().unwrap_or(0) as f64 + 1.0;
        let adapt_start = self.points.iter().find(|p| p.adapt).map(|p| p.iter as f64);
        let adapt: Vec<&CurvePoint> = self.points.iter().filter(|p| p.adapt).collect();
        self.draw_cross_entropy(&panels[0], x_end, adapt_start)?;
        draw_kernel_terms(&panels[1], &adapt, x_end, adapt_start)?;
        self.draw_prior_estimates(&panels[2], &adapt, x_end)
    }
}

impl TrainingCurves {
    /// Top panel: the cross-entropy of every iteration on a log scale over `0..x_end`, with a
    /// marker where the adaptation stage starts (`adapt_start`) when there is one.
    fn draw_cross_entropy<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        x_end: f64,
        adapt_start: Option<f64>,
    ) -> DrawResult<DB> {
        // CE falls by orders of magnitude: log scale, floored so that a zero loss stays drawable.
        let ce_of = |p: &CurvePoint| p.ce.max(1e-6);
        let (lo, hi) = self
            .points
            .iter()
            .map(ce_of)
            .fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
        let (lo, hi) = if lo.is_finite() && hi > 0.0 { (lo / 1.5, hi * 1.5) } else { (1e-6, 1.0) };
        let mut ce = ChartBuilder::on(area)
            .caption(
                "cross-entropy (source training rows; importance-weighted for MUL), log scale",
                font(13.0),
            )
            .margin(8)
            .margin_right(110)
            .x_label_area_size(24)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..x_end, (lo..hi).log_scale())?;
        ce.configure_mesh()
            .light_line_style(TRANSPARENT)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.0e}"))
            .label_style(font(10.0))
            .draw()?;
        ce.draw_series(LineSeries::new(
            self.points.iter().map(|p| (p.iter as f64, ce_of(p))),
            class_color(0).stroke_width(2),
        ))?;
        if let Some(a) = adapt_start {
            ce.draw_series(std::iter::once(PathElement::new(
                vec![(a, lo), (a, hi)],
                BLACK.mix(0.5),
            )))?;
            ce.draw_series(std::iter::once(Text::new("adaptation →", (a, hi), font(11.0))))?;
        }
        Ok(())
    }

    /// Bottom panel: the target-prior estimate per class over the adaptation iterations
    /// (`adapt`), each line named at its last value; a note instead when no iteration has one.
    fn draw_prior_estimates<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        adapt: &[&CurvePoint],
        x_end: f64,
    ) -> DrawResult<DB> {
        let priors: Vec<(f64, &Vec<f64>)> = adapt
            .iter()
            .filter_map(|p| p.target_prior.as_ref().map(|v| (p.iter as f64, v)))
            .collect();
        if priors.is_empty() {
            area.draw(&Text::new(
                "No target-prior estimate in the history (method without importance weights).",
                (60, 90),
                font(14.0),
            ))?;
            return Ok(());
        }
        let x0 = priors[0].0;
        let ymax = priors.iter().flat_map(|p| p.1.iter()).copied().fold(0.0, f64::max);
        let mut pc = ChartBuilder::on(area)
            .caption("estimated target prior per class", font(13.0))
            .margin(8)
            .margin_right(110)
            .x_label_area_size(24)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x_end, 0.0..(ymax * 1.1).max(1e-3))?;
        pc.configure_mesh()
            .light_line_style(TRANSPARENT)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .label_style(font(10.0))
            .x_desc("iteration")
            .axis_desc_style(font(11.0))
            .draw()?;
        for k in 0..self.class_names.len() {
            let color = class_color(k);
            pc.draw_series(LineSeries::new(
                priors.iter().filter_map(|(x, v)| v.get(k).map(|&p| (*x, p))),
                color.stroke_width(2),
            ))?;
            if let Some(&last) = priors.last().and_then(|p| p.1.get(k)).filter(|&&v| v > 0.0) {
                let name = short_label(&self.class_names[k], 12);
                pc.draw_series(std::iter::once(
                    EmptyElement::at((x_end, last))
                        + Text::new(name, (4, -6), font(10.0).color(&color)),
                ))?;
            }
        }
        Ok(())
    }
}

/// Middle panel: J_TU and J_DU over the adaptation iterations (`adapt`), from `adapt_start`
/// to `x_end`; a note instead when both stay zero (the method adds no kernel term).
fn draw_kernel_terms<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    adapt: &[&CurvePoint],
    x_end: f64,
    adapt_start: Option<f64>,
) -> DrawResult<DB> {
    let active = adapt.iter().any(|p| p.j_tu != 0.0 || p.j_du != 0.0);
    if !active {
        area.draw(&Text::new(
            "No kernel terms: this method adds none (J_TU = J_DU = 0).",
            (60, 90),
            font(14.0),
        ))?;
        return Ok(());
    }
    let x0 = adapt_start.unwrap_or(0.0);
    let mut j = ChartBuilder::on(area)
        .caption("kernel terms during adaptation", font(13.0))
        .margin(8)
        .margin_right(110)
        .x_label_area_size(24)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x_end, span(adapt.iter().flat_map(|p| [p.j_tu, p.j_du])))?;
    j.configure_mesh()
        .light_line_style(TRANSPARENT)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .label_style(font(10.0))
        .draw()?;
    for (label, k, f) in
        [("J_TU", 1, (|p: &CurvePoint| p.j_tu) as fn(&CurvePoint) -> f64), ("J_DU", 2, |p| p.j_du)]
    {
        let color = class_color(k);
        j.draw_series(LineSeries::new(
            adapt.iter().map(|p| (p.iter as f64, f(p))),
            color.stroke_width(2),
        ))?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
    }
    j.configure_series_labels()
        .label_font(font(12.0))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
