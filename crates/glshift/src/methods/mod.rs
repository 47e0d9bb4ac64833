//! Methods as losses plugged into one training loop ([`train::fit`]), each one implementation
//! of [`Method`], registered by one line in `kind.rs`.

pub mod ablation;
pub mod baselines;
pub mod config;
mod kind;
pub mod method;
pub mod mul;
pub mod train;
pub mod training;

pub use ablation::{AblationRow, Discrepancy, ABLATION_ROWS};
pub use baselines::{BaselineConfig, BaselineTraining};
pub use config::{ConfusionRows, DisagreementResponse, FitConfig, GuardFallback, LabelShiftConfig, MethodKind, MulConfig, PriorGuardConfig};
pub use training::{MiniBatchConfig, Training, AUTO_MINIBATCH_CELLS};
pub use kind::{build_method, BuildContext, ClassWeights, Family, MethodInfo};
pub use method::{AdaptInputs, CeWeights, Method, MulRecord, StepOutput};
pub use train::{
    adapt, fit, fit_with_cache, pretrain, Fitted, HoldoutRecord, IterRecord, PretrainCache, Pretrained, Progress, Stage, TransferRecord,
};
