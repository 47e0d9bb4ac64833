//! The label-shift estimation study (`glshift shift study`): for each labelled domain, the
//! source classifier (method `source`, trained once on the domain's source part, see
//! [`crate::simulate`]; cross-fitted over `cross_fit` folds by default, [`crate::crossfit`]),
//! then `draws` simulated targets per prior family drawn from the disjoint target pool, and
//! every estimator of [`glshift::label_shift::suite`] with bootstrap intervals on each (basic and
//! percentile from the same replicates). The bootstrap re-runs only the estimators on
//! resampled probabilities; the network is never retrained. Target labels are read only to
//! score.
//!
//! Scores per (domain, family, estimator):
//! - ℓ1 error `‖p̂ᵗ − pᵗ‖₁`, mean ± sample std over draws (`pᵗ` the target's exact class
//!   frequencies);
//! - **coverage**: the fraction of (draw, class) pairs whose interval `[low_k, high_k]`
//!   contains `pᵗ_k` — per-class coverage averaged over classes (what a 90% per-class interval
//!   promises); also split into classes present in the target (`pᵗ_k > 0`) and absent ones,
//!   and the **joint** coverage: the fraction of draws whose intervals cover every class at
//!   once (a stricter quantity that per-class 90% intervals do not promise).

use std::collections::BTreeMap;
use std::time::Instant;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::crossfit::cross_fit;
use crate::simulate::{resample_to_prior, split_domain, subset, PriorSpec};
use crate::{Error, Result};
use glshift::config::FitConfig;
use glshift::data::{self, Domain};
use glshift::label_shift::suite::{run_estimator, BootstrapSpec, SuiteEntry, SUITE};
use glshift::label_shift::{class_prior, l1_distance, IntervalMethod, ShiftInputs};
use glshift::methods::MethodKind;
use glshift::pipeline;

mod markdown;
mod report;
mod summary;
pub use markdown::study_markdown;
pub use report::{
    Coverage, DomainStudy, DrawEstimate, DrawRecord, MethodInterval, StudyReport, SummaryRow,
};
use summary::summarise;

/// Settings of [`run_study`].
#[derive(Clone, Debug, Serialize)]
pub struct StudyConfig {
    /// Prior families (e.g. `dirichlet:0.1`, `dirichlet:1`, `dirichlet:10`, `pda`).
    pub families: Vec<PriorSpec>,
    /// Simulated targets per family.
    pub draws: usize,
    /// Rows of each simulated target.
    pub n_target: usize,
    /// Share of each class in the source part (the rest is the target pool).
    pub source_fraction: f64,
    /// Bootstrap resamples and level of the intervals.
    pub bootstrap: usize,
    pub level: f64,
    /// Interval method of the headline coverage (every method is computed from the same
    /// replicates and reported).
    pub interval: IntervalMethod,
    /// Folds of the cross-fitted classifier (see [`crate::crossfit`]); `1` = one classifier
    /// with the stratified hold-out of `fit.label_shift` (only hold-out rows reach the
    /// estimators).
    pub cross_fit: usize,
    /// Seed of the splits, the classifiers and (hashed with the domain, family and draw) of
    /// every draw and its bootstrap.
    pub seed: u64,
    /// Network and training settings of the source classifier (method forced to `source`).
    pub fit: FitConfig,
}

/// The four prior families.
pub fn default_families() -> Vec<PriorSpec> {
    vec![
        PriorSpec::Dirichlet { alpha: 0.1 },
        PriorSpec::Dirichlet { alpha: 1.0 },
        PriorSpec::Dirichlet { alpha: 10.0 },
        PriorSpec::Pda,
    ]
}

/// FNV-1a of a string: a platform-independent seed for each draw.
fn seed_of(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// Seed of draw `draw` of `family` in `domain` for a study seeded `seed`.
pub fn draw_seed(seed: u64, domain: &str, family: &str, draw: usize) -> u64 {
    seed_of(&format!("{seed}/{domain}/{family}/{draw}"))
}

impl StudyConfig {
    fn validate(&self) -> Result<()> {
        if self.families.is_empty() {
            return Err(Error::param("priors", "none", "give at least one prior family"));
        }
        if self.draws == 0 {
            return Err(Error::param("draws", self.draws, "must be ≥ 1"));
        }
        if self.n_target == 0 {
            return Err(Error::param("n-target", self.n_target, "must be ≥ 1"));
        }
        if self.bootstrap < 2 {
            return Err(Error::param(
                "bootstrap",
                self.bootstrap,
                "the study needs intervals: at least 2 resamples",
            ));
        }
        if !(self.level > 0.0 && self.level < 1.0) {
            return Err(Error::param("level", self.level, "must lie in (0, 1)"));
        }
        if self.cross_fit == 0 {
            return Err(Error::param(
                "cross-fit",
                self.cross_fit,
                "must be ≥ 1 (1 = one classifier with a hold-out)",
            ));
        }
        if !(self.source_fraction > 0.0 && self.source_fraction < 1.0) {
            return Err(Error::param(
                "source-fraction",
                self.source_fraction,
                "must lie in (0, 1)",
            ));
        }
        Ok(self.fit.validate()?)
    }
}

/// Runs the study on labelled domains `(data folder, domain)`. `progress` receives one line
/// per finished classifier and per finished draw.
pub fn run_study(
    domains: &[Domain],
    cfg: &StudyConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<StudyReport> {
    cfg.validate()?;
    if domains.is_empty() {
        return Err(Error::param("domains", "none", "no labelled domain to study"));
    }
    let started = Instant::now();
    let mut fit_cfg = cfg.fit.clone();
    fit_cfg.method = MethodKind::Source;
    fit_cfg.seed = cfg.seed;
    let mut out = Vec::new();
    for d in domains {
        out.push(study_domain(d, cfg, &fit_cfg, progress)?);
    }
    let summary = summarise(&out, cfg);
    Ok(StudyReport {
        glshift_version: env!("CARGO_PKG_VERSION"),
        config: cfg.clone(),
        estimators: SUITE.iter().map(|s| s.to_string()).collect(),
        domains: out,
        summary,
        elapsed_seconds: started.elapsed().as_secs_f64(),
    })
}

fn study_domain(
    d: &Domain,
    cfg: &StudyConfig,
    fit_cfg: &FitConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<DomainStudy> {
    let labels = d.labels.as_deref().ok_or_else(|| {
        Error::bad_data(d.path.display().to_string(), "the study needs labelled domains")
    })?;
    let c = d.n_classes();
    let split = split_domain(labels, c, cfg.source_fraction, cfg.seed)?;
    let source = subset(d, &split.source_rows, &format!("{}-source", d.name));
    let pool = subset(d, &split.pool_rows, &format!("{}-pool", d.name));
    let t0 = Instant::now();
    let pool_labels = pool.labels.as_deref().unwrap_or_default();
    let source_prior = class_prior(source.labels.as_deref().unwrap_or_default(), c)?;
    let probs = source_probabilities(&source, &pool, cfg, fit_cfg)?;
    let train_seconds = t0.elapsed().as_secs_f64();
    let accuracy = |p: &ndarray::Array2<f32>, y: &[usize]| {
        let ok = p
            .rows()
            .into_iter()
            .zip(y)
            .filter(|(r, &t)| glshift::nn::argmax_row(*r).0 == t)
            .count();
        ok as f64 / y.len() as f64
    };
    let holdout_accuracy = accuracy(&probs.source, &probs.source_labels);
    // Evaluation only: the pool's labels score the classifier after training.
    let pool_accuracy = accuracy(&probs.pool, pool_labels);
    progress(&format!(
        "{}: {} source classifier(s) trained on {:?} rows, {} rows seen by the estimators (accuracy {:.1}%) in {:.1} s",
        d.name,
        probs.n_train.len(),
        probs.n_train,
        probs.source_labels.len(),
        100.0 * holdout_accuracy,
        train_seconds
    ));
    let mut draws = Vec::new();
    for fam in &cfg.families {
        for k in 0..cfg.draws {
            let rec = study_draw(&d.name, fam, k, pool_labels, &probs, &source_prior, cfg)?;
            let l1s: Vec<String> = SUITE
                .iter()
                .map(|n| match rec.estimates.get(*n) {
                    Some(e) => format!("{n} {:.3}", e.prior_l1_error),
                    None => format!("{n} failed"),
                })
                .collect();
            progress(&format!("{} {} draw {}: ℓ1 {}", d.name, rec.family, k, l1s.join(", ")));
            draws.push(rec);
        }
    }
    Ok(DomainStudy {
        data: d.path.parent().map(|p| p.display().to_string()).unwrap_or_default(),
        domain: d.name.clone(),
        n_rows: d.n(),
        n_classes: c,
        n_source: split.source_rows.len(),
        n_source_train: probs.n_train,
        n_source_holdout: probs.source_labels.len(),
        n_pool: split.pool_rows.len(),
        source_prior,
        holdout_accuracy,
        pool_accuracy,
        train_seconds,
        draws,
    })
}

/// The probabilities the estimators see: labelled source rows and the whole target pool.
struct StudyProbs {
    source: ndarray::Array2<f32>,
    source_labels: Vec<usize>,
    pool: ndarray::Array2<f32>,
    /// Rows each source classifier trained on (one per fold when cross-fitted).
    n_train: Vec<usize>,
}

/// The source classifier's probabilities: cross-fitted (`cfg.cross_fit` ≥ 2: every source
/// row out of fold) or one classifier whose stratified hold-out reaches the estimators.
fn source_probabilities(
    source: &Domain,
    pool: &Domain,
    cfg: &StudyConfig,
    fit_cfg: &FitConfig,
) -> Result<StudyProbs> {
    if cfg.cross_fit >= 2 {
        let cf = cross_fit(source, pool, fit_cfg, cfg.cross_fit)?;
        return Ok(StudyProbs {
            source: cf.source_probs,
            source_labels: cf.source_labels,
            pool: cf.target_probs,
            n_train: cf.n_train,
        });
    }
    let run = pipeline::run(source, pool, fit_cfg, &mut |_| {})?;
    if run.holdout_labels.is_empty() {
        return Err(Error::param(
            "label_shift.confusion",
            "all-source",
            "the study needs the stratified source hold-out (label_shift.confusion = \"holdout\")",
        ));
    }
    Ok(StudyProbs {
        source: run.holdout_probs,
        source_labels: run.holdout_labels,
        pool: run.target_probs,
        n_train: vec![run.report.n_source_train],
    })
}

/// Draw `k` of family `fam` on the domain `domain`: a target resampled from the pool to a
/// drawn prior, and every estimator of the suite on it with its bootstrap interval.
fn study_draw(
    domain: &str,
    fam: &PriorSpec,
    k: usize,
    pool_labels: &[usize],
    probs: &StudyProbs,
    source_prior: &[f64],
    cfg: &StudyConfig,
) -> Result<DrawRecord> {
    let c = source_prior.len();
    let label = fam.label();
    let seed = draw_seed(cfg.seed, domain, &label, k);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let requested = fam.draw(c, &mut rng)?;
    // Pool-relative indices: `resample_to_prior` works on the pool's own labels.
    let all: Vec<usize> = (0..pool_labels.len()).collect();
    let t = resample_to_prior(pool_labels, &all, c, &requested, cfg.n_target, &mut rng)?;
    let tp = probs.pool.select(ndarray::Axis(0), &t.rows);
    let inp = ShiftInputs {
        source_probs: probs.source.view(),
        source_labels: &probs.source_labels,
        target_probs: tp.view(),
        source_prior: Some(source_prior),
    };
    let boot =
        BootstrapSpec { resamples: cfg.bootstrap, level: cfg.level, seed, method: cfg.interval };
    let (mut estimates, mut errors) = (BTreeMap::new(), BTreeMap::new());
    for name in SUITE {
        let r = run_estimator(name, &inp, Some(&boot), Some(&t.true_prior));
        match r.map_err(|e| e.to_string()).and_then(|e| draw_estimate(e, &t.true_prior)) {
            Ok(e) => {
                estimates.insert(name.to_string(), e);
            }
            Err(msg) => {
                errors.insert(name.to_string(), msg);
            }
        }
    }
    Ok(DrawRecord {
        family: label,
        draw: k,
        seed,
        source_target_l1: l1_distance(source_prior, &t.true_prior),
        requested_prior: t.requested_prior,
        true_prior: t.true_prior,
        distinct_rows: t.distinct_rows,
        estimates,
        errors,
    })
}

/// One estimator's entry scored against the draw's true prior: its intervals of every method
/// and their coverage; an error when the bootstrap gave no interval.
fn draw_estimate(e: SuiteEntry, truth: &[f64]) -> std::result::Result<DrawEstimate, String> {
    match (e.covers(truth), e.prior_ci_low.clone(), e.prior_ci_high.clone()) {
        (Some(covered), Some(lo), Some(hi)) => Ok(DrawEstimate {
            intervals: IntervalMethod::ALL
                .iter()
                .filter_map(|&m| {
                    let (low, high, covered) = e.interval_by(m, truth)?;
                    Some((m.name().to_string(), MethodInterval { low, high, covered }))
                })
                .collect(),
            prior_l1_error: e.prior_l1_error.unwrap_or(f64::NAN),
            prior: e.prior,
            prior_ci_low: lo,
            prior_ci_high: hi,
            covered,
            warnings: e.warnings,
        }),
        _ => Err(e.bootstrap_error.unwrap_or_else(|| "no interval".into())),
    }
}

/// The labelled domains of `dir` with at least `min_rows` rows, in name order (the study's
/// default choice: a known-truth target of `n_target` rows needs a pool of that order).
pub fn default_domains(dir: &std::path::Path, min_rows: usize) -> Result<Vec<Domain>> {
    let mut out = Vec::new();
    for name in data::list_domains(dir)? {
        let d = data::load_domain(dir, &name)?;
        if d.labels.is_some() && d.n() >= min_rows {
            out.push(d);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
