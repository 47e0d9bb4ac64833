//! Bench summary: one group of bars per task, one bar per method (mean accuracy over seeds,
//! with a ± std whisker), and the grid's average as the last group.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::error::{Error, Result};
use crate::figure::{class_color, draw_category_labels, font, render, Draw, DrawResult, Figure};

#[derive(Clone, Debug)]
pub struct MethodBars {
    pub title: String,
    pub groups: Vec<String>,
    pub methods: Vec<String>,
    /// `values[m][g]` = (mean, std) in %, `None` when that run is missing.
    pub values: Vec<Vec<Option<(f64, f64)>>>,
}

impl MethodBars {
    pub fn render(&self, name: &str, caption: &str) -> Result<Figure> {
        if self.groups.is_empty()
            || self.methods.is_empty()
            || self.values.len() != self.methods.len()
            || self.values.iter().any(|v| v.len() != self.groups.len())
        {
            return Err(Error::bad_input(name, "bars need one value per method and group"));
        }
        let w = (120 + 70 * self.groups.len() as u32).clamp(600, 1400);
        render(name, caption, (w, 460), self)
    }
}

impl Draw for MethodBars {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let vals: Vec<(f64, f64)> = self.values.iter().flatten().flatten().copied().collect();
        let lo = vals.iter().map(|(m, s)| m - s).fold(100.0, f64::min);
        let y0 = ((lo - 5.0) / 10.0).floor().clamp(0.0, 9.0) * 10.0;
        let g = self.groups.len();
        let (w, _) = root.dim_in_pixel();
        let (plot, legend) = root.split_horizontally(w.saturating_sub(120));
        let mut chart = ChartBuilder::on(&plot)
            .caption(&self.title, font(16.0))
            .margin(12)
            .x_label_area_size(34)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..g as f64, y0..100.0)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .x_labels(0)
            .y_desc("target accuracy (%)")
            .label_style(font(11.0))
            .axis_desc_style(font(12.0))
            .draw()?;
        let width = 0.8 / self.methods.len() as f64;
        for (m, (method, row)) in self.methods.iter().zip(&self.values).enumerate() {
            let color = class_color(m);
            let x = move |j: usize| j as f64 + 0.1 + m as f64 * width;
            chart.draw_series(row.iter().enumerate().filter_map(|(j, v)| {
                let (mean, _) = (*v)?;
                Some(Rectangle::new([(x(j), y0), (x(j) + width * 0.9, mean)], color.filled()))
            }))?;
            let ly = 50 + 22 * m as i32;
            legend.draw(&Rectangle::new([(8, ly - 6), (20, ly + 6)], color.filled()))?;
            legend.draw(&Text::new(
                method.clone(),
                (26, ly),
                font(12.0).pos(Pos::new(HPos::Left, VPos::Center)),
            ))?;
            chart.draw_series(row.iter().enumerate().filter_map(|(j, v)| {
                let (mean, sd) = (*v)?;
                let cx = x(j) + width * 0.45;
                Some(PathElement::new(
                    vec![(cx, (mean - sd).max(y0)), (cx, (mean + sd).min(100.0))],
                    BLACK.stroke_width(1),
                ))
            }))?;
            if self.methods.len() * g <= 40 {
                let above = Pos::new(HPos::Center, VPos::Bottom);
                chart.draw_series(row.iter().enumerate().filter_map(|(j, v)| {
                    let (mean, _) = (*v)?;
                    Some(Text::new(
                        format!("{mean:.1}"),
                        (x(j) + width * 0.45, mean),
                        font(9.0).pos(above),
                    ))
                }))?;
            }
        }
        draw_category_labels(&mut chart, &self.groups, y0)?;
        Ok(())
    }
}
