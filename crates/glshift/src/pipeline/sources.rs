//! A fit on several pooled source domains ([`crate::data::PooledSource`]): the pooled source
//! trains as one (MUL's label-shift machinery on the pooled prior), its hold-out stratified by
//! class and domain, and the report gives each source domain's counts, prior and hold-out
//! accuracy (`report.json → source_domains`).

use serde::{Deserialize, Serialize};

use super::{run_inner, RunOutput};
use crate::config::{ConfusionRows, FitConfig};
use crate::data::{Domain, PooledSource};
use crate::train::{PretrainCache, Progress};
use crate::Result;

/// One source domain of a pooled fit (`report.json → source_domains`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SourceDomainReport {
    pub name: String,
    pub n_rows: usize,
    pub class_counts: Vec<usize>,
    /// Its class proportions.
    pub prior: Vec<f64>,
    /// Its rows in the hold-out, and the final network's top-1 accuracy on them.
    pub n_holdout: usize,
    pub holdout_accuracy: Option<f64>,
}

/// A fit's labelled source: one domain, or several pooled.
#[derive(Clone, Copy, Debug)]
pub enum Sources<'a> {
    One(&'a Domain),
    Pooled(&'a PooledSource),
}

impl Sources<'_> {
    /// The rows the fit trains on (the pooled domain for several sources).
    pub fn domain(&self) -> &Domain {
        match self {
            Sources::One(d) => d,
            Sources::Pooled(p) => &p.pooled,
        }
    }
}

/// Fits `cfg` on the pooled sources and `target`: the hold-out stratified by class and domain
/// ([`PooledSource::holdout`]; none when the confusion matrix is read from the training rows),
/// then each domain's report.
pub fn run_pooled(
    sources: &PooledSource,
    target: &Domain,
    cfg: &FitConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunOutput> {
    pooled(sources, target, cfg, None, progress)
}

/// [`super::run_cached`] on one source, [`run_pooled`] on several, sharing pre-training through
/// `cache` with earlier runs on the same source rows and pre-training settings (a grid's
/// methods, a selection's candidates); the same results as without the cache.
pub fn run_sources_cached(
    sources: Sources<'_>,
    target: &Domain,
    cfg: &FitConfig,
    cache: &mut PretrainCache,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunOutput> {
    match sources {
        Sources::One(source) => super::run_cached(source, target, cfg, cache, progress),
        Sources::Pooled(p) => pooled(p, target, cfg, Some(cache), progress),
    }
}

fn pooled(
    sources: &PooledSource,
    target: &Domain,
    cfg: &FitConfig,
    cache: Option<&mut PretrainCache>,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunOutput> {
    let holdout = match cfg.label_shift.confusion {
        ConfusionRows::Holdout => {
            Some(sources.holdout(cfg.label_shift.holdout_fraction, cfg.seed)?)
        }
        ConfusionRows::Train => None,
    };
    let mut out = run_inner(&sources.pooled, target, cfg, holdout.as_deref(), cache, progress)?;
    out.report.source_domains = Some(source_domains(sources, &out));
    Ok(out)
}

/// Each domain's counts, prior and hold-out accuracy from a finished pooled run.
fn source_domains(sources: &PooledSource, out: &RunOutput) -> Vec<SourceDomainReport> {
    let c = sources.pooled.n_classes();
    let labels = sources.pooled.labels.as_deref().unwrap_or_default();
    let predicted = super::argmax_rows(&out.holdout_probs);
    sources
        .parts
        .iter()
        .map(|p| {
            let mut class_counts = vec![0usize; c];
            labels[p.rows.clone()].iter().for_each(|&y| class_counts[y] += 1);
            let n = p.rows.len();
            let prior = class_counts.iter().map(|&k| k as f64 / n as f64).collect();
            let held: Vec<usize> = (0..out.holdout_rows.len())
                .filter(|&j| p.rows.contains(&out.holdout_rows[j]))
                .collect();
            let right = held.iter().filter(|&&j| predicted[j] == out.holdout_labels[j]).count();
            let holdout_accuracy = (!held.is_empty()).then(|| right as f64 / held.len() as f64);
            SourceDomainReport {
                name: p.name.clone(),
                n_rows: n,
                class_counts,
                prior,
                n_holdout: held.len(),
                holdout_accuracy,
            }
        })
        .collect()
}
