//! MCC — Jin, Wang, Long & Wang, "Minimum Class Confusion for Versatile Domain Adaptation",
//! ECCV 2020: the source CE plus λ·L_MCC, the class confusion of the target predictions. With
//! Ŷ = softmax(L_T / T) (n_t × c, temperature T), per-row weights from the predictions' entropy
//! H_i = −Σ_k Ŷ_ik log(Ŷ_ik + 10⁻⁵), w_i ∝ 1 + e^{−H_i} (constants of the backward pass, as
//! Transfer-Learning-Library's `MinimumClassConfusionLoss` detaches them), the class-correlation
//! matrix C = Ŷᵀ diag(w) Ŷ (c × c) normalised by its column sums C̃_jk = C_jk / Σ_j' C_j'k, and
//!
//!   L_MCC = (1/c) Σ_j Σ_{k≠j} C̃_jk.
//!
//! Because every row of Ŷ sums to 1, the column sum of C is s_k = Σ_i w_i Ŷ_ik and Σ_jk C̃_jk = c,
//! so L_MCC = 1 − (1/c) Σ_k a_k / s_k with a_k = Σ_i w_i Ŷ_ik² = C_kk; this form is what is
//! computed (in f64). It is 0 for one-hot predictions, 1 − 1/c for uniform ones, and does not
//! depend on the scale of w (the paper's n·w/Σw normalisation cancels). Gradient:
//!
//!   ∂L/∂Ŷ_ik = −(w_i / c)(2 Ŷ_ik / s_k − a_k / s_k²),  ∂L/∂L_T = (1/T)·softmax-backward(Ŷ, ∂L/∂Ŷ).
//!
//! Only the target logits receive a gradient (MCC has no term on Z or on the source). Here: the
//! term acts on this network's logits (F(Z)); T = 2.5 and λ = `baselines.trade_off` = 1, the
//! defaults of Transfer-Learning-Library's MCC script; trained as the other mini-batch baselines
//! (annealed SGD on sampled batches under `baselines.schedule = "paper"`), each batch's target
//! rows forming C.

use ndarray::{Array1, Array2, ArrayView1, ArrayView2};

use super::{softmax_backward, AdaptInputs, AdaptOutput, BaselineConfig, GRADIENT_NAME};
use crate::methods::method::{Method, StepOutput};
use crate::nn::softmax;
use crate::{Error, Real, Result};

/// The softmax temperature T of the target predictions.
pub const TEMPERATURE: f64 = 2.5;

/// L_MCC and its gradient wrt the target logits (n_t × c).
#[derive(Clone, Debug)]
pub struct MccLoss<T> {
    pub value: f64,
    pub grad_logits: Array2<T>,
}

/// The entropy weights w_i = 1 + e^{−H_i} of the rows of `probs` (n × c), H with the 10⁻⁵
/// inside the logarithm as in the reference code.
pub fn entropy_weights(probs: ArrayView2<f64>) -> Array1<f64> {
    probs
        .rows()
        .into_iter()
        .map(|r| 1.0 + (r.iter().map(|&p| p * (p + 1e-5).ln()).sum::<f64>()).exp())
        .collect()
}

/// Ŷ = softmax(logits / T) in f64.
fn tempered_probs<T: Real>(logits: ArrayView2<T>, temperature: f64) -> Array2<f64> {
    softmax(logits.mapv(|v| v.to_f64_() / temperature).view())
}

/// L_MCC of `logits` (n × c) with the row weights `w` held fixed (module docs), and its exact
/// gradient for those weights. Errors on an empty batch, fewer than 2 classes or a weight count
/// that is not n.
pub fn mcc_loss_with_weights<T: Real>(
    logits: ArrayView2<T>,
    w: ArrayView1<f64>,
    temperature: f64,
) -> Result<MccLoss<T>> {
    loss_of_probs(tempered_probs(logits, temperature).view(), w, temperature)
}

/// L_MCC of `logits` (n × c) with its entropy weights (module docs).
pub fn mcc_loss<T: Real>(logits: ArrayView2<T>, temperature: f64) -> Result<MccLoss<T>> {
    let p = tempered_probs(logits, temperature);
    loss_of_probs(p.view(), entropy_weights(p.view()).view(), temperature)
}

/// [`mcc_loss_with_weights`] from Ŷ = softmax(logits / T) (n × c), computed once by the caller.
fn loss_of_probs<T: Real>(
    p: ArrayView2<f64>,
    w: ArrayView1<f64>,
    temperature: f64,
) -> Result<MccLoss<T>> {
    let (n, c) = p.dim();
    if n == 0 || c < 2 {
        return Err(Error::param(
            "mcc",
            format!("{n} × {c}"),
            "needs at least one target row and two classes",
        ));
    }
    if w.len() != n {
        return Err(Error::Shape {
            what: "MCC row weights".into(),
            expected: n.to_string(),
            found: w.len().to_string(),
        });
    }
    let s: Array1<f64> = p.t().dot(&w);
    let a: Array1<f64> = (&p * &p).t().dot(&w);
    let kept = |k: usize| s[k] > f64::MIN_POSITIVE;
    let value = 1.0 - (0..c).filter(|&k| kept(k)).map(|k| a[k] / s[k]).sum::<f64>() / c as f64;
    let dp = Array2::from_shape_fn((n, c), |(i, k)| {
        if kept(k) {
            -(w[i] / c as f64) * (2.0 * p[[i, k]] / s[k] - a[k] / (s[k] * s[k]))
        } else {
            0.0
        }
    });
    let grad = softmax_backward(p, dp.view()) / temperature;
    Ok(MccLoss { value, grad_logits: grad.mapv(T::from_f64_) })
}

/// `mcc` (see the module documentation).
#[derive(Clone, Debug)]
pub struct Mcc {
    trade_off: f64,
}

impl Mcc {
    pub fn new(cfg: &BaselineConfig) -> Self {
        Mcc { trade_off: cfg.trade_off }
    }

    /// The term with the entropy weights `w` of the target rows given (the tests hold them, as
    /// the backward pass does); [`Mcc::compute`] uses those of the current logits.
    #[cfg(test)]
    pub(crate) fn compute_with_weights<T: Real>(
        &mut self,
        inp: &AdaptInputs<T>,
        w: ArrayView1<f64>,
    ) -> Result<AdaptOutput<T>> {
        Ok(self.output(inp, mcc_loss_with_weights(inp.logits_t, w, TEMPERATURE)?))
    }

    pub fn compute<T: Real>(&mut self, inp: &AdaptInputs<T>) -> Result<AdaptOutput<T>> {
        Ok(self.output(inp, mcc_loss(inp.logits_t, TEMPERATURE)?))
    }

    /// λ·L_MCC with its gradient on the target logits; none on Z.
    fn output<T: Real>(&self, inp: &AdaptInputs<T>, r: MccLoss<T>) -> AdaptOutput<T> {
        let l = T::from_f64_(self.trade_off);
        AdaptOutput {
            value: r.value,
            objective: self.trade_off * r.value,
            lambda: self.trade_off,
            grad_zs: Array2::zeros(inp.zs.raw_dim()),
            grad_zt: Array2::zeros(inp.zt.raw_dim()),
            grad_logits_s: None,
            grad_logits_t: Some(r.grad_logits.mapv(|g| g * l)),
            class_weights: None,
        }
    }
}

impl Method for Mcc {
    fn step(&mut self, inp: &AdaptInputs) -> Result<StepOutput> {
        self.compute(inp).map(StepOutput::from)
    }

    fn gradient_name(&self) -> &'static str {
        GRADIENT_NAME
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::baselines::tests::fd;
    use crate::nn::test_support::random_matrix;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn logits(seed: u64, n: usize, c: usize) -> Array2<f64> {
        random_matrix(n, c, &mut ChaCha8Rng::seed_from_u64(seed)) * 3.0
    }

    /// The paper's definition computed literally: C = Ŷᵀ diag(w) Ŷ, columns normalised,
    /// (Σ C̃ − tr C̃) / c.
    fn literal(l: &Array2<f64>, w: &Array1<f64>) -> f64 {
        let p = tempered_probs(l.view(), TEMPERATURE);
        let wp = &p * &w.view().insert_axis(ndarray::Axis(1));
        let cm = wp.t().dot(&p);
        let col = cm.sum_axis(ndarray::Axis(0));
        let norm = &cm / &col.view().insert_axis(ndarray::Axis(0));
        (norm.sum() - norm.diag().sum()) / l.ncols() as f64
    }

    #[test]
    fn value_equals_the_papers_confusion_matrix_form() {
        for seed in 0..5 {
            let l = logits(seed, 9, 4);
            let w = entropy_weights(tempered_probs(l.view(), TEMPERATURE).view());
            let got = mcc_loss::<f64>(l.view(), TEMPERATURE).unwrap().value;
            assert!(
                (got - literal(&l, &w)).abs() < 1e-12,
                "seed {seed}: {got} vs {}",
                literal(&l, &w)
            );
        }
    }

    #[test]
    fn gradient_with_the_weights_held_matches_finite_differences() {
        let l = logits(7, 8, 5);
        let w = entropy_weights(tempered_probs(l.view(), TEMPERATURE).view());
        let r = mcc_loss_with_weights::<f64>(l.view(), w.view(), TEMPERATURE).unwrap();
        let want = fd(&l, |x| {
            mcc_loss_with_weights::<f64>(x.view(), w.view(), TEMPERATURE).unwrap().value
        });
        let scale = want.iter().fold(1e-12f64, |m, v| m.max(v.abs()));
        let err = r.grad_logits.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(err < 1e-6 * scale, "max error {err:e}: {} vs {want}", r.grad_logits);
    }

    #[test]
    fn confident_predictions_have_no_confusion_and_uniform_ones_the_most() {
        let c = 4;
        let one_hot = Array2::from_shape_fn((8, c), |(i, k)| if i % c == k { 200.0 } else { 0.0 });
        assert!(mcc_loss::<f64>(one_hot.view(), TEMPERATURE).unwrap().value < 1e-12);
        let uniform = Array2::<f64>::zeros((8, c));
        let v = mcc_loss::<f64>(uniform.view(), TEMPERATURE).unwrap().value;
        assert!((v - (1.0 - 1.0 / c as f64)).abs() < 1e-12, "{v}");
        // Scaling the weights changes nothing (the normalisation cancels them).
        let l = logits(3, 6, c);
        let w = entropy_weights(tempered_probs(l.view(), TEMPERATURE).view());
        let a = mcc_loss_with_weights::<f64>(l.view(), w.view(), TEMPERATURE).unwrap().value;
        let b =
            mcc_loss_with_weights::<f64>(l.view(), (&w * 7.5).view(), TEMPERATURE).unwrap().value;
        assert!((a - b).abs() < 1e-14);
    }

    #[test]
    fn empty_batches_one_class_and_wrong_weights_are_errors() {
        assert!(mcc_loss::<f64>(Array2::zeros((0, 3)).view(), TEMPERATURE).is_err());
        assert!(mcc_loss::<f64>(Array2::zeros((4, 1)).view(), TEMPERATURE).is_err());
        let w = Array1::ones(3);
        assert!(mcc_loss_with_weights::<f64>(Array2::zeros((4, 3)).view(), w.view(), TEMPERATURE)
            .is_err());
    }
}
