//! `glshift._core.select`: `glshift::select` on arrays. The candidates arrive as JSON (a list
//! of objects with the keys of a `[[candidate]]` table of docs/select.md), the settings as for
//! `fit`; the selection returns as JSON (`selection.json → selection`) with the chosen fitted
//! model. The target has no labels here, so there is no evaluation.

use std::path::PathBuf;

use glshift::data::{Domain, PooledSource, SourcePart};
use glshift::model::Dataset;
use glshift::select::{default_candidates, Candidate, SelectParams, SelectRule};
use numpy::{PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::{interruptible, labelled_pair, py_err, resolve_config, Model};

/// Fits every candidate on `source_x`/`source_y` → `target_x` (one shared pre-training), scores
/// each without target labels and chooses by `rule` (a rule name of `glshift select --scorer`;
/// `None` = the default). `source_domains`: one domain index per source row, rows of a domain
/// contiguous (the package orders them), for several sources pooled as `select --source a,b`
/// pools them. Returns `(selection JSON, chosen model, chosen run's warnings)`.
#[pyfunction]
#[pyo3(signature = (source_x, source_y, target_x, class_names, candidates_json=None, rule=None, config_json=None, config_path=None, seed=None, source_domains=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn select(
    py: Python<'_>,
    source_x: PyReadonlyArray2<'_, f32>,
    source_y: PyReadonlyArray1<'_, i64>,
    target_x: PyReadonlyArray2<'_, f32>,
    class_names: Vec<String>,
    candidates_json: Option<String>,
    rule: Option<String>,
    config_json: Option<String>,
    config_path: Option<PathBuf>,
    seed: Option<u64>,
    source_domains: Option<Vec<usize>>,
) -> PyResult<(String, Model, Vec<String>)> {
    let base = resolve_config(
        config_json.as_deref(),
        config_path.as_deref(),
        None,
        seed,
        None,
        None,
        None,
    )
    .map_err(py_err)?
    .config()
    .clone();
    let candidates = match candidates_json {
        Some(j) => serde_json::from_str::<Vec<Candidate>>(&j)
            .map_err(|e| PyValueError::new_err(format!("candidates: {e} (each needs 'method'; optional keys: name, lambda_tu, lambda_du, tau, adapt_iters)")))?,
        None => default_candidates(),
    };
    let rule = match rule {
        Some(r) => r.parse::<SelectRule>().map_err(py_err)?,
        None => SelectRule::default(),
    };
    let params =
        SelectParams::new(base).candidates(candidates).rule(rule).check().map_err(py_err)?;
    let (xs, ys, xt) = labelled_pair(&source_x, &source_y, &target_x)?;
    let data =
        Dataset::new(xs, ys, xt).and_then(|d| d.with_class_names(class_names)).map_err(py_err)?;
    let outcome = match pooled_sources(&data, source_domains.as_deref())? {
        None => {
            interruptible(py, "select", |tick| params.select_dataset(&data, &mut |_, _| tick()))?
        }
        Some((pooled, target)) => interruptible(py, "select", |tick| {
            params.select_pooled(&pooled, &target, &mut |_, _| tick())
        })?,
    };
    let json = serde_json::to_string(&outcome.selection)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    Ok((json, Model { inner: outcome.chosen.model }, outcome.chosen.report.warnings))
}

/// The dataset's source as several pooled domains (`domains`: one index per source row, each
/// domain's rows contiguous), with the target; `None` for one domain.
fn pooled_sources(
    data: &Dataset,
    domains: Option<&[usize]>,
) -> PyResult<Option<(PooledSource, Domain)>> {
    let Some(domains) = domains.filter(|d| d.windows(2).any(|w| w[0] != w[1])) else {
        return Ok(None);
    };
    let (source, target) = data.to_domains();
    if domains.len() != source.features.nrows() {
        return Err(PyValueError::new_err(format!(
            "source_domains: {} entries for {} source rows",
            domains.len(),
            source.features.nrows()
        )));
    }
    let mut parts: Vec<SourcePart> = Vec::new();
    let mut start = 0;
    for run in domains.chunk_by(|a, b| a == b) {
        let name = format!("source-{}", run[0]);
        if parts.iter().any(|p| p.name == name) {
            return Err(PyValueError::new_err(format!(
                "source_domains: the rows of domain {} are not contiguous",
                run[0]
            )));
        }
        parts.push(SourcePart { name, rows: start..start + run.len() });
        start += run.len();
    }
    Ok(Some((PooledSource { pooled: source, parts }, target)))
}
