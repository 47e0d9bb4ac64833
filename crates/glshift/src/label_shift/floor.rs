//! Floor on the estimated target prior (pitfall 3).

use super::ShiftEstimate;

/// Sets estimated target-prior entries below `floor` to 0, renormalises the rest to sum 1 and
/// recomputes the weights as `w_k = p̂ᵗ_k / pˢ_k` (0 where `pˢ_k = 0`).
///
/// Why: once target rows are predicted into a class absent from the target, BBSE gives that
/// class a small `p̂ᵗ > 0`; the weighted losses then pull the source class onto those rows and
/// the drift reinforces itself. Zeroing small estimates cuts the loop (0.03 was used in the
/// reference measurements, not tuned).
///
/// Never zeroes everything: if every entry is below the floor (e.g. `floor > 1/c`), the floor
/// says nothing about which classes are absent, an all-zero prior is not a distribution and
/// all-zero weights would erase every source row, so `est` is returned unchanged. A `floor`
/// ≤ 0 or NaN zeroes nothing. `objective`, `warnings` and `iterations` are copied from `est` (the QP optimum before the
/// floor). If `source_prior` does not have the length of `est`, or has a zero where a kept
/// class is, the kept weights are rescaled as `w_k / s` instead (`s` = kept prior mass),
/// which is the same value when `est.target_prior = est.weights ⊙ pˢ`.
pub fn apply_prior_floor(est: &ShiftEstimate, source_prior: &[f64], floor: f64) -> ShiftEstimate {
    let below = |p: f64| p.partial_cmp(&floor) == Some(std::cmp::Ordering::Less);
    let keep: Vec<bool> = est.target_prior.iter().map(|&p| !below(p)).collect();
    let s: f64 = est.target_prior.iter().zip(&keep).filter(|(_, &k)| k).map(|(p, _)| p).sum();
    if !(keep.iter().any(|&k| k) && s.is_finite() && s > 0.0) {
        return est.clone();
    }
    let target_prior: Vec<f64> =
        est.target_prior.iter().zip(&keep).map(|(&p, &k)| if k { p / s } else { 0.0 }).collect();
    let same_len =
        source_prior.len() == target_prior.len() && est.weights.len() == target_prior.len();
    let weights = (0..target_prior.len())
        .map(|k| match (keep[k], same_len) {
            (false, _) => 0.0,
            (true, true) if source_prior[k] > 0.0 => target_prior[k] / source_prior[k],
            (true, true) if target_prior[k] == 0.0 => 0.0,
            (true, _) => est.weights.get(k).map_or(0.0, |w| w / s),
        })
        .collect();
    ShiftEstimate { weights, target_prior, ..est.clone() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(prior: &[f64], ps: &[f64]) -> ShiftEstimate {
        let weights = prior.iter().zip(ps).map(|(p, s)| p / s).collect();
        ShiftEstimate {
            weights,
            target_prior: prior.to_vec(),
            objective: Some(0.5),
            ..ShiftEstimate::default()
        }
    }

    #[test]
    fn floor_zeroes_small_classes_and_renormalises() {
        let ps = [0.25, 0.25, 0.2, 0.3];
        let e = est(&[0.5, 0.02, 0.38, 0.1], &ps);
        let f = apply_prior_floor(&e, &ps, 0.03);
        assert_eq!(f.target_prior[1], 0.0);
        assert_eq!(f.weights[1], 0.0);
        assert!((f.target_prior.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!((f.target_prior[0] - 0.5 / 0.98).abs() < 1e-12);
        let wp: f64 = f.weights.iter().zip(&ps).map(|(w, p)| w * p).sum();
        assert!((wp - 1.0).abs() < 1e-12);
        for ((w, p), t) in f.weights.iter().zip(ps).zip(&f.target_prior) {
            assert!((w * p - t).abs() < 1e-12);
        }
        assert_eq!(f.objective, Some(0.5));
    }

    #[test]
    fn floor_leaves_estimate_unchanged_when_all_entries_are_below() {
        let ps = [0.25; 4];
        let e = est(&[0.25; 4], &ps);
        let f = apply_prior_floor(&e, &ps, 0.3);
        assert_eq!(f.target_prior, e.target_prior);
        assert_eq!(f.weights, e.weights);
        let g = apply_prior_floor(&e, &ps, f64::NAN);
        assert_eq!(g.target_prior, e.target_prior);
    }

    #[test]
    fn floor_with_mismatched_source_prior_rescales_weights_without_nan() {
        let ps = [0.5, 0.3, 0.2];
        let e = est(&[0.6, 0.39, 0.01], &ps);
        let f = apply_prior_floor(&e, &[0.5, 0.5], 0.03);
        assert!(f.weights.iter().all(|w| w.is_finite()));
        assert!((f.weights[0] - 0.6 / 0.99 / 0.5).abs() < 1e-12);
        assert_eq!(f.weights[2], 0.0);
    }
}

/// Keeps the estimate on a fixed support of present classes: classes outside `support` get
/// p̂ᵗ = 0, classes inside get at least `floor`, then p̂ᵗ is renormalised and `w_k = p̂ᵗ_k / pˢ_k`.
///
/// Why: BBSE assumes a fixed black-box predictor. Re-estimated every iteration with a network
/// that is adapting, its source hold-out confusion becomes diagonal and p̂ᵗ collapses onto the
/// network's own target predictions; a present class that the network stops predicting is then
/// floored to 0, its importance weight drops it from the cross-entropy and the drift feeds
/// itself. Deciding *which* classes are absent once, from the pre-trained network, and only
/// re-estimating the proportions of the others, cuts that loop in both directions.
pub fn restrict_to_support(
    est: &ShiftEstimate,
    source_prior: &[f64],
    support: &[bool],
    floor: f64,
) -> ShiftEstimate {
    let raw: Vec<f64> = est
        .target_prior
        .iter()
        .zip(support)
        .map(|(&p, &keep)| if keep { p.max(floor.max(0.0)) } else { 0.0 })
        .collect();
    let s: f64 = raw.iter().sum();
    if !(s.is_finite() && s > 0.0) || raw.len() != source_prior.len() {
        return est.clone();
    }
    let target_prior: Vec<f64> = raw.iter().map(|p| p / s).collect();
    let weights = target_prior
        .iter()
        .zip(source_prior)
        .map(|(&p, &ps)| if ps > 0.0 { p / ps } else { 0.0 })
        .collect();
    ShiftEstimate { weights, target_prior, ..est.clone() }
}

#[cfg(test)]
mod support_tests {
    use super::*;

    #[test]
    fn support_keeps_present_classes_at_least_at_the_floor_and_zeroes_the_rest() {
        let est = ShiftEstimate {
            weights: vec![0.0; 4],
            target_prior: vec![0.6, 0.0, 0.3, 0.1],
            ..ShiftEstimate::default()
        };
        let ps = [0.25; 4];
        let out = restrict_to_support(&est, &ps, &[true, true, true, false], 0.05);
        assert_eq!(out.target_prior[3], 0.0);
        assert!(out.target_prior[1] > 0.04, "{:?}", out.target_prior);
        assert!((out.target_prior.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        for k in 0..4 {
            assert!((out.weights[k] - out.target_prior[k] / 0.25).abs() < 1e-12);
        }
    }
}
