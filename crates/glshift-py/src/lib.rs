//! `glshift._core`: the Python extension of glshift. A thin layer over the core's estimator API
//! (`glshift::model`), model selection (`glshift::select`, in [`select`]), label-shift suite
//! (`glshift::label_shift::suite`) and per-class conditional test (`glshift::kernel::cond_shift`):
//! array conversions, error mapping and GIL handling only. The scikit-learn conventions
//! (parameters, label encoding, `sample_domain`) live in the pure-Python package `glshift`
//! around it.
//!
//! Errors: every `glshift::Error` becomes a Python exception carrying the core's message:
//! `ValueError` for bad input (BadData, Shape, Param, BadFile, UnknownDomain), `RuntimeError`
//! for Numerical, `OSError` for Io and Write.

// Product code: no function over clippy.toml's 80 lines (test code may be longer).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod select;
mod shift;
mod worker;

use worker::fit_interruptible;
pub(crate) use worker::interruptible;

use std::path::{Path, PathBuf};

use glshift::config::{ConfigOverrides, ConfigSource, FitConfig};
use glshift::methods::MethodKind;
use glshift::model::{CheckedParams, Dataset, FitParams, FittedModel};
use ndarray::{Array2, ArrayView2};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// The core's error as a Python exception with the core's message.
fn py_err(e: glshift::Error) -> PyErr {
    use glshift::Error as E;
    let msg = e.to_string();
    match e {
        E::Io { .. } | E::Write { .. } => PyOSError::new_err(msg),
        E::Numerical { .. } | E::Device { .. } => PyRuntimeError::new_err(msg),
        E::BadData { .. }
        | E::Shape { .. }
        | E::Param { .. }
        | E::BadFile { .. }
        | E::UnknownDomain { .. } => PyValueError::new_err(msg),
    }
}

/// Class indices from Python integers (the package passes 0..c-1); a negative one is a
/// `ValueError` naming its row.
fn labels_to_indices(what: &str, y: &[i64]) -> PyResult<Vec<usize>> {
    y.iter()
        .enumerate()
        .map(|(i, &v)| {
            usize::try_from(v).map_err(|_| {
                PyValueError::new_err(format!("{what}: label {v} at row {i} is negative"))
            })
        })
        .collect()
}

/// The NumPy inputs of a labelled source and an unlabelled target, copied out of Python:
/// `(source rows n_s × k, source class indices n_s, target rows n_t × k)`. Shapes and values are
/// checked by the core (`Dataset::new`, the label-shift estimators); negative labels here.
fn labelled_pair(
    source: &PyReadonlyArray2<'_, f32>,
    labels: &PyReadonlyArray1<'_, i64>,
    target: &PyReadonlyArray2<'_, f32>,
) -> PyResult<(Array2<f32>, Vec<usize>, Array2<f32>)> {
    let ys = labels_to_indices("source labels", &labels.as_array().to_vec())?;
    Ok((owned(source), ys, owned(target)))
}

/// The settings of a fit, resolved as `glshift fit` resolves them: the defaults, then a TOML
/// file (`config_path`, like `--config`) or a JSON object of partial settings (`config_json`,
/// the same keys as the TOML file), then the explicit values (`method`, `seed`, iterations).
fn resolve_config(
    config_json: Option<&str>,
    config_path: Option<&Path>,
    method: Option<&str>,
    seed: Option<u64>,
    pretrain_iters: Option<usize>,
    adapt_iters: Option<usize>,
    device: Option<&str>,
) -> glshift::Result<CheckedParams> {
    let source = match (config_path, config_json) {
        (Some(_), Some(_)) => {
            return Err(glshift::Error::param(
                "config",
                "file and dict",
                "give a TOML file or a dict of settings, not both",
            ))
        }
        (Some(p), None) => ConfigSource::TomlFile(p),
        (None, Some(j)) => ConfigSource::Json(j),
        (None, None) => ConfigSource::Defaults,
    };
    let device = match device {
        None => None,
        Some("cpu") => Some(glshift::device::Device::Cpu),
        Some("cuda") => Some(glshift::device::Device::Cuda),
        Some("auto") => Some(glshift::device::Device::Auto),
        Some(other) => {
            return Err(glshift::Error::param("device", other, "expected 'cpu', 'cuda' or 'auto'"))
        }
    };
    let overrides = ConfigOverrides { method, seed, pretrain_iters, adapt_iters, device };
    let cfg = FitConfig::resolve(source, overrides)?;
    FitParams::from_config(cfg).check()
}

/// The settings `fit` would use, as JSON (validated): for `get_params`-style inspection and the
/// docs. Same arguments as `fit`'s settings.
#[pyfunction]
#[pyo3(signature = (config_json=None, config_path=None, method=None, seed=None, pretrain_iters=None, adapt_iters=None, device=None))]
#[allow(clippy::too_many_arguments)]
fn resolved_config(
    config_json: Option<String>,
    config_path: Option<PathBuf>,
    method: Option<String>,
    seed: Option<u64>,
    pretrain_iters: Option<usize>,
    adapt_iters: Option<usize>,
    device: Option<String>,
) -> PyResult<String> {
    let p = resolve_config(
        config_json.as_deref(),
        config_path.as_deref(),
        method.as_deref(),
        seed,
        pretrain_iters,
        adapt_iters,
        device.as_deref(),
    )
    .map_err(py_err)?;
    Ok(serde_json::to_string(p.config()).expect("a config serialises"))
}

/// The hold-out of several pooled sources, stratified by class and domain (`domains`: one
/// domain index per source row; `None` or a single domain: the fit's own split).
fn pooled_holdout(
    params: &CheckedParams,
    labels: &[usize],
    c: usize,
    domains: Option<&[usize]>,
) -> PyResult<Option<Vec<usize>>> {
    let Some(domains) = domains.filter(|d| d.iter().any(|&x| x != d[0])) else {
        return Ok(None);
    };
    let cfg = params.config();
    if cfg.label_shift.confusion != glshift::config::ConfusionRows::Holdout {
        return Ok(None);
    }
    let fraction = cfg.label_shift.holdout_fraction;
    glshift::data::holdout_by_class_and_domain(labels, domains, c, fraction, cfg.seed)
        .map(Some)
        .map_err(py_err)
}

/// Trains a model: `source_x` (n_s × d, float32), `source_y` (n_s class indices in
/// 0..len(class_names)), `target_x` (n_t × d, float32). Returns `(model, warnings)`.
#[pyfunction]
#[pyo3(signature = (source_x, source_y, target_x, class_names, config_json=None, config_path=None, method=None, seed=None, pretrain_iters=None, adapt_iters=None, device=None, source_domains=None))]
#[allow(clippy::too_many_arguments)]
fn fit(
    py: Python<'_>,
    source_x: PyReadonlyArray2<'_, f32>,
    source_y: PyReadonlyArray1<'_, i64>,
    target_x: PyReadonlyArray2<'_, f32>,
    class_names: Vec<String>,
    config_json: Option<String>,
    config_path: Option<PathBuf>,
    method: Option<String>,
    seed: Option<u64>,
    pretrain_iters: Option<usize>,
    adapt_iters: Option<usize>,
    device: Option<String>,
    source_domains: Option<Vec<usize>>,
) -> PyResult<(Model, Vec<String>)> {
    let params = resolve_config(
        config_json.as_deref(),
        config_path.as_deref(),
        method.as_deref(),
        seed,
        pretrain_iters,
        adapt_iters,
        device.as_deref(),
    )
    .map_err(py_err)?;
    let (xs, ys, xt) = labelled_pair(&source_x, &source_y, &target_x)?;
    let c = class_names.len();
    let holdout = pooled_holdout(&params, &ys, c, source_domains.as_deref())?;
    let data =
        Dataset::new(xs, ys, xt).and_then(|d| d.with_class_names(class_names)).map_err(py_err)?;
    let outcome = fit_interruptible(py, &params, data, holdout.as_deref())?;
    Ok((Model { inner: outcome.model }, outcome.warnings))
}

/// A fitted glshift model (`glshift::model::FittedModel`).
#[pyclass(module = "glshift._core", name = "Model", frozen)]
struct Model {
    inner: FittedModel,
}

fn owned(x: &PyReadonlyArray2<'_, f32>) -> Array2<f32> {
    x.as_array().to_owned()
}

impl Model {
    fn run<T: Send>(
        &self,
        py: Python<'_>,
        x: Array2<f32>,
        f: impl Fn(&FittedModel, ArrayView2<f32>) -> glshift::Result<T> + Send,
    ) -> PyResult<T> {
        let m = &self.inner;
        py.detach(move || f(m, x.view())).map_err(py_err)
    }
}

#[pymethods]
impl Model {
    /// Class indices (argmax of `predict_proba`).
    fn predict<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let labels = self.run(py, owned(&x), |m, x| m.predict(x))?;
        Ok(labels.into_iter().map(|k| k as i64).collect::<Vec<i64>>().into_pyarray(py))
    }

    /// Class probabilities, n × c.
    fn predict_proba<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        Ok(self.run(py, owned(&x), |m, x| m.predict_proba(x))?.into_pyarray(py))
    }

    /// Class probabilities re-weighted to the batch's estimated class proportions (n × c) and
    /// what was estimated (`glshift::model::BatchPrior` as JSON text).
    #[pyo3(signature = (x, resamples = 200, level = 0.9, seed = 0))]
    fn predict_proba_adapted<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
        resamples: usize,
        level: f64,
        seed: u64,
    ) -> PyResult<(Bound<'py, PyArray2<f32>>, String)> {
        let params = glshift::model::BatchParams { resamples, level, seed };
        let out = self.run(py, owned(&x), move |m, x| m.predict_proba_adapted(x, &params))?;
        let info =
            serde_json::to_string(&out.prior).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok((out.probs.into_pyarray(py), info))
    }

    /// Whether the model keeps the source hold-out that batch adaptation needs.
    #[getter]
    fn can_adapt_batches(&self) -> bool {
        self.inner.can_adapt_batches()
    }

    /// The representations Z = G(x), n × (width of G's last layer).
    fn transform<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        Ok(self.run(py, owned(&x), |m, x| m.transform(x))?.into_pyarray(py))
    }

    #[getter]
    fn target_prior(&self) -> Option<Vec<f64>> {
        self.inner.target_prior().map(<[f64]>::to_vec)
    }

    #[getter]
    fn importance_weights(&self) -> Option<Vec<f64>> {
        self.inner.importance_weights().map(<[f64]>::to_vec)
    }

    #[getter]
    fn source_prior(&self) -> Vec<f64> {
        self.inner.source_prior().to_vec()
    }

    #[getter]
    fn class_names(&self) -> Vec<String> {
        self.inner.class_names().to_vec()
    }

    #[getter]
    fn input_dim(&self) -> usize {
        self.inner.input_dim()
    }

    /// The model file's header (`ModelInfo`: version, config, class names, priors, history) as
    /// JSON.
    fn info_json(&self) -> String {
        serde_json::to_string(self.inner.info()).expect("the header serialises")
    }

    /// The bytes of the model file (`model.glshift`).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.inner.to_bytes().map_err(py_err)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Reads the bytes of a model file; `name` only labels error messages.
    #[staticmethod]
    #[pyo3(signature = (data, name="<bytes>"))]
    fn from_bytes(data: &[u8], name: &str) -> PyResult<Model> {
        FittedModel::from_bytes(data, Path::new(name)).map(|inner| Model { inner }).map_err(py_err)
    }

    /// Writes the model file (the format of `glshift fit`'s `model.glshift`).
    fn save(&self, path: PathBuf) -> PyResult<()> {
        self.inner.save(&path).map_err(py_err)
    }

    /// Reads a model file written by `save` or by `glshift fit`.
    #[staticmethod]
    fn load(path: PathBuf) -> PyResult<Model> {
        FittedModel::load(&path).map(|inner| Model { inner }).map_err(py_err)
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The registry's method names, so that Python lists exactly the methods the core has.
    m.add("METHODS", MethodKind::ALL.map(|k| k.name()).to_vec())?;
    // The selection rules and the estimator suite, likewise from the core's lists.
    m.add("RULES", glshift::select::SelectRule::ALL.map(|r| r.name()).to_vec())?;
    m.add("SUITE", glshift::label_shift::suite::SUITE.to_vec())?;
    m.add_class::<Model>()?;
    m.add_function(wrap_pyfunction!(fit, m)?)?;
    m.add_function(wrap_pyfunction!(select::select, m)?)?;
    m.add_function(wrap_pyfunction!(resolved_config, m)?)?;
    m.add_function(wrap_pyfunction!(shift::estimate_shift, m)?)?;
    m.add_function(wrap_pyfunction!(shift::conditional_shift_test, m)?)?;
    Ok(())
}
