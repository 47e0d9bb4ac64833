//! Which estimator gives `fit`'s reported target prior (`estimated_target_prior`) and its
//! interval. With `C` the confusion on the source hold-out, `q` the target's predicted
//! distribution and `f(x)` the network's posteriors, all from the **final** (adapted) network,
//! temperature-calibrated on the hold-out:
//!
//! ```text
//! final-qp:       p̂_QP   = pˢ ⊙ argmin_{w ≥ 0, wᵀpˢ = 1} ‖q − C w‖²            (BBSE-QP)
//! final-mlls-ts:  p̂_ML   = argmax_p Σ_i ln Σ_k (p_k / π_k) f_k(x_i)             (EM, Saerens 2002)
//! final-mlls-bcts: the same with g = softmax(a·ln f + b) in place of f          (BCTS)
//! final-average:  p̂      = (p̂_QP + p̂_ML,bcts) / 2
//! ```
//!
//! `π` are the hold-out label frequencies. `f` is already temperature-scaled on the hold-out
//! (one parameter, as every label-shift step of the fit; plain softmax when
//! `label_shift.calibrate = false`); BCTS adds a bias per class fitted on the same hold-out
//! (c more parameters from ≈ 30–220 rows here). The EM's likelihood is concave in `p`, so EM
//! started anywhere, the BBSE-QP estimate included, reaches the same `p̂_ML` ("a final EM
//! polish" run to convergence is MLLS). `tracker` is the previous rule: the BBSE-QP
//! estimate of the adaptation loop's last iteration, floored (or restricted to the support of
//! the first estimate), the very numbers the importance weights of training used.
//!
//! The two estimators err differently: BBSE-QP inverts a confusion matrix estimated from a
//! small hold-out (its error grows with `κ(C)`), MLLS trusts the calibrated posteriors on
//! every target row (its error grows with the calibration error under the domain shift); the
//! average halves what is independent in the two. The default was chosen on development
//! draws (docs/fit-prior.md, "Across domains: the protocol").

use serde::{Deserialize, Serialize};

use super::FitPrior;
use crate::label_shift::estimators::finish_from_prior;
use crate::label_shift::prior::{counted_class_prior, RowCounts};
use crate::label_shift::resample::on_distinct_rows;
use crate::label_shift::{Mlls, ShiftEstimate, ShiftEstimator, ShiftInputs};
use crate::Result;

/// Estimator of `fit`'s reported target prior (config `label_shift.prior_estimator`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PriorEstimator {
    /// BBSE-QP of the adaptation loop's last iteration, floored (the previous default).
    Tracker,
    /// BBSE-QP on the final network's outputs, unfloored.
    FinalQp,
    /// MLLS (EM) on the final network's temperature-scaled outputs (the default).
    #[default]
    FinalMllsTs,
    /// MLLS on the final network's outputs recalibrated by BCTS.
    FinalMllsBcts,
    /// The mean of `final-qp` and `final-mlls-bcts`.
    FinalAverage,
}

impl PriorEstimator {
    /// Every value, default first.
    pub const ALL: [PriorEstimator; 5] = [
        PriorEstimator::Tracker,
        PriorEstimator::FinalQp,
        PriorEstimator::FinalMllsTs,
        PriorEstimator::FinalMllsBcts,
        PriorEstimator::FinalAverage,
    ];

    /// Stable name (as in the config).
    pub fn name(self) -> &'static str {
        match self {
            PriorEstimator::Tracker => "tracker",
            PriorEstimator::FinalQp => "final-qp",
            PriorEstimator::FinalMllsTs => "final-mlls-ts",
            PriorEstimator::FinalMllsBcts => "final-mlls-bcts",
            PriorEstimator::FinalAverage => "final-average",
        }
    }

    /// The estimator on the final network's outputs (`soft`: soft or hard confusion and `q`
    /// for BBSE-QP). `tracker` bootstraps as `final-qp`: its interval is that of the unfloored
    /// BBSE-QP on the final network (`fit_prior_interval`).
    pub fn estimator(self, soft: bool) -> FinalPrior {
        FinalPrior { kind: self, soft }
    }
}

impl std::fmt::Display for PriorEstimator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// [`PriorEstimator`] as a [`ShiftEstimator`] (unfloored), for the point and its bootstrap.
#[derive(Clone, Copy, Debug)]
pub struct FinalPrior {
    pub kind: PriorEstimator,
    pub soft: bool,
}

impl ShiftEstimator for FinalPrior {
    fn name(&self) -> &'static str {
        self.kind.name()
    }

    fn estimate(&self, inp: &ShiftInputs) -> Result<ShiftEstimate> {
        self.estimate_counted(inp, (RowCounts::ONCE, RowCounts::ONCE))
    }

    fn estimate_resample(
        &self,
        inp: &ShiftInputs,
        hold_rows: &[usize],
        target_rows: &[usize],
    ) -> Result<ShiftEstimate> {
        on_distinct_rows(inp, hold_rows, target_rows, |inp, counts| {
            self.estimate_counted(inp, counts)
        })
    }
}

impl FinalPrior {
    /// [`ShiftEstimator::estimate`] with the hold-out rows and the target rows counted as
    /// `counts` says (`label_shift/resample.rs`); once each: `estimate`'s bits.
    fn estimate_counted(
        &self,
        inp: &ShiftInputs,
        counts: (RowCounts, RowCounts),
    ) -> Result<ShiftEstimate> {
        let qp = || {
            FitPrior { soft: self.soft, floor: 0.0, support: None }.estimate_counted(inp, counts)
        };
        match self.kind {
            PriorEstimator::Tracker | PriorEstimator::FinalQp => qp(),
            PriorEstimator::FinalMllsTs => {
                Mlls { bcts: false, ..Mlls::default() }.estimate_counted(inp, counts)
            }
            PriorEstimator::FinalMllsBcts => Mlls::default().estimate_counted(inp, counts),
            PriorEstimator::FinalAverage => {
                let (a, b) = (qp()?, Mlls::default().estimate_counted(inp, counts)?);
                let mean: Vec<f64> = a
                    .target_prior
                    .iter()
                    .zip(&b.target_prior)
                    .map(|(x, y)| 0.5 * (x + y))
                    .collect();
                let ps = match inp.source_prior {
                    Some(p) => p.to_vec(),
                    None => counted_class_prior(inp.source_labels, counts.0, mean.len())?,
                };
                let warnings = a.warnings.into_iter().chain(b.warnings).collect();
                finish_from_prior(self.name(), &mean, &ps, warnings, b.iterations)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::label_shift::l1_distance;

    // The exact-label-shift case of the interval's tests (200 hold-out rows, 600 target rows).
    use crate::prior_policy::interval::tests::{case, C, TRUTH};

    #[test]
    fn every_estimator_is_close_to_the_truth_under_exact_label_shift() {
        // As the fit runs them: on outputs temperature-scaled on the hold-out.
        let ps = [1.0 / C as f64; C];
        let kinds = &PriorEstimator::ALL[1..];
        let tracker = ShiftEstimate {
            weights: vec![1.0; C],
            target_prior: ps.to_vec(),
            ..ShiftEstimate::default()
        };
        let mut err = vec![0.0; kinds.len()];
        for seed in 0..5 {
            let (hp, hy, tp) = case(seed);
            let est: Vec<ShiftEstimate> = kinds
                .iter()
                .map(|&k| {
                    crate::prior_policy::fit_prior_estimate(
                        k,
                        true,
                        hp.view(),
                        &hy,
                        tp.view(),
                        &ps,
                        &tracker,
                        true,
                    )
                    .unwrap()
                })
                .collect();
            for (e, out) in err.iter_mut().zip(&est) {
                assert!((out.target_prior.iter().sum::<f64>() - 1.0).abs() < 1e-9);
                *e += l1_distance(&out.target_prior, &TRUTH) / 5.0;
            }
            // The average lies between its two parts, class by class.
            let (qp, ml, avg) = (&est[0].target_prior, &est[2].target_prior, &est[3].target_prior);
            for k in 0..C {
                assert!(avg[k] >= qp[k].min(ml[k]) - 1e-12 && avg[k] <= qp[k].max(ml[k]) + 1e-12);
            }
        }
        // Each estimate recovers at least three quarters of the shift (the source prior is at
        // ℓ1 0.54 from the truth).
        let source_err = l1_distance(&ps, &TRUTH);
        for (k, e) in kinds.iter().zip(err) {
            assert!(e < source_err / 4.0, "{k}: mean ℓ1 {e} (source prior {source_err})");
        }
        // `tracker` reports the training loop's estimate as is.
        let (hp, hy, tp) = case(0);
        let t = crate::prior_policy::fit_prior_estimate(
            PriorEstimator::Tracker,
            true,
            hp.view(),
            &hy,
            tp.view(),
            &ps,
            &tracker,
            true,
        );
        assert_eq!(t.unwrap(), tracker);
    }

    #[test]
    fn interval_follows_the_estimator_and_is_deterministic_whatever_the_thread_count() {
        let ps = [1.0 / C as f64; C];
        let (hp, hy, tp) = case(11);
        let tracker = ShiftEstimate {
            weights: vec![1.0; C],
            target_prior: ps.to_vec(),
            ..ShiftEstimate::default()
        };
        for kind in [
            PriorEstimator::FinalMllsTs,
            PriorEstimator::FinalMllsBcts,
            PriorEstimator::FinalAverage,
        ] {
            let run = |threads: usize, seed: u64| {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                pool.install(|| {
                    crate::prior_policy::fit_prior_interval(
                        kind,
                        true,
                        hp.view(),
                        &hy,
                        tp.view(),
                        &ps,
                        &tracker,
                        true,
                        60,
                        0.9,
                        seed,
                    )
                    .unwrap()
                })
            };
            let (a, b) = (run(1, 3), run(4, 3));
            assert_eq!(
                (&a.low, &a.high, &a.estimate.target_prior),
                (&b.low, &b.high, &b.estimate.target_prior),
                "{kind}"
            );
            assert_ne!(a.high, run(1, 4).high, "{kind}: another seed draws other resamples");
            // Reported = the estimator on the full data (not the tracker), inside its interval.
            assert_eq!(a.estimate.target_prior, a.final_point, "{kind}");
            assert!(
                l1_distance(&a.estimate.target_prior, &TRUTH) < 0.15,
                "{kind}: {:?}",
                a.estimate.target_prior
            );
            for k in 0..C {
                assert!(
                    a.low[k] <= a.estimate.target_prior[k]
                        && a.estimate.target_prior[k] <= a.high[k]
                );
            }
        }
    }

    #[test]
    fn names_round_trip_through_the_config() {
        for k in PriorEstimator::ALL {
            let s = serde_json::to_string(&k).unwrap();
            assert_eq!(s, format!("\"{}\"", k.name()));
            assert_eq!(serde_json::from_str::<PriorEstimator>(&s).unwrap(), k);
        }
        assert!(serde_json::from_str::<PriorEstimator>("\"bbse\"").is_err());
    }
}
