//! Methods as losses plugged into one training loop ([`train::fit`]), each one implementation
//! of [`Method`], registered by one line in `kind.rs`.

pub mod ablation;
pub mod baselines;
pub mod config;
mod kind;
mod label_shift_config;
pub mod method;
pub mod method_info;
pub mod mul;
pub mod mul_config;
mod resolve;
pub mod train;
pub mod training;

pub use ablation::{AblationRow, ABLATION_ROWS};
pub use baselines::{BaselineConfig, BaselineTraining};
pub use config::build_method;
pub use config::{
    ConfusionRows, DisagreementResponse, FitConfig, GuardFallback, LabelShiftConfig, LoopEstimator,
    MethodKind, MulConfig, PriorGuardConfig, SupportFrom,
};
pub use method::BuildContext;
pub use method::{AdaptInputs, CeWeights, Method, MulRecord, StepOutput};
pub use method_info::{ClassWeights, Family, MethodInfo};
pub use mul_config::Discrepancy;
pub use resolve::{ConfigOverrides, ConfigSource};
pub use train::{
    adapt, fit, fit_with_cache, pretrain, Fitted, HoldoutRecord, IterRecord, PretrainCache,
    Pretrained, Progress, Stage, TransferRecord,
};
pub use training::{MiniBatchConfig, Training, AUTO_MINIBATCH_CELLS};
