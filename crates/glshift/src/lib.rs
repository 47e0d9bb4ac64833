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
//! - [`eval`]: scores computed from target labels (evaluation only).
//! - [`pipeline`]: preprocessing → fit → predictions → report, shared by the CLI and tests.
//! - [`records`]: record types of the files written and read back (`results.json` entries, the
//!   protocol of a task).
//! - [`output`]: atomic writing of result files.
//!
//! Task construction, synthetic data, simulated label shift, studies, bench grids and perf
//! workloads live in the `glshift-experiments` crate.

// Product code: no function over clippy.toml's 80 lines (test code may be longer).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod config;
pub mod data;
pub mod device;
pub mod error;
pub mod eval;
pub mod kernel;
pub mod label_shift;
pub mod methods;
pub mod model;
pub mod nn;
pub mod output;
pub mod pipeline;
pub mod prior_policy;
pub mod real;
pub mod records;
pub mod seeds;
pub mod select;
pub mod train;

pub use error::{Error, Result};
pub use real::Real;

// The README's Rust example runs as a doctest of this crate.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
