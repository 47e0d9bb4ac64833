//! Estimated vs true target prior (paper, "label shift estimation"): grouped bars per class
//! (source prior, estimate with its bootstrap interval when known, truth) above the error
//! |p̂ᵗ − pᵗ| per class.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::{Error, Result};
use crate::figure::{
    class_color, draw_category_labels, font, render, short_label, Draw, DrawResult, Figure,
};

#[derive(Clone, Debug)]
pub struct PriorFigure {
    pub title: String,
    pub class_names: Vec<String>,
    pub source: Vec<f64>,
    pub estimated: Option<Vec<f64>>,
    pub truth: Option<Vec<f64>>,
    /// Per-class (low, high) bootstrap interval of the estimate.
    pub interval: Option<(Vec<f64>, Vec<f64>)>,
}

const SOURCE: RGBColor = RGBColor(160, 160, 160);
const ESTIMATE: RGBColor = RGBColor(31, 119, 180);
const TRUTH: RGBColor = RGBColor(255, 127, 14);

impl PriorFigure {
    pub fn render(&self, name: &str, caption: &str) -> Result<Figure> {
        let c = self.class_names.len();
        let ok = |v: &Option<Vec<f64>>| v.as_ref().is_none_or(|v| v.len() == c);
        if c == 0 || self.source.len() != c || !ok(&self.estimated) || !ok(&self.truth) {
            return Err(Error::bad_input(
                name,
                format!("every prior needs {c} entries (one per class)"),
            ));
        }
        render(name, caption, (900, 620), self)
    }

    fn errors(&self) -> Option<Vec<f64>> {
        let (e, t) = (self.estimated.as_ref()?, self.truth.as_ref()?);
        Some(e.iter().zip(t).map(|(a, b)| (a - b).abs()).collect())
    }
}

impl Draw for PriorFigure {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let (top, bottom) = root.split_vertically(400);
        let names: Vec<String> = self.class_names.iter().map(|n| short_label(n, 11)).collect();
        self.draw_prior_bars(&top, &names)?;
        self.draw_errors(&bottom, &names)
    }
}

impl PriorFigure {
    /// The priors drawn as bars, in legend order: (legend label, per-class values, colour);
    /// the source prior always, the estimate and the truth when known.
    fn bar_series(&self) -> Vec<(&'static str, &Vec<f64>, RGBColor)> {
        let mut series: Vec<(&str, &Vec<f64>, RGBColor)> =
            vec![("source prior pˢ", &self.source, SOURCE)];
        if let Some(e) = &self.estimated {
            series.push(("estimated target prior", e, ESTIMATE));
        }
        if let Some(t) = &self.truth {
            series.push(("true target prior (evaluation)", t, TRUTH));
        }
        series
    }

    /// Top panel: grouped bars per class (one bar per prior of `bar_series`), the estimate's
    /// interval as a whisker when known, class `names` (one per class) under the groups.
    fn draw_prior_bars<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        names: &[String],
    ) -> DrawResult<DB> {
        let c = self.class_names.len();
        let series = self.bar_series();
        let mut ymax = series.iter().flat_map(|s| s.1.iter()).copied().fold(0.0, f64::max);
        if let Some((_, hi)) = &self.interval {
            ymax = hi.iter().copied().fold(ymax, f64::max);
        }
        let mut chart = ChartBuilder::on(area)
            .caption(self.title.clone(), font(16.0))
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..c as f64, 0.0..(ymax * 1.45).max(1e-3))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .x_labels(0)
            .y_desc("class proportion")
            .label_style(font(11.0))
            .axis_desc_style(font(12.0))
            .draw()?;
        let width = 0.8 / series.len() as f64;
        for (s, (label, values, color)) in series.iter().enumerate() {
            let color = *color;
            chart
                .draw_series(values.iter().enumerate().map(|(k, &v)| {
                    let x0 = k as f64 + 0.1 + s as f64 * width;
                    Rectangle::new([(x0, 0.0), (x0 + width * 0.92, v)], color.filled())
                }))?
                .label(*label)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                });
        }
        if let (Some((lo, hi)), true) = (&self.interval, self.estimated.is_some()) {
            let x = |k: usize| k as f64 + 0.1 + 1.46 * width;
            chart.draw_series(lo.iter().zip(hi).enumerate().map(|(k, (&l, &h))| {
                PathElement::new(vec![(x(k), l), (x(k), h)], BLACK.stroke_width(2))
            }))?;
        }
        draw_category_labels(&mut chart, names, 0.0)?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font(font(12.0))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
        Ok(())
    }

    /// Bottom panel: |p̂ᵗ − pᵗ| per class with the ℓ1 error in the caption, class `names`
    /// (one per class) under the points; a note saying why instead when it cannot be computed.
    fn draw_errors<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        names: &[String],
    ) -> DrawResult<DB> {
        let c = self.class_names.len();
        match self.errors() {
            Some(err) => {
                let emax = err.iter().copied().fold(0.0, f64::max);
                let l1: f64 = err.iter().sum();
                let mut chart = ChartBuilder::on(area)
                    .caption(format!("|estimated − true| per class (ℓ1 error {l1:.3})"), font(14.0))
                    .margin(10)
                    .x_label_area_size(34)
                    .y_label_area_size(50)
                    .build_cartesian_2d(0.0..c as f64, 0.0..(emax * 1.2).max(1e-3))?;
                chart
                    .configure_mesh()
                    .disable_x_mesh()
                    .light_line_style(TRANSPARENT)
                    .x_labels(0)
                    .label_style(font(11.0))
                    .draw()?;
                draw_category_labels(&mut chart, names, 0.0)?;
                chart.draw_series(LineSeries::new(
                    err.iter().enumerate().map(|(k, &e)| (k as f64 + 0.5, e)),
                    ESTIMATE.stroke_width(2),
                ))?;
                chart.draw_series(
                    err.iter().enumerate().map(|(k, &e)| {
                        Circle::new((k as f64 + 0.5, e), 4, class_color(k).filled())
                    }),
                )?;
            }
            None => {
                let why = if self.estimated.is_none() {
                    "This method estimates no target prior (it trains on the source prior)."
                } else {
                    "The target has no labels: the error cannot be computed."
                };
                area.draw(&Text::new(why, (60, 80), font(15.0)))?;
            }
        }
        Ok(())
    }
}
