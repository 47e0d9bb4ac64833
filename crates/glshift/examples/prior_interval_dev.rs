//! Development comparison of constructions of `fit`'s prior interval, on saved fits.
//!
//! For each run folder `RUN` of `scripts/cross_domain_prior.sh` (`RUN/sim` the simulated pair,
//! `RUN/fit` its default fit), rebuilds the final network's hold-out and target probabilities
//! from `RUN/fit/model.glshift` (the hold-out split is the fit's, from its seed), bootstraps the
//! **unfloored** BBSE-QP estimate as `fit_prior_interval` does, and scores several ways of
//! turning the replicates into an interval against `RUN/sim/simulation.json`'s true prior.
//! With θ̂ the reported (floored) estimate, θ_f the unfloored estimate on the final network and
//! q_lo, q_hi the replicate quantiles:
//! - `floored-basic`: the old construction (replicates floored, deviations from the final
//!   network's floored estimate placed around θ̂), rebuilt here from the saved outputs;
//! - `raw-shifted`: `[θ̂ − (q_hi − θ_f), θ̂ − (q_lo − θ_f)] ∩ [0, 1]`;
//! - `raw-percentile`: `[q_lo, q_hi]`;
//! - `raw-percentile+report`: `[min(q_lo, θ̂), max(q_hi, θ̂)]` (chosen: `fit_prior_interval`);
//! - `raw-basic+report`: `[min(2θ_f − q_hi, θ̂), max(2θ_f − q_lo, θ̂)] ∩ [0, 1]`.
//!
//! `synthetic N_HOLD GAIN` instead of run folders scores the same variants on 40 synthetic
//! exact-label-shift cases (see [`synthetic`]), where no real target label exists.
//!
//! The truth is read to score only. Use it on development draws (seeds other than the reported
//! ones). `cargo run --release -p glshift --example prior_interval_dev -- RUN...`

// Product code: no function over clippy.toml's 80 lines (test code may be longer).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

use std::path::Path;

use glshift::label_shift::{
    bootstrap, softmax_with_temperature, Interval, IntervalMethod, ShiftEstimator, ShiftInputs,
};
use glshift::prior_policy::FitPrior;
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

const NAMES: [&str; 5] =
    ["floored-basic", "raw-shifted", "raw-percentile", "raw-percentile+report", "raw-basic+report"];

#[path = "support/saved_run.rs"]
mod saved_run;
use saved_run::{vec_of, SavedRun};

/// Per variant: (lows, highs) for one run.
fn variants(run: &Path) -> (Vec<Bounds>, Vec<f64>) {
    let run_data = SavedRun::load(run);
    let SavedRun { cfg, c, report, truth, .. } = &run_data;
    let c = *c;
    let reported = vec_of(&report["estimated_target_prior"]);
    let old = (
        vec_of(&report["estimated_target_prior_ci_low"]),
        vec_of(&report["estimated_target_prior_ci_high"]),
    );
    let inp = run_data.inputs();
    let raw = FitPrior { soft: cfg.label_shift.soft, floor: 0.0, support: None };
    let iv = bootstrap(&raw, &inp, 200, cfg.seed ^ 0x5e_edc1, 0.9, IntervalMethod::Percentile)
        .expect("bootstrap");
    // The old construction, rebuilt: floored replicates, deviations from the final network's
    // floored estimate placed around the report. It must match the report of a fit made before
    // the change (the check that the split and the network's outputs are rebuilt exactly).
    let floored = FitPrior {
        soft: cfg.label_shift.soft,
        floor: cfg.prior_floor_for(c),
        support: cfg
            .label_shift
            .fixed_support_for(cfg.method)
            .then(|| reported.iter().map(|&p| p > 0.0).collect()),
    };
    let fl = bootstrap(&floored, &inp, 200, cfg.seed ^ 0x5e_edc1, 0.9, IntervalMethod::Basic)
        .expect("bootstrap");
    let sh = |q: &[f64]| -> Vec<f64> { (0..c).map(|k| q[k] - fl.point[k] + reported[k]).collect() };
    let rebuilt = IntervalMethod::Basic.bounds(&reported, &sh(&fl.q_low), &sh(&fl.q_high));
    let gap = rebuilt
        .0
        .iter()
        .zip(&old.0)
        .chain(rebuilt.1.iter().zip(&old.1))
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    if gap > 1e-6 {
        eprintln!("{}: the old interval rebuilt differs from the report's by {gap} (fit made after the change?)", run.display());
    }
    (from_replicates(&reported, old, &iv), truth.clone())
}

type Bounds = (Vec<f64>, Vec<f64>);

/// The variants of the module doc from the report, the old interval and the raw bootstrap.
fn from_replicates(reported: &[f64], old: Bounds, iv: &Interval) -> Vec<Bounds> {
    let (f, lo, hi, c) = (&iv.point, &iv.q_low, &iv.q_high, reported.len());
    let cl = |x: f64| x.clamp(0.0, 1.0);
    vec![
        old,
        (0..c)
            .map(|k| (cl(reported[k] - (hi[k] - f[k])), cl(reported[k] - (lo[k] - f[k]))))
            .unzip(),
        (lo.clone(), hi.clone()),
        (0..c).map(|k| (lo[k].min(reported[k]), hi[k].max(reported[k]))).unzip(),
        (0..c)
            .map(|k| {
                (cl(2.0 * f[k] - hi[k]).min(reported[k]), cl(2.0 * f[k] - lo[k]).max(reported[k]))
            })
            .unzip(),
    ]
}

/// Exact label shift, synthetic (no real target labels): c = 10, a classifier whose logits are
/// `gain · onehot(y) + N(0, 1)`, a labelled hold-out of `n_hold` rows at a uniform prior and 600
/// target rows at a Dirichlet(1) prior (exact counts). The report is the floored estimate on the
/// support {raw ≥ floor}, as `fit` keeps it.
fn synthetic(rep: u64, n_hold: usize, gain: f32) -> (Vec<Bounds>, Vec<f64>) {
    let c = 10;
    let mut rng = ChaCha8Rng::seed_from_u64(1000 + rep);
    let g: Vec<f64> = (0..c).map(|_| -(1.0 - rng.random::<f64>()).ln()).collect();
    let truth: Vec<f64> = g.iter().map(|x| x / g.iter().sum::<f64>()).collect();
    let mut counts: Vec<usize> = truth.iter().map(|p| (p * 600.0).floor() as usize).collect();
    for k in 0..600 - counts.iter().sum::<usize>() {
        counts[k % c] += 1;
    }
    let truth: Vec<f64> = counts.iter().map(|&m| m as f64 / 600.0).collect();
    let ty: Vec<usize> = (0..c).flat_map(|k| std::iter::repeat_n(k, counts[k])).collect();
    let hy: Vec<usize> = (0..n_hold).map(|i| i % c).collect();
    let mut probs = |y: &[usize]| {
        let mut z = Array2::from_shape_fn((y.len(), c), |_| rng.sample::<f32, _>(StandardNormal));
        y.iter().enumerate().for_each(|(i, &k)| z[[i, k]] += gain);
        softmax_with_temperature(z.view(), 1.0)
    };
    let (hp, tp) = (probs(&hy), probs(&ty));
    let ps = vec![1.0 / c as f64; c];
    let inp = ShiftInputs {
        source_probs: hp.view(),
        source_labels: &hy,
        target_probs: tp.view(),
        source_prior: Some(&ps),
    };
    let raw = FitPrior { soft: true, floor: 0.0, support: None };
    let floor = 0.25 / c as f64;
    let raw_point = raw.estimate(&inp).expect("estimate").target_prior;
    let floored = FitPrior {
        soft: true,
        floor,
        support: Some(raw_point.iter().map(|&p| p >= floor).collect()),
    };
    let fl = bootstrap(&floored, &inp, 200, rep, 0.9, IntervalMethod::Basic).expect("bootstrap");
    let iv = bootstrap(&raw, &inp, 200, rep, 0.9, IntervalMethod::Percentile).expect("bootstrap");
    (from_replicates(&fl.point, (fl.low.clone(), fl.high.clone()), &iv), truth)
}

fn main() {
    let runs: Vec<String> = std::env::args().skip(1).collect();
    let synth = runs.first().map(|a| a == "synthetic").unwrap_or(false);
    let cases: Vec<(String, Vec<Bounds>, Vec<f64>)> = if synth {
        let (n_hold, gain): (usize, f32) = (runs[1].parse().unwrap(), runs[2].parse().unwrap());
        (0..40)
            .map(|r| {
                let (v, t) = synthetic(r, n_hold, gain);
                (format!("synthetic {r}"), v, t)
            })
            .collect()
    } else {
        runs.iter()
            .map(|r| {
                let (v, t) = variants(Path::new(r));
                (r.clone(), v, t)
            })
            .collect()
    };
    // Per variant: covered classes, classes, summed width; and the same for classes with truth < 0.05.
    let mut tot = vec![[0.0f64; 6]; NAMES.len()];
    for (r, vs, truth) in &cases {
        let mut line = format!("{r}:");
        for (j, (lo, hi)) in vs.iter().enumerate() {
            let cov = (0..truth.len())
                .filter(|&k| lo[k] - 1e-12 <= truth[k] && truth[k] <= hi[k] + 1e-12)
                .count();
            let small: Vec<usize> = (0..truth.len()).filter(|&k| truth[k] < 0.05).collect();
            let scov = small
                .iter()
                .filter(|&&k| lo[k] - 1e-12 <= truth[k] && truth[k] <= hi[k] + 1e-12)
                .count();
            let w: f64 = (0..truth.len()).map(|k| hi[k] - lo[k]).sum();
            let sw: f64 = small.iter().map(|&k| hi[k] - lo[k]).sum();
            let t = &mut tot[j];
            *t = [
                t[0] + cov as f64,
                t[1] + truth.len() as f64,
                t[2] + w,
                t[3] + scov as f64,
                t[4] + small.len() as f64,
                t[5] + sw,
            ];
            line += &format!(" {}={cov}/{}", NAMES[j], truth.len());
        }
        println!("{line}");
    }
    println!(
        "variant | coverage | mean width | coverage (truth < 0.05) | mean width (truth < 0.05)"
    );
    for (j, t) in tot.iter().enumerate() {
        println!(
            "{} | {:.3} | {:.4} | {:.3} ({} classes) | {:.4}",
            NAMES[j],
            t[0] / t[1],
            t[2] / t[1],
            t[3] / t[4].max(1.0),
            t[4],
            t[5] / t[4].max(1.0)
        );
    }
}
