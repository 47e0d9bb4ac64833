//! The figures. Each is a plain data struct with a `render(name, caption)` that draws it once
//! for the PNG and once for the SVG (see [`crate::figure`]).

pub mod bars;
pub mod boundary;
pub mod curves;
pub mod heatmap;
pub mod prior;
pub mod scatter;

pub use bars::MethodBars;
pub use boundary::{Boundaries, BoundaryPanel};
pub use curves::{CurvePoint, TrainingCurves};
pub use heatmap::Heatmap;
pub use prior::PriorFigure;
pub use scatter::Scatter;
