//! Methods as losses plugged into one training loop ([`train::fit`]).

pub mod ablation;
pub mod baselines;
pub mod config;
mod kind;
pub mod mul;
pub mod train;

pub use ablation::{AblationRow, Discrepancy, ABLATION_ROWS};
pub use baselines::BaselineConfig;
pub use config::{ConfusionRows, FitConfig, LabelShiftConfig, MethodKind, MulConfig};
pub use train::{fit, fit_with_cache, Fitted, IterRecord, PretrainCache, Progress, Stage, TransferRecord};
