//! The host's share of one full-batch iteration (`glshift perf --host-iteration`): the calls
//! the training loop makes on the logits (n × c) every iteration, wherever the network runs,
//! timed on seeded synthetic logits at a given shape.
//!
//! On a GPU these calls are what stays on the CPU per iteration while the GPU waits, so they
//! bound how fast a GPU iteration can be (docs/performance.md, "GPU"). Adaptation
//! (`train::adapt`, default MUL, no dropout): the temperature fitted on the hold-out rows, the
//! calibrated softmax of every row, BBSE-QP (confusion on the hold-out, the target's mean
//! prediction, the QP), the τ-confident pseudo-labels and the importance-weighted source
//! cross-entropy with its gradient. Pre-training (`train::pretrain_full`): the cross-entropy
//! of the training rows and the hold-out rows' NLL. The prior guard (once per fit) and the
//! kernel terms (on the GPU) are not in it.

use std::time::Instant;

use glshift::config::FitConfig;
use glshift::label_shift::{self, calibration::nll_rows};
use glshift::methods::method::CeWeights;
use glshift::train::{pseudo_labels, source_cross_entropy};
use ndarray::{s, Array2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::median;
use crate::{Error, Result};

/// Timings of one call, over the timed runs.
#[derive(Serialize, Debug, Clone)]
pub struct HostCall {
    pub stage: &'static str,
    pub call: &'static str,
    pub median_ms: f64,
    pub min_ms: f64,
}

/// The `glshift perf --host-iteration --json` object.
#[derive(Serialize, Debug, Clone)]
pub struct HostShare {
    pub n_source: usize,
    pub n_holdout: usize,
    pub n_target: usize,
    pub c: usize,
    pub seed: u64,
    pub runs: usize,
    /// rayon's threads (`RAYON_NUM_THREADS`).
    pub threads: usize,
    pub calls: Vec<HostCall>,
    /// Σ of the adaptation calls' medians.
    pub adaptation_ms: f64,
    /// Σ of the pre-training calls' medians.
    pub pretraining_ms: f64,
}

/// The calls timed, in the order [`measure_host_share`] makes them: (stage, call).
const CALLS: [(&str, &str); 7] = [
    ("adaptation", "temperature (hold-out rows)"),
    ("adaptation", "calibrated softmax (every row)"),
    ("adaptation", "BBSE-QP (confusion, target mean, QP)"),
    ("adaptation", "pseudo-labels (target rows)"),
    ("adaptation", "weighted cross-entropy (training rows)"),
    ("pre-training", "cross-entropy (training rows)"),
    ("pre-training", "NLL (hold-out rows)"),
];

/// The times of one run's calls, each added to its call's list except in the warm-up run (0).
struct Lap<'a> {
    run: usize,
    next: usize,
    ms: &'a mut [Vec<f64>],
}

impl Lap<'_> {
    /// `f()`, timed as the next call of [`CALLS`].
    fn time<T>(&mut self, f: impl FnOnce() -> glshift::Result<T>) -> Result<T> {
        let t0 = Instant::now();
        let out = f()?;
        if self.run > 0 {
            self.ms[self.next].push(t0.elapsed().as_secs_f64() * 1e3);
        }
        self.next += 1;
        Ok(out)
    }
}

/// Seeded logits of `n_source + n_target` rows and c classes, each row's label ahead by 3 (a
/// trained network's margin, so the temperature and the pseudo-labels have work to do), and
/// the labels.
fn synthetic_logits(n: usize, c: usize, seed: u64) -> (Array2<f32>, Vec<usize>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let labels: Vec<usize> = (0..n).map(|_| rng.random_range(0..c)).collect();
    let logits = Array2::from_shape_fn((n, c), |(i, k)| {
        rng.random::<f32>() * 4.0 + if labels[i] == k { 3.0 } else { 0.0 }
    });
    (logits, labels)
}

/// Times the host's calls of one iteration, `runs` times after one untimed warm-up.
pub fn measure_host_share(
    n_source: usize,
    n_target: usize,
    c: usize,
    seed: u64,
    runs: usize,
) -> Result<HostShare> {
    let cfg = FitConfig::default();
    let n_holdout = (n_source as f64 * cfg.label_shift.holdout_fraction).round() as usize;
    if runs == 0 || c < 2 || n_target == 0 || n_holdout == 0 || n_holdout >= n_source {
        return Err(Error::param(
            "host-iteration",
            format!("{n_source},{n_target} rows, {c} classes, {runs} runs"),
            "needs rows in every part, 2 classes or more and a timed run",
        ));
    }
    let n_train = n_source - n_holdout;
    let (logits, labels) = synthetic_logits(n_source + n_target, c, seed);
    let (train, hold, target) = (s![..n_train, ..], s![n_train..n_source, ..], s![n_source.., ..]);
    let (y_train, y_hold) = (&labels[..n_train], &labels[n_train..n_source]);
    let source_prior = vec![1.0 / c as f64; c];
    let soft = cfg.label_shift.soft;
    let mut ms: Vec<Vec<f64>> = vec![Vec::new(); CALLS.len()];
    for run in 0..=runs {
        let mut lap = Lap { run, next: 0, ms: &mut ms };
        let temperature = lap.time(|| label_shift::fit_temperature(logits.slice(hold), y_hold))?;
        let probs =
            lap.time(|| Ok(label_shift::softmax_with_temperature(logits.view(), temperature)))?;
        let w = lap.time(|| {
            let conf =
                label_shift::confusion_matrix(probs.slice(hold), y_hold, &source_prior, soft)?;
            let q = label_shift::predicted_distribution(probs.slice(target), soft)?;
            Ok(label_shift::bbse_qp(conf.matrix.view(), &q, &source_prior)?.weights)
        })?;
        lap.time(|| {
            Ok(std::hint::black_box(pseudo_labels(probs.slice(target), &source_prior, cfg.mul.tau)))
        })?;
        lap.time(|| {
            Ok(std::hint::black_box(source_cross_entropy(
                logits.slice(train),
                y_train,
                &CeWeights::WeightedMean(w),
            )))
        })?;
        lap.time(|| {
            Ok(std::hint::black_box(source_cross_entropy(
                logits.slice(train),
                y_train,
                &CeWeights::Uniform,
            )))
        })?;
        lap.time(|| Ok(std::hint::black_box(nll_rows(logits.slice(hold), y_hold, 1.0))))?;
    }
    let calls: Vec<HostCall> = CALLS
        .iter()
        .zip(&ms)
        .map(|(&(stage, call), ms)| HostCall {
            stage,
            call,
            median_ms: median(ms),
            min_ms: ms.iter().copied().fold(f64::INFINITY, f64::min),
        })
        .collect();
    let sum = |stage: &str| calls.iter().filter(|c| c.stage == stage).map(|c| c.median_ms).sum();
    Ok(HostShare {
        n_source,
        n_holdout,
        n_target,
        c,
        seed,
        runs,
        threads: glshift::kernel::threads(),
        adaptation_ms: sum("adaptation"),
        pretraining_ms: sum("pre-training"),
        calls,
    })
}
