//! Label-free stopping rules of the two stages. Neither reads a target
//! label; both only look at quantities the loop already computes.
//!
//! **Pre-training** (source labels only): with ℓᵢ,t the NLL of hold-out row i at iteration t,
//! L_t = mean_i ℓᵢ,t and SE_t = sd_i(ℓᵢ,t)/√n_hold its standard error, pre-training stops after
//! iteration t once
//!
//! ```text
//! L_{t−W} − L_t < k · SE_t        (W = pretrain_patience, k = pretrain_min_gain_se)
//! ```
//!
//! i.e. once the last W iterations moved the hold-out NLL by less than k standard errors of that
//! NLL — less than this hold-out can tell apart from its own sampling noise — and keeps the
//! network with the lowest L_t seen. With W ≥ `pretrain_iters` the rule never fires (every
//! iteration runs, the lowest-NLL network is kept). Why the standard error rather than a relative
//! gain, and why W = 100: docs/methods.md "Stopping rules" (source hold-outs only).
//!
//! **Adaptation** (MUL): with `s_t` the state at iteration t — the estimated target prior p̂ᵗ_t
//! and each target row's pseudo-label (its class when τ-confident, "none" otherwise) — the
//! adaptation stops after iteration t once
//!
//! ```text
//! ‖p̂ᵗ_t − p̂ᵗ_{t−W}‖₁ ≤ tol_prior,   #{i : ŷ_i,t ≠ ŷ_i,t−W} / n_t ≤ tol_labels,
//! and J_DU has pooled the target rows since t − W or earlier (when J_DU is on),
//! and, when `adapt_stop.tol_objective` = ρ is set (default 0.15), |J_TU,t−W − J_TU,t| ≤ ρ·|J_TU,t−W|
//! ```
//!
//! (W = `adapt_stop.window`), and never before `adapt_stop.min_iters`. These are the quantities
//! that drive MUL's updates (w and p̂ᵗ weight the CE and J_TU; the pseudo-labels pick the rows of
//! J_TU and J_DU): once they no longer move, further steps only sharpen an unchanged alignment.
//! The optional last condition asks the objective J_TU itself to have settled: with the state
//! frozen, J_TU keeps falling roughly like a power of the iteration count (docs/methods.md),
//! so its relative change over W iterations shrinks like W/t and ρ sets how long that tail runs.

use crate::config::{AdaptStopConfig, FitConfig};

/// The pre-training rule: the hold-out NLL of the last W + 1 iterations and the best so far.
pub(super) struct PretrainStopper {
    min_gain_se: f64,
    window: usize,
    /// L_{t−W} … L_t, oldest first (kept only when the rule can fire).
    recent: std::collections::VecDeque<f64>,
    best: Option<f64>,
    can_fire: bool,
}

impl PretrainStopper {
    pub fn new(cfg: &FitConfig) -> Self {
        PretrainStopper {
            min_gain_se: cfg.pretrain_min_gain_se,
            window: cfg.pretrain_patience,
            recent: Default::default(),
            best: None,
            can_fire: cfg.pretrain_patience < cfg.pretrain_iters,
        }
    }

    /// Records the per-row hold-out NLL of one iteration (n_hold values, n_hold ≥ 1): whether
    /// its network is the best so far (lowest mean NLL; the caller keeps it) and whether
    /// pre-training stops after it (the window's gain fell under k standard errors).
    pub fn observe(&mut self, rows: &[f64]) -> PretrainVerdict {
        let (nll, se) = mean_and_se(rows);
        let improved = self.best.is_none_or(|b| nll < b);
        if improved {
            self.best = Some(nll);
        }
        let mut stop = false;
        if self.can_fire {
            self.recent.push_back(nll);
            if self.recent.len() > self.window + 1 {
                self.recent.pop_front();
            }
            stop = self.recent.len() == self.window + 1
                && self.recent[0] - nll < self.min_gain_se * se;
        }
        PretrainVerdict { improved, stop }
    }
}

/// Mean (summed in row order, as `calibration::nll_at`) and standard error sd/√n (sd with
/// n − 1, from [`crate::eval::mean_std`]; 0 for one row; (0, 0) for none).
pub(super) fn mean_and_se(rows: &[f64]) -> (f64, f64) {
    if rows.is_empty() {
        return (0.0, 0.0);
    }
    let (mean, sd) = crate::eval::mean_std(rows);
    (mean, sd / (rows.len() as f64).sqrt())
}

/// What [`PretrainStopper::observe`] says about one iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PretrainVerdict {
    pub improved: bool,
    pub stop: bool,
}

/// One iteration's state for the adaptation rule.
pub(super) struct AdaptState<'a> {
    pub prior: Option<&'a [f64]>,
    /// Target rows τ-confident at this iteration and their labels (ascending rows).
    pub confident: &'a [usize],
    pub labels: &'a [usize],
    pub n_target: usize,
    /// Whether J_DU pooled the confident target rows at this iteration.
    pub du_pooled: bool,
    /// J_TU at this iteration (0 when the method has none).
    pub j_tu: f64,
}

/// The adaptation rule; see the module docs.
pub(super) struct AdaptStopper {
    cfg: AdaptStopConfig,
    needs_pooling: bool,
    /// States of the last W + 1 iterations (prior, per-row label or `u32::MAX`, J_TU), oldest
    /// first.
    trace: std::collections::VecDeque<(Option<Vec<f64>>, Vec<u32>, f64)>,
    pooled_since: Option<usize>,
}

impl AdaptStopper {
    /// `None` when the rule does not apply (turned off, or a method outside MUL's family: MUL
    /// and `mmd-classwise`, which differ only in the discrepancy and so train alike).
    pub fn new(cfg: &FitConfig) -> Option<Self> {
        let applies = cfg.adapt_stop.enabled && cfg.method.is_mul_family();
        applies.then(|| AdaptStopper {
            cfg: cfg.adapt_stop.clone(),
            needs_pooling: cfg.mul.use_du && cfg.mul.lambda_du > 0.0,
            trace: Default::default(),
            pooled_since: None,
        })
    }

    /// Records iteration `it` (0-based) and says whether the stage may stop after it.
    pub fn observe(&mut self, it: usize, s: &AdaptState) -> bool {
        let mut rows = vec![u32::MAX; s.n_target];
        for (&i, &k) in s.confident.iter().zip(s.labels) {
            rows[i] = k as u32;
        }
        if s.du_pooled && self.pooled_since.is_none() {
            self.pooled_since = Some(it);
        }
        self.trace.push_back((s.prior.map(<[f64]>::to_vec), rows, s.j_tu));
        let w = self.cfg.window;
        if self.trace.len() > w + 1 {
            self.trace.pop_front();
        }
        if it + 1 < self.cfg.min_iters || self.trace.len() <= w {
            return false;
        }
        let pooled_long_enough = match self.pooled_since {
            Some(at) => it >= at + w,
            None => !self.needs_pooling,
        };
        let (old, new) = (&self.trace[0], &self.trace[w]);
        let prior_move = match (&old.0, &new.0) {
            (Some(a), Some(b)) => a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum::<f64>(),
            _ => 0.0,
        };
        let changed = old.1.iter().zip(&new.1).filter(|(a, b)| a != b).count();
        let label_share = changed as f64 / s.n_target.max(1) as f64;
        let objective_settled =
            self.cfg.tol_objective.is_none_or(|rho| (old.2 - new.2).abs() <= rho * old.2.abs());
        pooled_long_enough
            && prior_move <= self.cfg.tol_prior
            && label_share <= self.cfg.tol_labels
            && objective_settled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> FitConfig {
        FitConfig::default()
    }

    const IMPROVED: PretrainVerdict = PretrainVerdict { improved: true, stop: false };
    const CONTINUE: PretrainVerdict = PretrainVerdict { improved: false, stop: false };

    /// Per-row NLLs with mean `m` and a spread that gives standard error `se` (n = 4 rows).
    fn rows(m: f64, se: f64) -> Vec<f64> {
        // sd = se·√4 = 2·se; rows m ± a with sd(n−1) = a·√(4/3).
        let a = 2.0 * se / (4.0f64 / 3.0).sqrt();
        vec![m - a, m + a, m - a, m + a]
    }

    #[test]
    fn mean_and_standard_error_are_the_textbook_ones() {
        let (m, se) = mean_and_se(&[1.0, 2.0, 3.0, 4.0]);
        assert!((m - 2.5).abs() < 1e-12);
        // sd (n − 1) = √(5/3), se = sd/2.
        assert!((se - (5.0f64 / 3.0).sqrt() / 2.0).abs() < 1e-12);
        let (m, se) = mean_and_se(&rows(0.3, 0.01));
        assert!((m - 0.3).abs() < 1e-12 && (se - 0.01).abs() < 1e-12);
        assert_eq!(mean_and_se(&[0.7]), (0.7, 0.0));
    }

    #[test]
    fn pretraining_stops_once_the_window_gain_is_under_one_standard_error() {
        let mut c = cfg();
        c.pretrain_patience = 3;
        c.pretrain_min_gain_se = 1.0;
        let mut s = PretrainStopper::new(&c);
        // NLL falls by 0.1 per iteration with SE 0.05: the 3-iteration gain (0.3) is 6 SE.
        for (it, m) in [1.0, 0.9, 0.8, 0.7, 0.6].into_iter().enumerate() {
            assert_eq!(s.observe(&rows(m, 0.05)), IMPROVED, "iteration {it}");
        }
        // Now 0.01 per iteration: the window's gain shrinks to 0.21, 0.12, then 0.03 < 1 SE.
        assert_eq!(s.observe(&rows(0.59, 0.05)), IMPROVED);
        assert_eq!(s.observe(&rows(0.58, 0.05)), IMPROVED);
        // The last network is still the best one: kept, then stop.
        assert_eq!(s.observe(&rows(0.57, 0.05)), PretrainVerdict { improved: true, stop: true });
        // The same gain against a smaller noise (SE 0.005) keeps going; against k = 10 it stops.
        let replay = |k: f64, se_last: f64| {
            let mut c = c.clone();
            c.pretrain_min_gain_se = k;
            let mut s = PretrainStopper::new(&c);
            let ms = [1.0, 0.9, 0.8, 0.7, 0.6, 0.59, 0.58];
            ms.iter().for_each(|&m| assert!(!s.observe(&rows(m, 0.005)).stop));
            s.observe(&rows(0.57, se_last))
        };
        assert_eq!(replay(1.0, 0.005), IMPROVED);
        assert_eq!(replay(10.0, 0.005), PretrainVerdict { improved: true, stop: true });
    }

    #[test]
    fn pretraining_keeps_the_lowest_nll_and_never_stops_without_a_full_window() {
        let mut c = cfg();
        c.pretrain_patience = 3;
        c.pretrain_iters = 100;
        let mut s = PretrainStopper::new(&c);
        // A rise is not an improvement; the window (4 values) is not full before the 4th.
        assert_eq!(s.observe(&rows(1.0, 0.0)), IMPROVED);
        assert_eq!(s.observe(&rows(0.5, 0.0)), IMPROVED);
        assert_eq!(s.observe(&rows(0.6, 0.0)), CONTINUE);
        // 1.0 → 0.55: a gain, and a new best? No: 0.55 > 0.5.
        assert_eq!(s.observe(&rows(0.55, 0.0)), CONTINUE);
        // 0.5 → 0.7 over the window: the NLL rose, so it stops even with SE 0.
        assert_eq!(s.observe(&rows(0.7, 0.0)), PretrainVerdict { improved: false, stop: true });
        // A window as long as the run: never stops, however flat the NLL.
        c.pretrain_patience = 100;
        let mut s = PretrainStopper::new(&c);
        for it in 0..100 {
            assert!(!s.observe(&rows(0.5, 0.1)).stop, "iteration {it}");
        }
    }

    #[test]
    fn a_negative_or_non_finite_gain_threshold_is_refused() {
        for k in [-1.0, f64::NAN, f64::INFINITY] {
            let c = FitConfig { pretrain_min_gain_se: k, ..cfg() };
            let err = c.validate().expect_err("must be refused");
            assert!(err.to_string().contains("pretrain_min_gain_se"), "{err}");
        }
        FitConfig { pretrain_min_gain_se: 0.0, ..cfg() }.validate().unwrap();
    }

    fn state<'a>(
        prior: &'a [f64],
        confident: &'a [usize],
        labels: &'a [usize],
        pooled: bool,
    ) -> AdaptState<'a> {
        AdaptState {
            prior: Some(prior),
            confident,
            labels,
            n_target: 100,
            du_pooled: pooled,
            j_tu: 1.0,
        }
    }

    #[test]
    fn adaptation_stops_once_prior_labels_and_pooling_have_settled() {
        let mut c = cfg();
        c.adapt_stop = AdaptStopConfig {
            enabled: true,
            window: 5,
            tol_prior: 0.01,
            tol_labels: 0.01,
            min_iters: 0,
            tol_objective: None,
        };
        let mut s = AdaptStopper::new(&c).unwrap();
        let rows: Vec<usize> = (0..90).collect();
        let labels = vec![1usize; 90];
        let p = [0.5, 0.5];
        // Not pooled yet: never stops, however still the state.
        for it in 0..10 {
            assert!(!s.observe(it, &state(&p, &rows, &labels, false)));
        }
        // Pooled from iteration 10: W iterations later it may stop.
        let mut stopped_at = None;
        for it in 10..30 {
            if s.observe(it, &state(&p, &rows, &labels, true)) {
                stopped_at = Some(it);
                break;
            }
        }
        assert_eq!(stopped_at, Some(15));
    }

    #[test]
    fn moving_prior_or_labels_keep_adaptation_going_and_off_switch_disables() {
        let mut c = cfg();
        c.adapt_stop = AdaptStopConfig {
            enabled: true,
            window: 3,
            tol_prior: 0.01,
            tol_labels: 0.01,
            min_iters: 0,
            tol_objective: None,
        };
        let mut s = AdaptStopper::new(&c).unwrap();
        let rows: Vec<usize> = (0..90).collect();
        for it in 0..40 {
            // The prior drifts by 0.01 per iteration in ℓ1 (0.03 over the window).
            let a = 0.3 + 0.005 * it as f64;
            let p = [a, 1.0 - a];
            assert!(!s.observe(it, &state(&p, &rows, &vec![0; 90], true)));
        }
        let mut s = AdaptStopper::new(&c).unwrap();
        for it in 0..40 {
            // Two rows change label every iteration (2% > 1%).
            let labels: Vec<usize> = (0..90).map(|i| usize::from(i < 2 * (it % 2 + 1))).collect();
            assert!(!s.observe(it, &state(&[0.5, 0.5], &rows, &labels, true)));
        }
        c.adapt_stop.enabled = false;
        assert!(AdaptStopper::new(&c).is_none());
        c.adapt_stop.enabled = true;
        c.method = crate::config::MethodKind::Source;
        assert!(AdaptStopper::new(&c).is_none());
        c.method = crate::config::MethodKind::Dann;
        assert!(AdaptStopper::new(&c).is_none());
        c.method = crate::config::MethodKind::MmdClasswise;
        assert!(AdaptStopper::new(&c).is_some(), "the ablation's mmd-classwise trains as MUL");
    }
    #[test]
    fn a_set_objective_tolerance_waits_for_j_tu_to_settle() {
        let mut c = cfg();
        c.adapt_stop = AdaptStopConfig {
            enabled: true,
            window: 3,
            tol_prior: 0.01,
            tol_labels: 0.01,
            min_iters: 0,
            tol_objective: Some(0.05),
        };
        let rows: Vec<usize> = (0..90).collect();
        let labels = vec![1usize; 90];
        let p = [0.5, 0.5];
        // Frozen prior and labels, J_TU falling 10% per iteration until iteration 20, then flat.
        let j_at = |it: usize| 0.9f64.powi(it.min(20) as i32);
        let run = |c: &FitConfig| {
            let mut s = AdaptStopper::new(c).unwrap();
            (0..60).find(|&it| {
                s.observe(it, &AdaptState { j_tu: j_at(it), ..state(&p, &rows, &labels, true) })
            })
        };
        // Without ρ the frozen state stops at the first full window; with ρ = 5% only once the
        // window lies on the flat part (iteration 20 + W).
        assert_eq!(run(&cfg_with(&c, None)), Some(3));
        assert_eq!(run(&c), Some(23));
        // A rising J_TU is a change too.
        let mut s = AdaptStopper::new(&c).unwrap();
        let rising = (0..40).any(|it| {
            s.observe(
                it,
                &AdaptState { j_tu: 1.1f64.powi(it as i32), ..state(&p, &rows, &labels, true) },
            )
        });
        assert!(!rising);
        for bad in [-0.1, f64::NAN, f64::INFINITY] {
            let err = cfg_with(&c, Some(bad)).validate().expect_err("must be refused");
            assert!(err.to_string().contains("tol_objective"), "{err}");
        }
    }

    fn cfg_with(c: &FitConfig, rho: Option<f64>) -> FitConfig {
        let mut c = c.clone();
        c.adapt_stop.tol_objective = rho;
        c
    }
}
