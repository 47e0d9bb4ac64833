//! Temperature scaling (Guo et al., ICML 2017) fitted on labelled source hold-out rows.
//!
//! A network trained to near-zero cross-entropy outputs saturated probabilities: a confidence
//! threshold τ then selects every row and a soft confusion matrix degenerates to a hard one.
//! Alexandari et al. (ICML 2020) show that calibrated probabilities are what label-shift
//! estimation needs. One scalar β = 1/T is fitted by minimising the hold-out negative
//! log-likelihood of softmax(β·logits); the NLL is convex in β, so a golden-section search on a
//! bracket is exact enough and needs no gradient.

use ndarray::{s, Array2, ArrayView2};

use crate::{Error, Result};

const BETA_MIN: f64 = 0.02;
const BETA_MAX: f64 = 50.0;

/// Mean negative log-likelihood of `labels` under softmax(β·logits).
pub fn nll_at(logits: ArrayView2<f32>, labels: &[usize], beta: f64) -> f64 {
    nll_rows(logits, labels, beta).iter().sum::<f64>() / labels.len().max(1) as f64
}

/// Negative log-likelihood of each row's label under softmax(β·logits) (n values; the rows of
/// `logits` paired with `labels`).
pub fn nll_rows(logits: ArrayView2<f32>, labels: &[usize], beta: f64) -> Vec<f64> {
    // Split over threads where there are many rows; the same bits (`nn::rows`).
    let n = logits.nrows().min(labels.len());
    crate::nn::rows::map_rows_of(logits.slice(s![..n, ..]), |i, row| {
        let max = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(beta * v as f64));
        let lse = row.iter().map(|&v| (beta * v as f64 - max).exp()).sum::<f64>().ln() + max;
        lse - beta * row[labels[i]] as f64
    })
}

/// Fits the temperature T = 1/β on labelled rows; returns T in [1/50, 50].
pub fn fit_temperature(logits: ArrayView2<f32>, labels: &[usize]) -> Result<f64> {
    if logits.nrows() != labels.len() || labels.is_empty() {
        return Err(Error::Shape {
            what: "calibration logits vs labels".into(),
            expected: labels.len().to_string(),
            found: logits.nrows().to_string(),
        });
    }
    if let Some(&bad) = labels.iter().find(|&&y| y >= logits.ncols()) {
        return Err(Error::bad_data("calibration labels", format!("class {bad} out of range")));
    }
    // Golden-section search on ln β (the NLL stays unimodal under this monotone change).
    let (mut a, mut b) = (BETA_MIN.ln(), BETA_MAX.ln());
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let f = |lb: f64| nll_at(logits, labels, lb.exp());
    let (mut x1, mut x2) = (b - g * (b - a), a + g * (b - a));
    let (mut f1, mut f2) = (f(x1), f(x2));
    for _ in 0..60 {
        if f1 <= f2 {
            b = x2;
            x2 = x1;
            f2 = f1;
            x1 = b - g * (b - a);
            f1 = f(x1);
        } else {
            a = x1;
            x1 = x2;
            f1 = f2;
            x2 = a + g * (b - a);
            f2 = f(x2);
        }
    }
    let beta = ((a + b) / 2.0).exp();
    if !beta.is_finite() {
        return Err(Error::numerical("temperature scaling", "non-finite temperature"));
    }
    Ok(1.0 / beta)
}

/// softmax(logits / T), row-wise and numerically stable.
pub fn softmax_with_temperature(logits: ArrayView2<f32>, temperature: f64) -> Array2<f32> {
    let mut p = logits.to_owned();
    crate::nn::rows::for_each_row(&mut p, |_, row| {
        row.iter_mut().for_each(|v| *v = (*v as f64 / temperature) as f32);
        crate::nn::softmax_in_place(row);
    });
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn overconfident_logits_get_a_temperature_above_one() {
        // Logits scaled ×10 from a calibrated model with 2 errors in 8 rows: T must come back > 1.
        let logits = array![
            [3.0f32, 0.0],
            [3.0, 0.0],
            [3.0, 0.0],
            [0.0, 3.0],
            [0.0, 3.0],
            [0.0, 3.0],
            [3.0, 0.0],
            [0.0, 3.0]
        ] * 10.0;
        let labels = [0, 0, 0, 1, 1, 1, 1, 0];
        let t = fit_temperature(logits.view(), &labels).unwrap();
        assert!(t > 5.0, "T = {t}");
        // The fitted T is a minimum of the NLL.
        let at = |t: f64| nll_at(logits.view(), &labels, 1.0 / t);
        assert!(at(t) <= at(t * 1.05) + 1e-12 && at(t) <= at(t / 1.05) + 1e-12);
    }

    #[test]
    fn temperature_matches_a_brute_force_grid_minimum() {
        let logits = array![
            [2.0f32, 1.0, 0.0],
            [0.5, 1.5, 0.2],
            [0.1, 0.3, 2.5],
            [1.0, 1.1, 0.9],
            [2.0, 0.0, 1.9]
        ];
        let labels = [0, 1, 2, 1, 2];
        let t = fit_temperature(logits.view(), &labels).unwrap();
        let best = (1..=5000)
            .map(|i| 0.01 * i as f64)
            .min_by(|&a, &b| {
                nll_at(logits.view(), &labels, 1.0 / a).total_cmp(&nll_at(
                    logits.view(),
                    &labels,
                    1.0 / b,
                ))
            })
            .unwrap();
        assert!((t - best).abs() < 0.02, "golden {t} vs grid {best}");
    }

    #[test]
    fn tempered_softmax_rows_sum_to_one_and_soften() {
        let logits = array![[10.0f32, 0.0, -5.0]];
        let p1 = softmax_with_temperature(logits.view(), 1.0);
        let p4 = softmax_with_temperature(logits.view(), 4.0);
        assert!((p4.sum() - 1.0).abs() < 1e-6);
        assert!(p4[[0, 0]] < p1[[0, 0]]);
    }

    #[test]
    fn mismatched_or_bad_labels_are_errors() {
        let logits = array![[1.0f32, 0.0]];
        assert!(fit_temperature(logits.view(), &[0, 1]).is_err());
        assert!(fit_temperature(logits.view(), &[2]).is_err());
    }
}
