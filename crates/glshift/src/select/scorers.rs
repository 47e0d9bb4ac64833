//! Label-free scorers of a fitted candidate: each reads source labels and
//! unlabelled target outputs only, never a target label. **Higher is better** for every
//! function here, so that a selection takes the arg-max.
//!
//! - [`iwcv_label_shift`]: importance-weighted validation under label shift. The target risk is
//!   `R_t = E_s[w(y)·ℓ(x, y)]` with `w(y) = pᵗ(y)/pˢ(y)`; on the source hold-out (rows the
//!   network never trained on) `R̂ = Σ_i w(y_i)·ℓ_i / Σ_i w(y_i)` with ℓ = −ln p(y_i|x_i). The
//!   covariate-shift form of IWCV weights by p_t(x)/p_s(x) instead, wrong under label shift.
//!   Returns `−R̂`.
//! - [`dev`]: deep embedded validation (You et al., ICML 2019) from per-row hold-out losses ℓ_i
//!   and density-ratio weights w_i (e.g. from a domain classifier): with the control variate
//!   η = −Cov(wℓ, w)/Var(w), `R̂ = mean(wℓ) + η·mean(w) − η`. The normalised form first divides
//!   w by its mean. Returns `−R̂`.
//! - [`snd`]: soft neighbourhood density (Saito et al., ICCV 2021): rows of the target
//!   probabilities L2-normalised, similarities `s_ij = p̄_iᵀp̄_j` (j ≠ i), `a_i = softmax_j(s_ij/T)`,
//!   score = mean_i H(a_i). Dense neighbourhoods (clustered predictions) score high.
//! - [`neg_entropy`]: `−(1/n) Σ_i H(p_i)` of the target probabilities (confident predictions
//!   score high; information-maximisation without its diversity term).

use ndarray::{Array2, ArrayView2, Axis};

use crate::{Error, Result};

fn check_rows(p: ArrayView2<f32>, what: &str) -> Result<()> {
    if p.nrows() == 0 || p.ncols() == 0 {
        return Err(Error::bad_data(what, "no rows or no classes"));
    }
    if p.iter().any(|v| !v.is_finite() || *v < 0.0) {
        return Err(Error::bad_data(what, "probabilities must be finite and >= 0"));
    }
    Ok(())
}

/// `−R̂` of label-shift IWCV: `probs` n_h × c of the source hold-out, `labels` their classes,
/// `w` the class weights pᵗ/pˢ (length c, ≥ 0, not all zero on the hold-out's labels).
pub fn iwcv_label_shift(probs: ArrayView2<f32>, labels: &[usize], w: &[f64]) -> Result<f64> {
    check_rows(probs, "hold-out probabilities")?;
    let c = probs.ncols();
    if labels.len() != probs.nrows() || w.len() != c {
        return Err(Error::Shape {
            what: "IWCV labels / weights".into(),
            expected: format!("{} labels and {c} weights", probs.nrows()),
            found: format!("{} labels and {} weights", labels.len(), w.len()),
        });
    }
    if labels.iter().any(|&y| y >= c) || w.iter().any(|v| !v.is_finite() || *v < 0.0) {
        return Err(Error::bad_data(
            "IWCV inputs",
            "labels must be < c and weights finite and >= 0",
        ));
    }
    let (mut num, mut den) = (0.0, 0.0);
    for (row, &y) in probs.rows().into_iter().zip(labels) {
        num += w[y] * -(row[y].max(1e-30) as f64).ln();
        den += w[y];
    }
    if den <= 0.0 {
        return Err(Error::bad_data("IWCV weights", "every hold-out row has weight 0"));
    }
    Ok(-num / den)
}

/// `−R̂` of deep embedded validation from per-row `losses` and density-ratio `weights` (same
/// length ≥ 2). With constant weights the control variate vanishes and R̂ is the weighted mean.
pub fn dev(losses: &[f64], weights: &[f64], normalise: bool) -> Result<f64> {
    let n = losses.len();
    if n < 2 || weights.len() != n {
        return Err(Error::Shape {
            what: "DEV losses vs weights".into(),
            expected: "equal lengths >= 2".into(),
            found: format!("{n} and {}", weights.len()),
        });
    }
    if losses.iter().chain(weights).any(|v| !v.is_finite()) || weights.iter().any(|&v| v < 0.0) {
        return Err(Error::bad_data(
            "DEV inputs",
            "losses and weights must be finite, weights >= 0",
        ));
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let scale = if normalise { mean(weights) } else { 1.0 };
    if scale <= 0.0 {
        return Err(Error::bad_data("DEV weights", "all weights are 0"));
    }
    let w: Vec<f64> = weights.iter().map(|v| v / scale).collect();
    let wl: Vec<f64> = w.iter().zip(losses).map(|(a, b)| a * b).collect();
    let (mw, mwl) = (mean(&w), mean(&wl));
    let var_w = w.iter().map(|v| (v - mw).powi(2)).sum::<f64>() / (n - 1) as f64;
    let cov = wl.iter().zip(&w).map(|(a, b)| (a - mwl) * (b - mw)).sum::<f64>() / (n - 1) as f64;
    let eta = if var_w > 0.0 { -cov / var_w } else { 0.0 };
    Ok(-(mwl + eta * mw - eta))
}

/// Soft neighbourhood density of target probabilities (n_t × c, n_t ≥ 2) at temperature `t`
/// (the paper uses 0.05).
pub fn snd(probs: ArrayView2<f32>, t: f64) -> Result<f64> {
    check_rows(probs, "target probabilities")?;
    let n = probs.nrows();
    if n < 2 || !(t.is_finite() && t > 0.0) {
        return Err(Error::bad_data("SND", "needs >= 2 rows and a temperature > 0"));
    }
    let mut unit: Array2<f64> = probs.mapv(f64::from);
    for mut r in unit.axis_iter_mut(Axis(0)) {
        let norm = r.dot(&r).sqrt().max(1e-30);
        r.mapv_inplace(|v| v / norm);
    }
    let sim = unit.dot(&unit.t());
    let mut total = 0.0;
    for (i, row) in sim.rows().into_iter().enumerate() {
        let logits: Vec<f64> =
            row.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, &s)| s / t).collect();
        let max = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = logits.iter().map(|l| (l - max).exp()).sum();
        total -= logits
            .iter()
            .map(|l| {
                let a = (l - max).exp() / z;
                if a > 0.0 {
                    a * a.ln()
                } else {
                    0.0
                }
            })
            .sum::<f64>();
    }
    Ok(total / n as f64)
}

/// `−(1/n) Σ_i H(p_i)` of target probabilities (n_t × c).
pub fn neg_entropy(probs: ArrayView2<f32>) -> Result<f64> {
    check_rows(probs, "target probabilities")?;
    let h: f64 =
        probs.iter().map(|&p| if p > 0.0 { -(p as f64) * (p as f64).ln() } else { 0.0 }).sum();
    Ok(-h / probs.nrows() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn iwcv_with_unit_weights_is_minus_the_mean_nll_and_weights_reweight_classes() {
        let p = array![[0.9f32, 0.1], [0.2, 0.8], [0.6, 0.4]];
        let y = [0, 1, 1];
        let nll = [-(0.9f64).ln(), -(0.8f64).ln(), -(0.4f64).ln()];
        let plain = iwcv_label_shift(p.view(), &y, &[1.0, 1.0]).unwrap();
        assert!((plain + nll.iter().sum::<f64>() / 3.0).abs() < 1e-6);
        // All weight on class 0: only row 0 counts.
        let only0 = iwcv_label_shift(p.view(), &y, &[2.0, 0.0]).unwrap();
        assert!((only0 + nll[0]).abs() < 1e-6);
        assert!(iwcv_label_shift(p.view(), &y, &[0.0, 0.0]).is_err());
        assert!(iwcv_label_shift(p.view(), &[0, 1], &[1.0, 1.0]).is_err());
    }

    #[test]
    fn dev_matches_its_formula_and_reduces_to_the_mean_for_constant_weights() {
        let l = [1.0, 2.0, 4.0];
        assert!((dev(&l, &[1.0; 3], false).unwrap() + 7.0 / 3.0).abs() < 1e-12);
        // By hand: w = (1, 2, 3), wℓ = (1, 4, 12), means 2 and 17/3; Var(w) = 1,
        // Cov(wℓ, w) = ((1−17/3)(−1) + (12−17/3)(1)) / 2 = 11/2; η = −5.5; R̂ = 17/3 − 5.5·2 + 5.5.
        let r = 17.0 / 3.0 - 5.5 * 2.0 + 5.5;
        assert!((dev(&l, &[1.0, 2.0, 3.0], false).unwrap() + r).abs() < 1e-12);
        // Normalising the weights makes DEV invariant to their scale.
        let a = dev(&l, &[1.0, 2.0, 3.0], true).unwrap();
        let b = dev(&l, &[10.0, 20.0, 30.0], true).unwrap();
        assert!((a - b).abs() < 1e-12);
        assert!(dev(&l, &[1.0, 2.0], false).is_err());
    }

    #[test]
    fn snd_is_highest_for_identical_predictions_and_entropy_is_zero_for_one_hot_rows() {
        let same = Array2::<f32>::from_shape_fn((5, 3), |(_, k)| [0.7, 0.2, 0.1][k]);
        assert!((snd(same.view(), 0.05).unwrap() - 4f64.ln()).abs() < 1e-9);
        let spread = array![
            [1.0f32, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, 0.0, 1.0],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0]
        ];
        assert!(snd(spread.view(), 0.05).unwrap() < snd(same.view(), 0.05).unwrap());
        assert_eq!(neg_entropy(spread.view()).unwrap(), 0.0);
        let uniform = Array2::<f32>::from_elem((4, 4), 0.25);
        assert!((neg_entropy(uniform.view()).unwrap() + 4f64.ln()).abs() < 1e-6);
        // Row order does not matter to any target scorer.
        let rev = spread.slice(ndarray::s![..;-1, ..]).to_owned();
        assert!((snd(rev.view(), 0.05).unwrap() - snd(spread.view(), 0.05).unwrap()).abs() < 1e-12);
    }
}
