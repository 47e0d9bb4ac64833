//! Class-prototype distance matrices (paper, "pairwise distances"): one cell per class pair,
//! darker = smaller, the value printed in each cell and the diagonal outlined.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::error::Result;
use crate::figure::{font, render, short_label, Draw, DrawResult, Figure};

/// A c_r × c_c matrix with row and column names; `None` cells are drawn grey with "–".
#[derive(Clone, Debug)]
pub struct Heatmap {
    pub title: String,
    /// Second title line (e.g. the diagonal mean).
    pub subtitle: String,
    pub row_axis: String,
    pub col_axis: String,
    pub row_names: Vec<String>,
    pub col_names: Vec<String>,
    pub values: Vec<Vec<Option<f64>>>,
}

const LEFT: i32 = 150;
const TOP: i32 = 80;
const RIGHT: i32 = 90;
const BOTTOM: i32 = 40;

fn cell_size(n: usize) -> i32 {
    (600 / n.max(1) as i32).clamp(22, 72)
}

/// Viridis-like map: t = 0 (small distance) dark purple, t = 1 light yellow.
pub fn colormap(t: f64) -> RGBColor {
    const A: [(f64, f64, f64); 5] = [
        (68.0, 1.0, 84.0),
        (59.0, 82.0, 139.0),
        (33.0, 145.0, 140.0),
        (94.0, 201.0, 98.0),
        (253.0, 231.0, 37.0),
    ];
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 } * (A.len() - 1) as f64;
    let i = (t.floor() as usize).min(A.len() - 2);
    let f = t - i as f64;
    let mix = |a: f64, b: f64| (a + f * (b - a)).round() as u8;
    RGBColor(mix(A[i].0, A[i + 1].0), mix(A[i].1, A[i + 1].1), mix(A[i].2, A[i + 1].2))
}

impl Heatmap {
    fn max_value(&self) -> f64 {
        self.values
            .iter()
            .flatten()
            .flatten()
            .copied()
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max)
    }

    /// Renders to a PNG + SVG sized for the matrix.
    pub fn render(&self, name: &str, caption: &str) -> Result<Figure> {
        let cell = cell_size(self.row_names.len().max(self.col_names.len()));
        let w = LEFT + RIGHT + cell * self.col_names.len() as i32;
        let h = TOP + BOTTOM + cell * self.row_names.len() as i32;
        render(name, caption, (w.max(420) as u32, h as u32), self)
    }
}

impl Draw for Heatmap {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let cell = cell_size(self.row_names.len().max(self.col_names.len()));
        let max = self.max_value();
        let digits = if max < 10.0 {
            3
        } else if max < 100.0 {
            2
        } else {
            1
        };
        let center = Pos::new(HPos::Center, VPos::Center);
        root.draw(&Text::new(self.title.clone(), (10, 6), font(16.0)))?;
        root.draw(&Text::new(self.subtitle.clone(), (10, 26), font(13.0)))?;
        let value_size = (f64::from(cell) / 4.8).clamp(7.0, 13.0);
        for (r, row) in self.values.iter().enumerate() {
            for (c, v) in row.iter().enumerate() {
                let (x0, y0) = (LEFT + c as i32 * cell, TOP + r as i32 * cell);
                let (fill, text) = match v {
                    Some(v) => {
                        (colormap(if max > 0.0 { v / max } else { 0.0 }), format!("{v:.digits$}"))
                    }
                    None => (RGBColor(215, 215, 215), "–".to_string()),
                };
                root.draw(&Rectangle::new([(x0, y0), (x0 + cell, y0 + cell)], fill.filled()))?;
                let dark = v.is_some_and(|v| max <= 0.0 || v / max < 0.55);
                let color = if dark { WHITE } else { BLACK };
                let style = font(value_size).color(&color).pos(center);
                root.draw(&Text::new(text, (x0 + cell / 2, y0 + cell / 2), style))?;
                if r == c {
                    root.draw(&Rectangle::new(
                        [(x0, y0), (x0 + cell - 1, y0 + cell - 1)],
                        BLACK.stroke_width(2),
                    ))?;
                }
            }
        }
        let label_chars = (cell / 7).max(3) as usize;
        let right = Pos::new(HPos::Right, VPos::Center);
        for (r, name) in self.row_names.iter().enumerate() {
            let y = TOP + r as i32 * cell + cell / 2;
            root.draw(&Text::new(short_label(name, 18), (LEFT - 6, y), font(12.0).pos(right)))?;
        }
        let bottom = Pos::new(HPos::Center, VPos::Bottom);
        for (c, name) in self.col_names.iter().enumerate() {
            let x = LEFT + c as i32 * cell + cell / 2;
            root.draw(&Text::new(
                short_label(name, label_chars),
                (x, TOP - 4),
                font(11.0).pos(bottom),
            ))?;
        }
        let n_rows = self.row_names.len() as i32;
        let n_cols = self.col_names.len() as i32;
        root.draw(&Text::new(self.col_axis.clone(), (LEFT, TOP - 28), font(13.0)))?;
        let below = TOP + n_rows * cell + 8;
        root.draw(&Text::new(format!("rows: {}", self.row_axis), (LEFT, below), font(13.0)))?;
        // Colour bar.
        let (bx, by, bh) = (LEFT + n_cols * cell + 20, TOP, n_rows * cell);
        for i in 0..bh {
            let t = 1.0 - f64::from(i) / f64::from(bh.max(1));
            root.draw(&Rectangle::new(
                [(bx, by + i), (bx + 16, by + i + 1)],
                colormap(t).filled(),
            ))?;
        }
        let left = Pos::new(HPos::Left, VPos::Center);
        root.draw(&Text::new(format!("{max:.digits$}"), (bx + 20, by + 6), font(11.0).pos(left)))?;
        root.draw(&Text::new(
            format!("{:.digits$}", 0.0),
            (bx + 20, by + bh - 6),
            font(11.0).pos(left),
        ))?;
        Ok(())
    }
}
