//! Development comparison of estimators for `fit`'s reported target prior, on saved
//! fits of `scripts/cross_domain_prior.sh`.
//!
//! For each run folder `RUN` (`RUN/sim` the simulated pair, `RUN/fit` its fit), rebuilds the
//! final network's hold-out and target probabilities from `RUN/fit/model.glshift` (the hold-out
//! split is the fit's, from its seed), temperature-calibrates them on the hold-out as the fit
//! does, and scores each candidate estimator against `RUN/sim/simulation.json`'s true prior:
//! its ℓ1 error, and the coverage of its 90% interval built as `fit_prior_interval` builds it
//! (percentile interval of 200 bootstrap replicates of the **same** estimator, widened to hold
//! the point; replicates resample hold-out rows with their labels and target rows).
//! `tracker` is the previous default (BBSE-QP of the last adaptation iteration, floored:
//! `importance_weights ⊙ pˢ` of `report.json`, with its interval rebuilt; checked against the
//! report when the fit reported it). All candidates are label-free; the truth is read to score only,
//! so use this on development draws (seeds other than the reported ones).
//!
//! `cargo run --release -p glshift --example prior_estimator_dev -- RUN...`

// Product code: no function over clippy.toml's 80 lines (test code may be longer).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

use std::path::Path;

use glshift::label_shift::{
    bootstrap, restrict_to_support, Bbse, IntervalMethod, Mlls, ShiftEstimate, ShiftEstimator,
    ShiftInputs,
};
use glshift::prior_policy::{FitPrior, PriorEstimator};
use glshift::Result;

#[path = "support/saved_run.rs"]
mod saved_run;
use saved_run::{vec_of, SavedRun};

/// `inner`, then restricted to the tracker's support (classes the fit reported > 0) with its floor.
struct OnSupport<E> {
    inner: E,
    support: Vec<bool>,
    floor: f64,
}

impl<E: ShiftEstimator> ShiftEstimator for OnSupport<E> {
    fn name(&self) -> &'static str {
        "on-support"
    }
    fn estimate(&self, inp: &ShiftInputs) -> Result<ShiftEstimate> {
        let raw = self.inner.estimate(inp)?;
        Ok(restrict_to_support(&raw, inp.source_prior.expect("given"), &self.support, self.floor))
    }
}

/// The mean of two estimators' priors.
struct Mean<A, B>(A, B);

impl<A: ShiftEstimator, B: ShiftEstimator> ShiftEstimator for Mean<A, B> {
    fn name(&self) -> &'static str {
        "mean"
    }
    fn estimate(&self, inp: &ShiftInputs) -> Result<ShiftEstimate> {
        let (a, b) = (self.0.estimate(inp)?, self.1.estimate(inp)?);
        let target_prior: Vec<f64> =
            a.target_prior.iter().zip(&b.target_prior).map(|(x, y)| 0.5 * (x + y)).collect();
        let ps = inp.source_prior.expect("given");
        let weights = target_prior.iter().zip(ps).map(|(t, p)| t / p).collect();
        Ok(ShiftEstimate { weights, target_prior, ..ShiftEstimate::default() })
    }
}

fn candidates(
    soft: bool,
    support: &[bool],
    floor: f64,
) -> Vec<(&'static str, Box<dyn ShiftEstimator>)> {
    let qp = || FitPrior { soft, floor: 0.0, support: None };
    vec![
        ("final-qp", Box::new(qp())),
        ("final-qp-support", Box::new(FitPrior { soft, floor, support: Some(support.to_vec()) })),
        ("final-qp-hard", Box::new(FitPrior { soft: false, floor: 0.0, support: None })),
        ("final-bbse-hard", Box::new(Bbse { soft: false })),
        ("final-mlls-bcts", Box::new(PriorEstimator::FinalMllsBcts.estimator(soft))),
        (
            "final-mlls-support",
            Box::new(OnSupport { inner: Mlls::default(), support: support.to_vec(), floor }),
        ),
        ("final-mlls-ts", Box::new(PriorEstimator::FinalMllsTs.estimator(soft))),
        (
            "final-average-qp-mlls-ts",
            Box::new(Mean(
                FitPrior { soft, floor: 0.0, support: None },
                PriorEstimator::FinalMllsTs.estimator(soft),
            )),
        ),
        ("final-average", Box::new(PriorEstimator::FinalAverage.estimator(soft))),
        (
            "final-average-support",
            Box::new(OnSupport {
                inner: PriorEstimator::FinalAverage.estimator(soft),
                support: support.to_vec(),
                floor,
            }),
        ),
    ]
}

/// Per candidate: (name, ℓ1, share of classes covered).
fn score(run: &Path) -> Vec<(String, f64, f64)> {
    let run_data = SavedRun::load(run);
    let SavedRun { cfg, c, source_prior: ps, report, truth, .. } = &run_data;
    let c = *c;
    let l1 = |p: &[f64]| p.iter().zip(truth.iter()).map(|(a, b)| (a - b).abs()).sum::<f64>();
    let covered = |lo: &[f64], hi: &[f64]| {
        (0..c).filter(|&k| lo[k] - 1e-12 <= truth[k] && truth[k] <= hi[k] + 1e-12).count() as f64
            / c as f64
    };
    let hull = |lo: &[f64], hi: &[f64], p: &[f64]| -> (Vec<f64>, Vec<f64>) {
        (0..c).map(|k| (lo[k].min(p[k]), hi[k].max(p[k]))).unzip()
    };
    // The tracker's estimate is ŵ ⊙ pˢ (its weights are p̂ᵗ / pˢ), whatever the report shows.
    let w = vec_of(&report["importance_weights"]);
    let tracker: Vec<f64> = w.iter().zip(ps).map(|(a, b)| a * b).collect();
    let reported = vec_of(&report["estimated_target_prior"]);
    let chosen = report["config"]["label_shift"]["prior_estimator"]
        .as_str()
        .unwrap_or("tracker")
        .to_string();

    let inp = run_data.inputs();
    let support: Vec<bool> = tracker.iter().map(|&p| p > 0.0).collect();
    let mut out = Vec::new();
    for (name, est) in candidates(cfg.label_shift.soft, &support, cfg.prior_floor_for(c)) {
        let iv = bootstrap(
            est.as_ref(),
            &inp,
            200,
            cfg.seed ^ 0x5e_edc1,
            0.9,
            IntervalMethod::Percentile,
        )
        .expect("bootstrap");
        if name == "final-qp" {
            // `tracker`: its interval is the unfloored BBSE-QP's, widened to hold it.
            let (lo, hi) = hull(&iv.q_low, &iv.q_high, &tracker);
            if chosen == "tracker" {
                let gap = (0..c)
                    .map(|k| (lo[k] - vec_of(&report["estimated_target_prior_ci_low"])[k]).abs())
                    .fold(0.0, f64::max);
                let gap =
                    gap.max((0..c).map(|k| (tracker[k] - reported[k]).abs()).fold(0.0, f64::max));
                if gap > 1e-6 {
                    eprintln!(
                        "{}: tracker rebuilt differs from the report by {gap}",
                        run.display()
                    );
                }
            }
            out.push(("tracker".to_string(), l1(&tracker), covered(&lo, &hi)));
        }
        if name == chosen && (0..c).any(|k| (iv.point[k] - reported[k]).abs() > 1e-6) {
            eprintln!("{}: {name} rebuilt differs from the report", run.display());
        }
        let (lo, hi) = hull(&iv.q_low, &iv.q_high, &iv.point);
        out.push((name.to_string(), l1(&iv.point), covered(&lo, &hi)));
    }
    out
}

fn main() {
    let runs: Vec<String> = std::env::args().skip(1).collect();
    type Scores = Vec<(String, f64, f64)>;
    let mut all: Vec<(String, Scores)> = Vec::new();
    for r in &runs {
        let s = score(Path::new(r));
        for (name, l1, cov) in &s {
            println!("{r}\t{name}\t{l1:.4}\t{cov:.2}");
        }
        all.push((r.clone(), s));
    }
    let names: Vec<String> =
        all.first().map(|(_, s)| s.iter().map(|x| x.0.clone()).collect()).unwrap_or_default();
    println!("| candidate | runs | ℓ1 | coverage |");
    println!("|---|---|---|---|");
    for (j, n) in names.iter().enumerate() {
        let l1s: Vec<f64> = all.iter().map(|(_, s)| s[j].1).collect();
        let covs: Vec<f64> = all.iter().map(|(_, s)| s[j].2).collect();
        let ms = |v: &[f64]| {
            let m = v.iter().sum::<f64>() / v.len() as f64;
            let sd = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len().max(2) - 1) as f64)
                .sqrt();
            format!("{m:.3} ± {sd:.3}")
        };
        println!("| {n} | {} | {} | {} |", l1s.len(), ms(&l1s), ms(&covs));
    }
}
