//! Methods as losses plugged into one training loop ([`train::fit`]).

pub mod config;
pub mod mul;
pub mod train;

pub use config::{ConfusionRows, FitConfig, LabelShiftConfig, MethodKind, MulConfig};
pub use train::{fit, Fitted, IterRecord, Progress, Stage};
