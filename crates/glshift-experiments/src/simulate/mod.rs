//! Known-truth label-shift experiments from one labelled domain (`glshift shift simulate`,
//! `glshift shift study`).
//!
//! The domain's rows are split once, per class, into a **source part** (a `source_fraction`
//! of each class, seeded by `split_seed`) and a disjoint **target pool** (the rest). The source
//! classifier trains on the source part only (with its own stratified hold-out), so the
//! simulated target never shares a row with the rows the classifier trains or is calibrated
//! on. The target is then drawn from the pool with exact class counts `m_k` for the requested
//! prior (largest-remainder rounding of `n·p_k`), so its true prior is known: `m_k / n`.
//! Within a class, pool rows are taken in a seeded random order without repetition; only when
//! a class needs more rows than the pool holds are rows reused, each at most
//! `⌈m_k / pool_k⌉` times (a fresh random order per pass). Both parts come from the same
//! domain, so the class-conditional distributions agree up to sampling: pure label shift.

use std::path::{Path, PathBuf};

use glshift::output::npy_bytes;
use ndarray::{Array1, Axis};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::{Error, Result};
use glshift::data::Domain;

mod prior;
pub use prior::PriorSpec;

/// Class counts summing to `n` for `prior`: `⌊n·p_k⌋` plus one for the largest remainders
/// (ties to the lower class index).
pub fn exact_counts(prior: &[f64], n: usize) -> Vec<usize> {
    let raw: Vec<f64> = prior.iter().map(|p| p * n as f64).collect();
    let mut counts: Vec<usize> = raw.iter().map(|v| v.floor() as usize).collect();
    let short = n.saturating_sub(counts.iter().sum());
    let mut order: Vec<usize> = (0..prior.len()).collect();
    order.sort_by(|&a, &b| {
        (raw[b] - raw[b].floor()).total_cmp(&(raw[a] - raw[a].floor())).then(a.cmp(&b))
    });
    for &k in order.iter().take(short) {
        counts[k] += 1;
    }
    counts
}

/// Rows of each class, in row order.
fn rows_by_class(labels: &[usize], c: usize) -> Vec<Vec<usize>> {
    let mut by = vec![Vec::new(); c];
    labels.iter().enumerate().for_each(|(i, &y)| by[y].push(i));
    by
}

/// The split of a domain into a source part and a disjoint target pool (row indices, sorted).
#[derive(Clone, Debug, Serialize)]
pub struct Split {
    pub source_rows: Vec<usize>,
    pub pool_rows: Vec<usize>,
}

/// Per class, `round(source_fraction · n_k)` rows (seeded random choice, at least 1 and, when
/// the class has ≥ 2 rows, at most `n_k − 1`) go to the source part, the rest to the pool.
pub fn split_domain(labels: &[usize], c: usize, source_fraction: f64, seed: u64) -> Result<Split> {
    if !(source_fraction > 0.0 && source_fraction < 1.0) {
        return Err(Error::param("source-fraction", source_fraction, "must lie in (0, 1)"));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut source_rows, mut pool_rows) = (Vec::new(), Vec::new());
    for mut rows in rows_by_class(labels, c) {
        if rows.is_empty() {
            continue;
        }
        rows.shuffle(&mut rng);
        let n = rows.len();
        let m = if n == 1 {
            1
        } else {
            ((source_fraction * n as f64).round() as usize).clamp(1, n - 1)
        };
        source_rows.extend_from_slice(&rows[..m]);
        pool_rows.extend_from_slice(&rows[m..]);
    }
    source_rows.sort_unstable();
    pool_rows.sort_unstable();
    Ok(Split { source_rows, pool_rows })
}

/// A simulated target: rows of the domain (with repetitions only where a class's pool is too
/// small) and its known prior.
#[derive(Clone, Debug, Serialize)]
pub struct SimulatedTarget {
    /// The prior asked for (the Dirichlet draw, the PDA prior or the fixed one).
    pub requested_prior: Vec<f64>,
    /// The target's actual class frequencies `m_k / n` (the truth to score against).
    pub true_prior: Vec<f64>,
    /// `m_k`.
    pub class_counts: Vec<usize>,
    /// Domain row indices of the target, in file order (shuffled).
    pub rows: Vec<usize>,
    /// Distinct domain rows among [`SimulatedTarget::rows`].
    pub distinct_rows: usize,
    /// Largest number of times one row was used.
    pub max_repeats: usize,
}

/// Draws `n` rows from `pool_rows` of a domain with `labels` so that the class counts are
/// [`exact_counts`]`(prior, n)` (see the module doc for the reuse rule).
pub fn resample_to_prior(
    labels: &[usize],
    pool_rows: &[usize],
    c: usize,
    requested_prior: &[f64],
    n: usize,
    rng: &mut ChaCha8Rng,
) -> Result<SimulatedTarget> {
    if n == 0 {
        return Err(Error::param("n", n, "the simulated target needs at least 1 row"));
    }
    let counts = exact_counts(requested_prior, n);
    let mut by = vec![Vec::new(); c];
    pool_rows.iter().for_each(|&i| by[labels[i]].push(i));
    let mut rows = Vec::with_capacity(n);
    let mut max_repeats = 0;
    for (k, &m) in counts.iter().enumerate() {
        if m == 0 {
            continue;
        }
        let pool = &by[k];
        if pool.is_empty() {
            return Err(Error::bad_data(
                format!("class {k}"),
                format!("the prior asks for {m} target rows of class {k}, but the target pool has none of that class"),
            ));
        }
        let mut taken = 0;
        while taken < m {
            let mut perm = pool.clone();
            perm.shuffle(rng);
            let take = (m - taken).min(perm.len());
            rows.extend_from_slice(&perm[..take]);
            taken += take;
        }
        max_repeats = max_repeats.max(m.div_ceil(pool.len()));
    }
    rows.shuffle(rng);
    let mut distinct = rows.clone();
    distinct.sort_unstable();
    distinct.dedup();
    Ok(SimulatedTarget {
        requested_prior: requested_prior.to_vec(),
        true_prior: counts.iter().map(|&m| m as f64 / n as f64).collect(),
        class_counts: counts,
        distinct_rows: distinct.len(),
        rows,
        max_repeats,
    })
}

/// The rows `rows` of `d` as a domain called `name`.
pub fn subset(d: &Domain, rows: &[usize], name: &str) -> Domain {
    let mut out = d.clone();
    out.name = name.to_string();
    out.features = d.features.select(Axis(0), rows);
    out.labels = d.labels.as_ref().map(|y| rows.iter().map(|&i| y[i]).collect());
    out
}

/// What `glshift shift simulate` writes next to the simulated domains (`simulation.json`).
#[derive(Clone, Debug, Serialize)]
pub struct SimulationReport {
    pub glshift_version: &'static str,
    pub domain: String,
    pub domain_path: String,
    /// Cross-domain protocol: the domain the target was drawn from (`domain` is then the
    /// whole source); `None` when both parts come from `domain`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_domain: Option<String>,
    pub prior: PriorSpec,
    /// Seed of the prior draw and of the target resampling.
    pub seed: u64,
    /// Seed of the source/pool split (kept apart so that draws share one source part).
    pub split_seed: u64,
    pub source_fraction: f64,
    pub n_source: usize,
    pub n_pool: usize,
    pub n_target: usize,
    pub classes: Vec<String>,
    /// Domain rows of `source_*.npy`, in file order.
    pub source_rows: Vec<usize>,
    pub target: SimulatedTarget,
}

/// Settings of [`simulate`].
#[derive(Clone, Debug)]
pub struct SimulateConfig {
    pub prior: PriorSpec,
    pub seed: u64,
    pub split_seed: u64,
    pub source_fraction: f64,
    /// Target rows; `None` = the pool size.
    pub n_target: Option<usize>,
}

/// Splits a labelled domain and draws a target at the requested prior. Returns the source
/// part, the target (both labelled) and the report.
pub fn simulate(d: &Domain, cfg: &SimulateConfig) -> Result<(Domain, Domain, SimulationReport)> {
    let labels = d.labels.as_deref().ok_or_else(|| {
        Error::bad_data(
            d.path.display().to_string(),
            "the domain has no labels; a known-truth simulation needs them",
        )
    })?;
    let c = d.n_classes();
    let split = split_domain(labels, c, cfg.source_fraction, cfg.split_seed)?;
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let prior = cfg.prior.draw(c, &mut rng)?;
    let n = cfg.n_target.unwrap_or(split.pool_rows.len());
    let target = resample_to_prior(labels, &split.pool_rows, c, &prior, n, &mut rng)?;
    let source = subset(d, &split.source_rows, "source");
    let tgt = subset(d, &target.rows, "target");
    let report = SimulationReport {
        glshift_version: env!("CARGO_PKG_VERSION"),
        domain: d.name.clone(),
        domain_path: d.path.display().to_string(),
        target_domain: None,
        prior: cfg.prior.clone(),
        seed: cfg.seed,
        split_seed: cfg.split_seed,
        source_fraction: cfg.source_fraction,
        n_source: split.source_rows.len(),
        n_pool: split.pool_rows.len(),
        n_target: n,
        classes: d.class_names.clone(),
        source_rows: split.source_rows,
        target,
    };
    Ok((source, tgt, report))
}

/// Cross-domain known truth: every row of `source_domain` is the source; the target is drawn
/// from all rows of `target_domain` at the requested prior (same resampling rule as
/// [`simulate`]; `split_seed` and `source_fraction` are unused). The class-conditionals then
/// differ as much as the two domains do, and the target prior is known exactly.
pub fn simulate_cross(
    source_domain: &Domain,
    target_domain: &Domain,
    cfg: &SimulateConfig,
) -> Result<(Domain, Domain, SimulationReport)> {
    let no_labels = |d: &Domain| {
        Error::bad_data(
            d.path.display().to_string(),
            "the domain has no labels; a known-truth simulation needs them",
        )
    };
    source_domain.labels.as_deref().ok_or_else(|| no_labels(source_domain))?;
    let labels = target_domain.labels.as_deref().ok_or_else(|| no_labels(target_domain))?;
    let c = source_domain.n_classes();
    if target_domain.n_classes() != c || target_domain.dim() != source_domain.dim() {
        return Err(Error::bad_data(
            target_domain.path.display().to_string(),
            format!(
                "has {} classes and {} features, the source '{}' {} and {}",
                target_domain.n_classes(),
                target_domain.dim(),
                source_domain.name,
                c,
                source_domain.dim()
            ),
        ));
    }
    let pool: Vec<usize> = (0..target_domain.n()).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let prior = cfg.prior.draw(c, &mut rng)?;
    let n = cfg.n_target.unwrap_or(pool.len());
    let target = resample_to_prior(labels, &pool, c, &prior, n, &mut rng)?;
    let all: Vec<usize> = (0..source_domain.n()).collect();
    let source = subset(source_domain, &all, "source");
    let tgt = subset(target_domain, &target.rows, "target");
    let report = SimulationReport {
        glshift_version: env!("CARGO_PKG_VERSION"),
        domain: source_domain.name.clone(),
        domain_path: source_domain.path.display().to_string(),
        target_domain: Some(target_domain.name.clone()),
        prior: cfg.prior.clone(),
        seed: cfg.seed,
        split_seed: cfg.split_seed,
        source_fraction: 1.0,
        n_source: all.len(),
        n_pool: pool.len(),
        n_target: n,
        classes: source_domain.class_names.clone(),
        source_rows: all,
        target,
    };
    Ok((source, tgt, report))
}

/// The files of a simulation in the npy folder layout: `source_features.npy`,
/// `source_labels.npy`, `target_features.npy`, `target_labels.npy`, `classes.txt` and
/// `simulation.json`, for [`glshift::output::write_files_atomically`].
pub fn simulation_files(
    out: &Path,
    source: &Domain,
    target: &Domain,
    report: &SimulationReport,
) -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let mut files = Vec::new();
    for d in [source, target] {
        let fp = out.join(format!("{}_features.npy", d.name));
        files.push((fp.clone(), npy_bytes(&d.features, &fp)?));
        let y: Array1<i64> =
            d.labels.as_deref().unwrap_or_default().iter().map(|&v| v as i64).collect();
        let lp = out.join(format!("{}_labels.npy", d.name));
        files.push((lp.clone(), npy_bytes(&y, &lp)?));
    }
    let mut classes = source.class_names.join("\n");
    classes.push('\n');
    files.push((out.join("classes.txt"), classes.into_bytes()));
    let json = serde_json::to_vec_pretty(report)
        .map_err(|e| Error::Write { path: out.join("simulation.json"), reason: e.to_string() })?;
    files.push((out.join("simulation.json"), json));
    Ok(files)
}

#[cfg(test)]
mod tests;
