//! The estimator API: fit on arrays in memory, predict new rows, save and load.
//!
//! In the linfa style: [`FitParams`] (defaults of `glshift fit`, one setter per setting) →
//! [`FitParams::check`] → [`CheckedParams`] (a type that records the validation) →
//! [`CheckedParams::fit`] on a [`Dataset`] → [`FittedModel`] with `predict`, `predict_proba`,
//! `transform` (Z), `target_prior`, `importance_weights`, `history`, `config`, and
//! `save` / `load` (file format in [`file`]).
//!
//! MUL minimises J = J_E(w) + λ_TU·J_TU − λ_DU·J_DU (the paper's eq. objective_MAL-final) over
//! G and F; what a fitted model keeps is everything the map x ↦ softmax(F(G(preprocess(x))))
//! needs, with G's BatchNorm statistics frozen from the source training rows.
//!
//! ```
//! use glshift::model::{Dataset, FitParams, FittedModel};
//! use ndarray::Array2;
//!
//! // Two classes, 40 source rows with labels and 30 unlabelled target rows, 3 features.
//! let row = |i: usize, k: usize| [k as f32 * 4.0 + (i % 7) as f32 * 0.3, (i % 5) as f32, 1.0 - k as f32];
//! let xs = Array2::from_shape_fn((40, 3), |(i, j)| row(i, i % 2)[j]);
//! let ys: Vec<usize> = (0..40).map(|i| i % 2).collect();
//! let xt = Array2::from_shape_fn((30, 3), |(i, j)| row(i, usize::from(i % 3 == 0))[j] + 0.5);
//! let data = Dataset::new(xs, ys, xt.clone())?.with_class_names(vec!["cat".into(), "dog".into()])?;
//!
//! let params = FitParams::mul().seed(0).pretrain_iters(30).adapt_iters(10);
//! let model = params.check()?.fit(&data)?;
//! let labels = model.predict(xt.view())?;
//! assert_eq!(labels.len(), 30);
//! let prior = model.target_prior().expect("MUL estimates the target prior");
//! assert!((prior.iter().sum::<f64>() - 1.0).abs() < 1e-9);
//!
//! let path = std::env::temp_dir().join(format!("glshift-doc-{}.glshift", std::process::id()));
//! model.save(&path)?;
//! let loaded = FittedModel::load(&path)?;
//! assert_eq!(loaded.predict_proba(xt.view())?, model.predict_proba(xt.view())?);
//! # std::fs::remove_file(&path).ok();
//! # Ok::<(), glshift::Error>(())
//! ```

mod batch;
mod blocks;
pub mod dataset;
pub mod file;
mod fitted;
mod params;
mod target_match;

pub use batch::{BatchAdaptation, BatchParams, BatchPrior, TARGET_ALARM_P};
pub use dataset::Dataset;
pub use file::{FORMAT_NAME, FORMAT_VERSION};
pub use fitted::{FittedModel, ModelInfo};
pub use params::{CheckedParams, FitOptions, FitOutcome, FitParams, ReportedPrior};
pub(crate) use params::{FitFeatures, FitInput};
pub use target_match::{batch_test_rows, TargetShiftTest, BATCH_TEST_ROWS, TARGET_SAMPLE_ROWS};

#[cfg(test)]
mod tests;
