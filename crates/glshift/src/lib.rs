//! glshift: generalized label shift correction with Minimum Uncertainty Learning (MUL).
//!
//! Modules by concern:
//! - [`data`]: loading domains (npy folder layout, MATLAB v5, CSV), validation, preprocessing.
//! - [`kernel`]: Gaussian kernels, bandwidth rule, conditional mean embeddings, MCMD, J_DU, J_TU
//!   and their gradients.
//! - [`label_shift`]: BBSE in its QP form (importance weights and target prior).
//! - [`nn`]: layers, Adam, losses (gradients by hand).
//! - [`methods`]: `source` and `mul` as losses plugged into one training loop.
//! - [`model`]: the estimator API: fit on arrays, predict, save and load a model.
//! - [`synthetic`]: a seeded generalized-label-shift generator (the demo task).
//! - [`eval`]: scores computed from target labels (evaluation only).
//! - [`pipeline`]: preprocessing → fit → predictions → report, shared by the CLI and tests.
//! - [`protocol`]: UDA, partial-DA and GLS task construction.
//! - [`output`]: atomic writing of result files.
//! - [`simulate`]: known-truth label-shift targets resampled from a labelled domain.
//! - [`crossfit`]: k-fold cross-fitted source classifiers (out-of-fold probabilities).
//! - [`study`]: the label-shift estimation study (all estimators over simulated targets).

pub mod crossfit;
pub mod data;
pub mod error;
pub mod eval;
pub mod kernel;
pub mod label_shift;
pub mod methods;
pub mod model;
pub mod nn;
pub mod output;
pub mod pipeline;
pub mod protocol;
pub mod real;
pub mod simulate;
pub mod study;
pub mod synthetic;

pub use error::{Error, Result};
pub use real::Real;
