//! Decision regions of a classifier on a 2-D representation (paper, "effect of importance
//! weighting"): the background is coloured by the predicted class on a grid, target rows are
//! dots of their true class, source class prototypes are black-edged squares.

use plotters::coord::Shift;
use plotters::prelude::*;

use glshift_experiments::iw::IwRegions;

use crate::error::{Error, Result};
use crate::figure::{class_color, font, render, short_label, Draw, DrawResult, Figure};

/// One panel: a title over the regions the ablation computed (the predicted class on a
/// `res × res` grid over `x_range × y_range`, `grid[j * res + i]` for column i, row j from the
/// bottom; target points; source prototypes).
#[derive(Clone, Debug)]
pub struct BoundaryPanel {
    pub title: String,
    pub regions: IwRegions,
}

/// Panels side by side with a shared class legend.
#[derive(Clone, Debug)]
pub struct Boundaries {
    pub title: String,
    pub class_names: Vec<String>,
    /// Classes present in the target (the others are outlier classes).
    pub shared: Vec<bool>,
    pub panels: Vec<BoundaryPanel>,
}

impl Boundaries {
    pub fn render(&self, name: &str, caption: &str) -> Result<Figure> {
        let c = self.class_names.len();
        for p in self.panels.iter().map(|p| &p.regions) {
            if p.res < 2
                || p.grid.len() != p.res * p.res
                || p.grid.iter().any(|&k| k >= c)
                || p.prototypes.len() != c
            {
                return Err(Error::bad_input(
                    name,
                    "each panel needs a res × res grid of classes < c and c prototypes",
                ));
            }
        }
        if self.panels.is_empty() {
            return Err(Error::bad_input(name, "no panel"));
        }
        render(name, caption, (460 * self.panels.len() as u32 + 170, 520), self)
    }
}

fn light(c: RGBColor) -> RGBColor {
    let f = |v: u8| (f64::from(v) * 0.35 + 255.0 * 0.65).round() as u8;
    RGBColor(f(c.0), f(c.1), f(c.2))
}

impl Draw for Boundaries {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let root = root.titled(&self.title, font(17.0))?;
        let (plots, legend) = root.split_horizontally(460 * self.panels.len() as u32);
        let areas = plots.split_evenly((1, self.panels.len()));
        for (panel, area) in self.panels.iter().zip(&areas) {
            let p = &panel.regions;
            let mut chart = ChartBuilder::on(area)
                .caption(&panel.title, font(14.0))
                .margin(10)
                .x_label_area_size(24)
                .y_label_area_size(40)
                .build_cartesian_2d(p.x_range.0..p.x_range.1, p.y_range.0..p.y_range.1)?;
            chart
                .configure_mesh()
                .disable_mesh()
                .label_style(font(10.0))
                .x_labels(5)
                .y_labels(5)
                .draw()?;
            let dx = (p.x_range.1 - p.x_range.0) / p.res as f64;
            let dy = (p.y_range.1 - p.y_range.0) / p.res as f64;
            chart.draw_series(p.grid.iter().enumerate().map(|(idx, &k)| {
                let (i, j) = ((idx % p.res) as f64, (idx / p.res) as f64);
                let (x0, y0) = (p.x_range.0 + i * dx, p.y_range.0 + j * dy);
                Rectangle::new([(x0, y0), (x0 + dx, y0 + dy)], light(class_color(k)).filled())
            }))?;
            chart.draw_series(
                p.targets.iter().map(|&(x, y, k)| Circle::new((x, y), 3, class_color(k).filled())),
            )?;
            chart.draw_series(
                p.targets
                    .iter()
                    .map(|&(x, y, _)| Circle::new((x, y), 3, BLACK.mix(0.4).stroke_width(1))),
            )?;
            chart.draw_series(p.prototypes.iter().enumerate().filter_map(|(k, at)| {
                let at = (*at)?;
                Some(
                    EmptyElement::at(at)
                        + Rectangle::new([(-7, -7), (7, 7)], class_color(k).filled())
                        + Rectangle::new([(-7, -7), (7, 7)], BLACK.stroke_width(2)),
                )
            }))?;
        }
        let mut y = 50;
        for (k, name) in self.class_names.iter().enumerate() {
            legend.draw(&Rectangle::new([(10, y - 6), (22, y + 6)], class_color(k).filled()))?;
            let role =
                if self.shared.get(k).copied().unwrap_or(true) { "shared" } else { "outlier" };
            legend.draw(&Text::new(
                format!("{} ({role})", short_label(name, 12)),
                (28, y - 6),
                font(12.0),
            ))?;
            y += 22;
        }
        legend.draw(&Text::new("■ source prototype", (10, y + 10), font(12.0)))?;
        legend.draw(&Text::new("● target row", (10, y + 30), font(12.0)))?;
        legend.draw(&Text::new("background: predicted", (10, y + 50), font(12.0)))?;
        legend.draw(&Text::new("class of F on Z", (10, y + 66), font(12.0)))?;
        Ok(())
    }
}
