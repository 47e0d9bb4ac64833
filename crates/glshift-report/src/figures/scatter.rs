//! t-SNE scatter of the representation (paper, "feature visualization"): one colour per class,
//! source rows as hollow circles and target rows as filled dots, and the intra-class scatter of
//! the 2-D target points printed beside each target cluster.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::error::{Error, Result};
use crate::figure::{class_color, font, render, short_label, Draw, DrawResult, Figure};
use crate::tsne::intra_class_scatter;

/// 2-D points with class labels and domain flags.
#[derive(Clone, Debug)]
pub struct Scatter {
    pub title: String,
    pub points: Vec<(f32, f32)>,
    pub labels: Vec<usize>,
    /// true = target row (filled), false = source row (hollow).
    pub is_target: Vec<bool>,
    pub class_names: Vec<String>,
}

impl Scatter {
    /// Intra-class scatter of the target points per class (what is printed beside clusters).
    pub fn target_scatter(&self) -> Vec<Option<f64>> {
        let (pts, labs): (Vec<[f32; 2]>, Vec<usize>) = self
            .points
            .iter()
            .zip(&self.labels)
            .zip(&self.is_target)
            .filter(|(_, &t)| t)
            .map(|((&(x, y), &k), _)| ([x, y], k))
            .unzip();
        let arr = ndarray::Array2::from_shape_fn((pts.len(), 2), |(i, j)| pts[i][j]);
        intra_class_scatter(arr.view(), &labs, self.class_names.len())
    }

    pub fn render(&self, name: &str, caption: &str) -> Result<Figure> {
        let n = self.points.len();
        if n == 0 || self.labels.len() != n || self.is_target.len() != n {
            return Err(Error::bad_input(
                name,
                "scatter needs as many labels and domain flags as points, and at least one point",
            ));
        }
        if let Some(&k) = self.labels.iter().find(|&&k| k >= self.class_names.len()) {
            return Err(Error::bad_input(name, format!("label {k} has no class name")));
        }
        render(name, caption, (900, 680), self)
    }

    fn centroids(&self) -> Vec<Option<(f64, f64)>> {
        let c = self.class_names.len();
        let mut s = vec![(0.0, 0.0, 0usize); c];
        for ((&(x, y), &k), _) in
            self.points.iter().zip(&self.labels).zip(&self.is_target).filter(|(_, &t)| t)
        {
            s[k] = (s[k].0 + f64::from(x), s[k].1 + f64::from(y), s[k].2 + 1);
        }
        s.into_iter().map(|(x, y, m)| (m > 0).then(|| (x / m as f64, y / m as f64))).collect()
    }
}

fn range(v: impl Iterator<Item = f32> + Clone) -> std::ops::Range<f64> {
    let lo = v.clone().fold(f32::INFINITY, f32::min) as f64;
    let hi = v.fold(f32::NEG_INFINITY, f32::max) as f64;
    let pad = ((hi - lo) * 0.06).max(1e-3);
    (lo - pad)..(hi + pad)
}

impl Draw for Scatter {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let (plot, legend) = root.split_horizontally(720);
        let scatter = self.target_scatter();
        let mean: Vec<f64> = scatter.iter().flatten().copied().collect();
        let mean = mean.iter().sum::<f64>() / mean.len().max(1) as f64;
        let mut chart = ChartBuilder::on(&plot)
            .caption(&self.title, font(15.0))
            .margin(10)
            .x_label_area_size(24)
            .y_label_area_size(36)
            .build_cartesian_2d(
                range(self.points.iter().map(|p| p.0)),
                range(self.points.iter().map(|p| p.1)),
            )?;
        chart
            .configure_mesh()
            .disable_mesh()
            .label_style(font(10.0))
            .x_labels(5)
            .y_labels(5)
            .draw()?;
        // Source first (underneath), then target.
        chart.draw_series(
            self.points.iter().zip(&self.labels).zip(&self.is_target).filter(|(_, &t)| !t).map(
                |((&(x, y), &k), _)| {
                    Circle::new(
                        (f64::from(x), f64::from(y)),
                        3,
                        class_color(k).mix(0.7).stroke_width(1),
                    )
                },
            ),
        )?;
        chart.draw_series(
            self.points.iter().zip(&self.labels).zip(&self.is_target).filter(|(_, &t)| t).map(
                |((&(x, y), &k), _)| {
                    Circle::new((f64::from(x), f64::from(y)), 3, class_color(k).filled())
                },
            ),
        )?;
        let label = Pos::new(HPos::Left, VPos::Center);
        let marks: Vec<(usize, (f64, f64), f64)> = self
            .centroids()
            .into_iter()
            .enumerate()
            .filter_map(|(k, c)| Some((k, c?, scatter[k]?)))
            .collect();
        let colors: Vec<RGBColor> = (0..self.class_names.len()).map(class_color).collect();
        chart.draw_series(marks.into_iter().map(|(k, at, s)| {
            let text = format!("{s:.1}");
            let w = 14 + 7 * text.len() as i32;
            EmptyElement::at(at)
                + Rectangle::new([(8, -9), (w, 9)], WHITE.mix(0.8).filled())
                + Text::new(text, (10, 0), font(12.0).color(&colors[k]).pos(label))
        }))?;
        let has_source = self.is_target.iter().any(|t| !t);
        let mut y = 40;
        if has_source {
            legend.draw(&Circle::new((16, y), 4, BLACK.stroke_width(1)))?;
            legend.draw(&Text::new("source", (28, y), font(12.0).pos(label)))?;
            legend.draw(&Circle::new((96, y), 4, BLACK.filled()))?;
            legend.draw(&Text::new("target", (108, y), font(12.0).pos(label)))?;
            y += 26;
        }
        for (k, name) in self.class_names.iter().enumerate() {
            legend.draw(&Circle::new((16, y), 5, class_color(k).filled()))?;
            legend.draw(&Text::new(short_label(name, 20), (28, y), font(12.0).pos(label)))?;
            y += 20;
        }
        legend.draw(&Text::new(
            format!("mean target scatter {mean:.1}"),
            (8, y + 2),
            font(12.0),
        ))?;
        legend.draw(&Text::new("numbers: intra-class", (8, y + 16), font(11.0)))?;
        legend.draw(&Text::new("scatter of the 2-D", (8, y + 30), font(11.0)))?;
        legend.draw(&Text::new("target points", (8, y + 44), font(11.0)))?;
        Ok(())
    }
}
