//! Label-free stopping rules of the two stages (issue 14, "fast enough"). Neither reads a target
//! label; both only look at quantities the loop already computes.
//!
//! **Pre-training** (source labels only): with `b` the best source hold-out NLL so far, an
//! iteration improves when its NLL is `< b·(1 − ρ)` (ρ = `pretrain_min_rel_improvement`);
//! pre-training stops after `pretrain_patience` iterations without an improvement and keeps the
//! network with the lowest NLL. ρ = 0 is the plain patience rule (every decrease counts), which
//! on Office-Caltech10 never fires: the hold-out NLL keeps shrinking by tiny amounts for all
//! 500 iterations.
//!
//! **Adaptation** (MUL): with `s_t` the state at iteration t — the estimated target prior p̂ᵗ_t
//! and each target row's pseudo-label (its class when τ-confident, "none" otherwise) — the
//! adaptation stops after iteration t once
//!
//! ```text
//! ‖p̂ᵗ_t − p̂ᵗ_{t−W}‖₁ ≤ tol_prior,   #{i : ŷ_i,t ≠ ŷ_i,t−W} / n_t ≤ tol_labels,
//! and J_DU has pooled the target rows since t − W or earlier (when J_DU is on)
//! ```
//!
//! (W = `adapt_stop.window`), and never before `adapt_stop.min_iters`. These are the quantities
//! that drive MUL's updates (w and p̂ᵗ weight the CE and J_TU; the pseudo-labels pick the rows of
//! J_TU and J_DU): once they no longer move, further steps only sharpen an unchanged alignment.

use crate::methods::config::{AdaptStopConfig, FitConfig};

/// The pre-training rule: tracks the best hold-out NLL and says when to stop.
pub(super) struct PretrainStopper {
    min_rel: f64,
    patience: usize,
    best: Option<(f64, usize)>,
}

impl PretrainStopper {
    pub fn new(cfg: &FitConfig) -> Self {
        PretrainStopper { min_rel: cfg.pretrain_min_rel_improvement, patience: cfg.pretrain_patience, best: None }
    }

    /// Records the NLL of iteration `it`. Returns `Improved` when the caller should keep this
    /// network as the best, `Stop` when the patience has run out.
    pub fn observe(&mut self, it: usize, nll: f64) -> PretrainVerdict {
        match self.best {
            Some((b, at)) if !(nll < b * (1.0 - self.min_rel)) => {
                if it - at >= self.patience {
                    PretrainVerdict::Stop
                } else {
                    PretrainVerdict::Continue
                }
            }
            _ => {
                self.best = Some((nll, it));
                PretrainVerdict::Improved
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PretrainVerdict {
    Improved,
    Continue,
    Stop,
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
}

/// The adaptation rule; see the module docs.
pub(super) struct AdaptStopper {
    cfg: AdaptStopConfig,
    needs_pooling: bool,
    /// States of the last W + 1 iterations (prior, per-row label or `u32::MAX`), oldest first.
    trace: std::collections::VecDeque<(Option<Vec<f64>>, Vec<u32>)>,
    pooled_since: Option<usize>,
}

impl AdaptStopper {
    /// `None` when the rule does not apply (turned off, or not MUL).
    pub fn new(cfg: &FitConfig) -> Option<Self> {
        let applies = cfg.adapt_stop.enabled && cfg.method == crate::methods::config::MethodKind::Mul;
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
        self.trace.push_back((s.prior.map(<[f64]>::to_vec), rows));
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
        pooled_long_enough && prior_move <= self.cfg.tol_prior && label_share <= self.cfg.tol_labels
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> FitConfig {
        FitConfig::default()
    }

    #[test]
    fn pretraining_stops_after_patience_without_relative_improvement() {
        let mut c = cfg();
        c.pretrain_patience = 3;
        c.pretrain_min_rel_improvement = 0.01;
        let mut s = PretrainStopper::new(&c);
        assert_eq!(s.observe(0, 1.0), PretrainVerdict::Improved);
        assert_eq!(s.observe(1, 0.5), PretrainVerdict::Improved);
        // 0.499 is below 0.5 but not by 1%: no improvement.
        assert_eq!(s.observe(2, 0.499), PretrainVerdict::Continue);
        assert_eq!(s.observe(3, 0.498), PretrainVerdict::Continue);
        assert_eq!(s.observe(4, 0.497), PretrainVerdict::Stop);
        // With ρ = 0 every decrease counts (the rule before issue 14).
        c.pretrain_min_rel_improvement = 0.0;
        let mut s = PretrainStopper::new(&c);
        for (it, v) in [1.0, 0.5, 0.499, 0.498, 0.497].into_iter().enumerate() {
            assert_eq!(s.observe(it, v), PretrainVerdict::Improved);
        }
    }

    fn state<'a>(prior: &'a [f64], confident: &'a [usize], labels: &'a [usize], pooled: bool) -> AdaptState<'a> {
        AdaptState { prior: Some(prior), confident, labels, n_target: 100, du_pooled: pooled }
    }

    #[test]
    fn adaptation_stops_once_prior_labels_and_pooling_have_settled() {
        let mut c = cfg();
        c.adapt_stop = AdaptStopConfig { enabled: true, window: 5, tol_prior: 0.01, tol_labels: 0.01, min_iters: 0 };
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
        c.adapt_stop = AdaptStopConfig { enabled: true, window: 3, tol_prior: 0.01, tol_labels: 0.01, min_iters: 0 };
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
        c.method = crate::methods::config::MethodKind::Source;
        assert!(AdaptStopper::new(&c).is_none());
    }
}
