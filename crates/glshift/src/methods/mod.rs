//! Methods as losses plugged into the one training loop ([`crate::train::fit`]), each one
//! implementation of [`Method`], registered by one line in `kind.rs`. A method's settings live
//! beside it (`mul::config`, `baselines::config`); the fit's settings as a whole are
//! [`crate::config::FitConfig`].

pub mod baselines;
mod kind;
pub mod method;
pub mod method_info;
pub mod mul;

pub use baselines::{
    AdversarialConfig, BaselineConfig, BaselineSchedule, CdanConfig, JanConfig, MmdConfig,
    PadaConfig,
};
pub use kind::MethodKind;
pub use method::BuildContext;
pub use method::{AdaptInputs, CeWeights, Method, MulRecord, StepOutput, TransferRecord};
pub use method_info::{ClassWeights, Family, MethodInfo};
pub use mul::config::{Discrepancy, MulConfig};
