//! The per-class MCMD² conditional test ([`glshift::kernel::cond_shift`]) applied to domains, and
//! its calibration study (`glshift shift test-calibration`).
//!
//! [`test_domains`] is what `glshift shift test` runs after its fit: features preprocessed with
//! the source statistics (the input space, not the adapted Z, which MUL trains to align), both
//! samples assigned by the same model, h = the mean-pairwise-squared-distance rule on the rows
//! of both samples.
//!
//! [`calibrate`]: a labelled domain is split once, per class, into a training part and a pool; a
//! `source` network trained once on the training part (a cheap fixed assignment model, so that
//! hundreds of draws stay affordable) assigns every pool row. Each draw splits the pool in two
//! at random and tests one half against the other under several scenarios:
//! - `null`: both halves assigned by the model (H₀ holds exactly: exchangeable rows, same rule);
//! - `null-true-labels-source`: the source half by its true labels, the target half by the
//!   model (the literal "source rows of the class"; misclassified target rows make H₀ false);
//! - `null-label-shift`: the target half subsampled without replacement to a Dirichlet(1) prior
//!   (no conditional shift, but P(x | ŷ = k) mixes the classes in other proportions);
//! - `shift:δ`: the target half's rows of one class (draw r: class r mod c) moved by δ source
//!   standard deviations in every preprocessed feature, assignments unchanged (a known
//!   per-class shift; power for that class, level for the others);
//! - `real:DOMAIN`: the source half against rows of another domain (as many, without
//!   replacement), both assigned by the model (power against a real domain shift).
//!
//! A class below [`MIN_ROWS_PER_CLASS`] rows on a side in a draw is not testable there: it has
//! no p-value, so it is left out of that scenario's shares and of Holm, and counted in
//! `ScenarioSummary::untestable` instead.
//!
//! [`shared_rows`] is the check `glshift shift test` runs before its fit: a target that repeats
//! source rows is refused (rows in both samples make them look alike and bias toward "no shift").

use glshift::config::FitConfig;
use glshift::data::{Domain, PreprocessStats};
use glshift::kernel::bandwidth;
use glshift::kernel::cond_shift::{
    conditional_shift_test, CondTest, CondTestParams, MIN_ROWS_PER_CLASS,
};
use glshift::nn::argmax_row;
use glshift::pipeline;
use ndarray::{Array2, ArrayView1, ArrayView2, Axis};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use crate::simulate::{split_domain, subset};
use crate::{Error, Result};

/// Hard assignments: the argmax of each row (n × c) → n.
pub fn argmax_assign(probs: ArrayView2<f32>) -> Vec<usize> {
    probs.rows().into_iter().map(|r| argmax_row(r).0).collect()
}

/// Number of rows of `b` that are bitwise equal (every f32, `to_bits`) to some row of `a`; 0
/// when the widths differ. Rows are hashed, then a hash match is confirmed row against row, so
/// the cost is O((n_a + n_b)·d).
pub fn shared_rows(a: ArrayView2<f32>, b: ArrayView2<f32>) -> usize {
    if a.ncols() != b.ncols() {
        return 0;
    }
    let key = |r: ArrayView1<f32>| {
        let mut h = DefaultHasher::new();
        r.iter().for_each(|v| v.to_bits().hash(&mut h));
        h.finish()
    };
    let same = |x: ArrayView1<f32>, y: ArrayView1<f32>| {
        x.iter().zip(y.iter()).all(|(u, v)| u.to_bits() == v.to_bits())
    };
    let mut by_key: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, r) in a.rows().into_iter().enumerate() {
        by_key.entry(key(r)).or_default().push(i);
    }
    b.rows()
        .into_iter()
        .filter(|&r| by_key.get(&key(r)).is_some_and(|ix| ix.iter().any(|&i| same(a.row(i), r))))
        .count()
}

/// Rows per class of the assignments `y` (`c` classes; indices ≥ c are not counted).
pub fn class_counts(y: &[usize], c: usize) -> Vec<usize> {
    let mut n = vec![0; c];
    y.iter().filter(|&&k| k < c).for_each(|&k| n[k] += 1);
    n
}

#[allow(clippy::too_many_arguments)]
/// The test on preprocessed rows `xa` (source, assignments `ya`) and `xb` (target, `yb`), h from
/// the rows of both.
pub fn test_domains(
    xa: ArrayView2<f32>,
    ya: &[usize],
    xb: ArrayView2<f32>,
    yb: &[usize],
    c: usize,
    permutations: usize,
    seed: u64,
    eps: f64,
    alpha: f64,
) -> Result<(CondTest, f64)> {
    let h = bandwidth(&[xa, xb], 1.0)?;
    let p = CondTestParams { permutations, seed, eps, h, alpha };
    Ok((conditional_shift_test(xa, ya, xb, yb, c, &p)?, h))
}

/// Settings of [`calibrate`].
#[derive(Clone, Debug, Serialize)]
pub struct CalibrationConfig {
    pub draws: usize,
    pub permutations: usize,
    pub seed: u64,
    /// Per-feature shifts (source standard deviations) of the `shift:δ` scenarios.
    pub deltas: Vec<f64>,
    /// ε of the statistic.
    pub eps: f64,
}

/// Share of p < 0.05 per class and over all classes of one scenario.
#[derive(Clone, Debug, Serialize)]
pub struct ScenarioSummary {
    pub scenario: String,
    /// Per class: share of draws with p < 0.05 (only draws where the class was tested).
    pub share_below_005: Vec<Option<f64>>,
    /// Over every tested (draw, class).
    pub overall_share: f64,
    /// For `shift:δ`: share of p < 0.05 of the shifted class, and of the other classes.
    pub shifted_class_share: Option<f64>,
    pub other_classes_share: Option<f64>,
    /// Share of draws where Holm's overall decision rejected.
    pub overall_reject_share: f64,
    /// (draw, class) pairs tested, i.e. with at least `MIN_ROWS_PER_CLASS` rows a side.
    pub tested: usize,
    /// (draw, class) pairs below the minimum on a side: not in the shares nor in Holm.
    pub untestable: usize,
}

/// What `glshift shift test-calibration` writes.
#[derive(Clone, Debug, Serialize)]
pub struct CalibrationReport {
    pub domain: String,
    pub real_target: Option<String>,
    pub config: CalibrationConfig,
    pub n_train: usize,
    pub n_pool: usize,
    /// Accuracy of the fixed assignment model on the pool (its labels).
    pub pool_accuracy: f64,
    pub bandwidth: f64,
    pub scenarios: Vec<ScenarioSummary>,
    pub seconds: f64,
}

struct Tally {
    name: String,
    below: Vec<(usize, usize)>,
    shifted: (usize, usize),
    others: (usize, usize),
    rejects: usize,
    draws: usize,
    untestable: usize,
}

impl Tally {
    fn new(name: String, c: usize) -> Tally {
        Tally {
            name,
            below: vec![(0, 0); c],
            shifted: (0, 0),
            others: (0, 0),
            rejects: 0,
            draws: 0,
            untestable: 0,
        }
    }

    fn add(&mut self, t: &CondTest, shifted: Option<usize>) {
        self.draws += 1;
        self.rejects += usize::from(t.reject_any);
        for ct in &t.per_class {
            let Some(p) = ct.p_value else {
                self.untestable += 1;
                continue;
            };
            let hit = usize::from(p < 0.05);
            self.below[ct.class].0 += hit;
            self.below[ct.class].1 += 1;
            if let Some(s) = shifted {
                let slot = if s == ct.class { &mut self.shifted } else { &mut self.others };
                slot.0 += hit;
                slot.1 += 1;
            }
        }
    }

    fn summary(&self, power: bool) -> ScenarioSummary {
        let share = |(h, n): (usize, usize)| (n > 0).then(|| h as f64 / n as f64);
        let (h, n) = self.below.iter().fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        ScenarioSummary {
            scenario: self.name.clone(),
            share_below_005: self.below.iter().map(|&b| share(b)).collect(),
            overall_share: h as f64 / n.max(1) as f64,
            shifted_class_share: if power { share(self.shifted) } else { None },
            other_classes_share: if power { share(self.others) } else { None },
            overall_reject_share: self.rejects as f64 / self.draws.max(1) as f64,
            tested: n,
            untestable: self.untestable,
        }
    }
}

/// Rows of `rows` (labels `y`) subsampled without replacement toward a Dirichlet(1) prior:
/// class k keeps min(available, round(n·p_k)) rows.
fn label_shifted(rows: &[usize], y: &[usize], c: usize, rng: &mut ChaCha8Rng) -> Vec<usize> {
    let g: Vec<f64> = (0..c).map(|_| -rng.random::<f64>().max(1e-300).ln()).collect();
    let s: f64 = g.iter().sum();
    let mut by = vec![Vec::new(); c];
    rows.iter().for_each(|&i| by[y[i]].push(i));
    let n = rows.len() as f64;
    let mut out = Vec::new();
    for (k, mut r) in by.into_iter().enumerate() {
        r.shuffle(rng);
        let m = ((n * g[k] / s).round() as usize).min(r.len());
        out.extend_from_slice(&r[..m]);
    }
    out
}

/// The calibration study on `domain` (labelled), optionally with a real target domain; `fit` is
/// the configuration of the assignment model (its method is forced to `source`).
pub fn calibrate(
    domain: &Domain,
    real_target: Option<&Domain>,
    fit: &FitConfig,
    cfg: &CalibrationConfig,
) -> Result<CalibrationReport> {
    let started = std::time::Instant::now();
    let labels = domain.labels.as_deref().ok_or_else(|| {
        Error::bad_data(
            domain.path.display().to_string(),
            "the calibration needs a labelled domain",
        )
    })?;
    if cfg.draws == 0 {
        return Err(Error::param("draws", 0, "need at least 1 draw"));
    }
    let c = domain.n_classes();
    let split = split_domain(labels, c, 0.5, cfg.seed)?;
    let train = subset(domain, &split.source_rows, "train");
    let pool = subset(domain, &split.pool_rows, "pool");
    let mut fit = fit.clone();
    fit.method = glshift::methods::MethodKind::Source;
    let out = pipeline::run(&train, &pool, &fit, &mut |_| {})?;
    let stats = PreprocessStats::fit(train.features.view(), fit.preprocess)?;
    let prep = |d: &Domain| -> Result<Array2<f32>> {
        let mut x = d.features.clone();
        stats.apply(&mut x)?;
        Ok(x)
    };
    let x = prep(&pool)?;
    let y_pool: Vec<usize> = pool.labels.clone().unwrap_or_default();
    let assign = argmax_assign(out.target_probs.view());
    let pool_accuracy =
        assign.iter().zip(&y_pool).filter(|(a, b)| a == b).count() as f64 / y_pool.len() as f64;
    let real = match real_target {
        Some(t) => {
            let r = pipeline::run(&train, t, &fit, &mut |_| {})?;
            Some((prep(t)?, argmax_assign(r.target_probs.view()), t.name.clone()))
        }
        None => None,
    };
    let h = bandwidth(&[x.view()], 1.0)?;
    let mut names =
        vec!["null".to_string(), "null-true-labels-source".into(), "null-label-shift".into()];
    names.extend(cfg.deltas.iter().map(|d| format!("shift:{d}")));
    if let Some((_, _, n)) = &real {
        names.push(format!("real:{n}"));
    }
    let mut tallies: Vec<Tally> = names.into_iter().map(|n| Tally::new(n, c)).collect();
    let n = x.nrows();
    let data = DrawData { x, assign, y_pool, real, c, h };
    for r in 0..cfg.draws {
        calibration_draw(r, &data, cfg, &mut tallies)?;
    }
    let real = data.real;
    let scenarios = tallies.iter().map(|t| t.summary(t.name.starts_with("shift:"))).collect();
    Ok(CalibrationReport {
        domain: domain.name.clone(),
        real_target: real.map(|r| r.2),
        config: cfg.clone(),
        n_train: train.n(),
        n_pool: n,
        pool_accuracy,
        bandwidth: h,
        scenarios,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// What every draw of the calibration reads: the pool's preprocessed rows, their model
/// assignments and labels, the real target's (rows, assignments, name), c and the bandwidth.
struct DrawData {
    x: Array2<f32>,
    assign: Vec<usize>,
    y_pool: Vec<usize>,
    real: Option<(Array2<f32>, Vec<usize>, String)>,
    c: usize,
    h: f64,
}

/// Draw `r`: the pool split in two halves, and the test on each scenario (the nulls, a
/// label shift, a shift of one class by each δ, the real target) added to its tally.
fn calibration_draw(
    r: usize,
    data: &DrawData,
    cfg: &CalibrationConfig,
    tallies: &mut [Tally],
) -> Result<()> {
    let DrawData { x, assign, y_pool, real, c, h } = data;
    let (c, h) = (*c, *h);
    let params = |seed: u64| CondTestParams {
        permutations: cfg.permutations,
        seed,
        eps: cfg.eps,
        h,
        alpha: 0.05,
    };
    let n = x.nrows();
    let mut rng =
        ChaCha8Rng::seed_from_u64(cfg.seed.wrapping_mul(1_000_003).wrapping_add(r as u64));
    let mut idx: Vec<usize> = (0..n).collect();
    idx.shuffle(&mut rng);
    let (a, b) = idx.split_at(n / 2);
    let (xa, xb) = (x.select(Axis(0), a), x.select(Axis(0), b));
    let pick = |v: &[usize], rows: &[usize]| rows.iter().map(|&i| v[i]).collect::<Vec<_>>();
    let (ya, yb) = (pick(assign, a), pick(assign, b));
    let s = r as u64;
    let run = |xa: &Array2<f32>, ya: &[usize], xb: &Array2<f32>, yb: &[usize]| {
        conditional_shift_test(xa.view(), ya, xb.view(), yb, c, &params(s))
    };
    tallies[0].add(&run(&xa, &ya, &xb, &yb)?, None);
    tallies[1].add(&run(&xa, &pick(y_pool, a), &xb, &yb)?, None);
    let ls = label_shifted(b, y_pool, c, &mut rng);
    tallies[2].add(&run(&xa, &ya, &x.select(Axis(0), &ls), &pick(assign, &ls))?, None);
    let k = r % c;
    for (j, &delta) in cfg.deltas.iter().enumerate() {
        let mut xs = xb.clone();
        for (row, &i) in xs.rows_mut().into_iter().zip(b) {
            if y_pool[i] == k {
                row.into_iter().for_each(|v| *v += delta as f32);
            }
        }
        tallies[3 + j].add(&run(&xa, &ya, &xs, &yb)?, Some(k));
    }
    if let Some((xr, yr, _)) = real {
        let mut rows: Vec<usize> = (0..xr.nrows()).collect();
        rows.shuffle(&mut rng);
        rows.truncate(b.len().min(xr.nrows()));
        tallies[3 + cfg.deltas.len()]
            .add(&run(&xa, &ya, &xr.select(Axis(0), &rows), &pick(yr, &rows))?, None);
    }
    Ok(())
}

/// Markdown table of a report: one row per scenario, per-class shares of p < 0.05.
pub fn calibration_markdown(r: &CalibrationReport) -> String {
    let c = r.scenarios.first().map_or(0, |s| s.share_below_005.len());
    let mut s = format!(
        "Domain `{}` ({} training rows for the fixed `source` assignment model, pool {} rows, its accuracy on the pool {:.3}); {} draws, {} permutations, h = {:.1}.\n\n",
        r.domain, r.n_train, r.n_pool, r.pool_accuracy, r.config.draws, r.config.permutations, r.bandwidth
    );
    s.push_str("| scenario | share p<0.05 (all classes) | min–max over classes | shifted class | other classes | Holm rejects (draws) | not testable (draw·class) |\n|---|---|---|---|---|---|---|\n");
    for sc in &r.scenarios {
        let v: Vec<f64> = sc.share_below_005.iter().flatten().copied().collect();
        let (lo, hi) =
            v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
        let f = |o: Option<f64>| o.map_or("–".to_string(), |x| format!("{x:.3}"));
        s.push_str(&format!(
            "| {} | {:.3} | {:.3}–{:.3} | {} | {} | {:.3} | {} |\n",
            sc.scenario,
            sc.overall_share,
            lo,
            hi,
            f(sc.shifted_class_share),
            f(sc.other_classes_share),
            sc.overall_reject_share,
            sc.untestable
        ));
    }
    s.push_str(&format!("\n{c} classes; {:.1} s; a class is tested in a draw when it has at least {MIN_ROWS_PER_CLASS} rows on each side.\n", r.seconds));
    s
}

#[cfg(test)]
mod tests;
