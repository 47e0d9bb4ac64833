//! glshift-experiments: what is run *with* the glshift library rather than part of it.
//!
//! - [`protocol`]: UDA / partial-DA / GLS task construction; `first_classes` for the IW ablation.
//! - [`synthetic`]: the seeded generalized-label-shift generator of `glshift demo`;
//!   [`synthetic_files`] writes it, at any size, as a data folder (`glshift generate`).
//! - [`simulate`]: known-truth label shift resampled from a labelled domain.
//! - [`cond_test`]: the per-class MCMD² conditional test on domains and its calibration study.
//! - [`crossfit`]: k-fold cross-fitted `source` classifiers (out-of-fold probabilities).
//! - [`study`]: the label-shift estimation study (all estimators over simulated targets).
//! - [`grid`]: the resumable (task × method × seed) grid of `glshift bench` and `glshift
//!   ablation`, its `results.json` and `table.md`.
//! - [`ablation`]: the rows of the paper's MUL ablation as grid variants.
//! - [`iw`]: the training half of the importance-weighting ablation (the figure is drawn by
//!   `glshift-report`).
//! - [`perf`]: the seeded workloads and timings of `glshift perf`.
//! - [`methods_table`]: the table of methods in docs/methods.md, from the core's registry.
//! - [`config_reference`]: the defaults in docs/configuration.md, from `FitConfig::default()`.
//! - [`error`]: the crate's one error type.

// Product code: no function over clippy.toml's 80 lines (test code may be longer).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod ablation;
pub mod cond_shift;
pub mod config_reference;
pub mod crossfit;
pub mod error;
pub mod grid;
pub mod iw;
pub mod methods_table;
pub mod perf;
pub mod protocol;
pub mod simulate;
pub mod study;
pub mod synthetic;
pub mod synthetic_files;

pub use error::{Error, Result};
