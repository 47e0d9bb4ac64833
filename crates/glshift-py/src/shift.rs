//! `glshift._core`'s label-shift functions: the estimator suite on saved probabilities
//! (`glshift::label_shift::suite`) and the per-class conditional test on arrays
//! (`glshift::kernel::cond_shift`).

use glshift::config::FitConfig;
use glshift::kernel::cond_shift::{
    conditional_shift_test as conditional_shift_test_core, CondTestParams,
};
use glshift::label_shift::suite::{resolve_names, run_suite, BootstrapSpec, EstimatorOutcome};
use glshift::label_shift::{IntervalMethod, ShiftInputs};
use numpy::{PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::{labelled_pair, labels_to_indices, owned, py_err};

/// Label-shift estimation (`glshift shift estimate` on probabilities): runs the estimators
/// `names` (`all` = bbse, bbse-qp, rlls, mlls) and returns, per name in order, its entry of the
/// report's `estimators` object as JSON (variant, prior, weights, intervals, warnings, or an error).
#[pyfunction]
#[pyo3(signature = (source_probs, source_labels, target_probs, names, source_prior=None, bootstrap=0, level=0.9, interval="basic", seed=0))]
#[allow(clippy::too_many_arguments)]
pub fn estimate_shift(
    py: Python<'_>,
    source_probs: PyReadonlyArray2<'_, f32>,
    source_labels: PyReadonlyArray1<'_, i64>,
    target_probs: PyReadonlyArray2<'_, f32>,
    names: Vec<String>,
    source_prior: Option<Vec<f64>>,
    bootstrap: usize,
    level: f64,
    interval: &str,
    seed: u64,
) -> PyResult<Vec<(String, String)>> {
    let names = resolve_names(&names).map_err(py_err)?;
    let method = IntervalMethod::parse(interval).map_err(py_err)?;
    let (sp, labels, tp) = labelled_pair(&source_probs, &source_labels, &target_probs)?;
    let boot =
        (bootstrap > 0).then_some(BootstrapSpec { resamples: bootstrap, level, seed, method });
    let results = py
        .detach(|| {
            let inp = ShiftInputs {
                source_probs: sp.view(),
                source_labels: &labels,
                target_probs: tp.view(),
                source_prior: source_prior.as_deref(),
            };
            run_suite(&names, &inp, boot.as_ref(), None)
        })
        .map_err(py_err)?;
    // One JSON object per estimator, in the order asked (a JSON map would sort the names).
    results
        .iter()
        .map(|(name, r)| {
            let json = serde_json::to_value(EstimatorOutcome::new(name, r))
                .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
            Ok((name.clone(), json.to_string()))
        })
        .collect()
}

/// Per-class MCMD² permutation test (`glshift shift test` on arrays, `kernel::cond_shift`):
/// rows `xa` (n_a × d) with class assignments `ya`, rows `xb` (n_b × d) with `yb`, `n_classes`
/// classes. `eps` defaults to the fit's ε for `n_classes` (MUL's default settings), `bandwidth`
/// to the mean pairwise squared distance of the pooled rows (the rule `glshift shift test` uses).
/// Returns the result as JSON (per_class, reject_any, alpha, permutations) plus the bandwidth
/// and ε used.
#[pyfunction]
#[pyo3(signature = (xa, ya, xb, yb, n_classes, permutations, seed, alpha, eps=None, bandwidth=None))]
#[allow(clippy::too_many_arguments)]
pub fn conditional_shift_test(
    py: Python<'_>,
    xa: PyReadonlyArray2<'_, f32>,
    ya: PyReadonlyArray1<'_, i64>,
    xb: PyReadonlyArray2<'_, f32>,
    yb: PyReadonlyArray1<'_, i64>,
    n_classes: usize,
    permutations: usize,
    seed: u64,
    alpha: f64,
    eps: Option<f64>,
    bandwidth: Option<f64>,
) -> PyResult<String> {
    let (za, zb) = (owned(&xa), owned(&xb));
    let ia = labels_to_indices("source assignments", &ya.as_array().to_vec())?;
    let ib = labels_to_indices("target assignments", &yb.as_array().to_vec())?;
    let eps = eps.unwrap_or_else(|| FitConfig::default().mul.mcmd_params(n_classes).eps);
    let (res, h) = py
        .detach(|| {
            let h = match bandwidth {
                Some(h) => h,
                None => glshift::kernel::bandwidth(&[za.view(), zb.view()], 1.0)?,
            };
            let p = CondTestParams { permutations, seed, eps, h, alpha };
            conditional_shift_test_core(za.view(), &ia, zb.view(), &ib, n_classes, &p)
                .map(|r| (r, h))
        })
        .map_err(py_err)?;
    let mut v = serde_json::to_value(&res).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    v["bandwidth"] = h.into();
    v["eps"] = eps.into();
    Ok(v.to_string())
}
