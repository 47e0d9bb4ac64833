//! Deep CORAL — Sun & Saenko, "Deep CORAL: Correlation Alignment for Deep Domain Adaptation",
//! ECCV 2016 workshops (TASK-CV): the source CE plus λ·ℓ_CORAL, the distance between the
//! second-order statistics of the two domains' features (paper, eq. 1):
//!
//! ℓ_CORAL = (1/(4d²))·‖C_S − C_T‖²_F,  C = (1/(n − 1))·(Xᵀ X − (1/n)(1ᵀX)ᵀ(1ᵀX)),
//!
//! the unbiased covariances (d × d) of Z over the source training rows (n_s × d) and over every
//! target row (n_t × d). With X̃ = X − 1·x̄ᵀ the centred rows and D = C_S − C_T (symmetric), the
//! gradients (paper, eq. 4, the centring term folded into X̃) are
//!
//! ∂ℓ/∂X_S = (1/(d²(n_s − 1)))·X̃_S·D,   ∂ℓ/∂X_T = −(1/(d²(n_t − 1)))·X̃_T·D.
//!
//! (dℓ = (1/(2d²))⟨D, dC_S⟩ and dC_S = (dX̃ᵀX̃ + X̃ᵀdX̃)/(n_s − 1) give 2⟨X̃_S D, dX̃_S⟩; the
//! centring projection drops out because X̃_S D already has zero column means.)
//!
//! Here: the adapted layer is Z (the paper aligns the last fully connected layer, fc8, of
//! AlexNet; Z is this network's representation before F); full batch, so C_S and C_T are over
//! all rows rather than a mini-batch; λ = 1 (`baselines.trade_off`), as in the paper's Office
//! experiments — its rule is a λ that makes the CE and the CORAL loss about equal at the end of
//! training. Computed in f64 whatever `T`.

use ndarray::{Array1, Array2, ArrayView2, Axis};

use super::{AdaptInputs, AdaptOutput, BaselineConfig, GRADIENT_NAME};
use crate::methods::method::{Method, StepOutput};
use crate::{Error, Real, Result};

/// ℓ_CORAL and its gradients wrt the source rows (n_s × d) and the target rows (n_t × d).
#[derive(Clone, Debug)]
pub struct CoralLoss<T> {
    pub value: f64,
    pub grad_s: Array2<T>,
    pub grad_t: Array2<T>,
}

/// Centred rows X̃ (n × d, f64) and the unbiased covariance X̃ᵀX̃/(n − 1) (d × d).
fn centred_covariance<T: Real>(x: ArrayView2<T>) -> (Array2<f64>, Array2<f64>) {
    let mut xc = x.mapv(|v| v.to_f64_());
    let mean: Array1<f64> = xc.mean_axis(Axis(0)).unwrap_or_else(|| Array1::zeros(x.ncols()));
    xc -= &mean;
    let cov = xc.t().dot(&xc) / (x.nrows() as f64 - 1.0);
    (xc, cov)
}

/// ℓ_CORAL(Z_S, Z_T) = (1/(4d²))·‖C_S − C_T‖²_F with its exact gradients (module docs).
/// Errors when a domain has fewer than 2 rows (no unbiased covariance) or the widths differ.
pub fn coral_loss<T: Real>(zs: ArrayView2<T>, zt: ArrayView2<T>) -> Result<CoralLoss<T>> {
    let d = zs.ncols();
    if zt.ncols() != d {
        return Err(Error::Shape {
            what: "CORAL: target Z width".into(),
            expected: d.to_string(),
            found: zt.ncols().to_string(),
        });
    }
    for (domain, n) in [("source", zs.nrows()), ("target", zt.nrows())] {
        if n < 2 {
            return Err(Error::param(
                "coral",
                n,
                format!("the {domain} needs at least 2 rows for a covariance"),
            ));
        }
    }
    let (xs, cs) = centred_covariance(zs);
    let (xt, ct) = centred_covariance(zt);
    let diff = cs - ct;
    let d2 = (d * d) as f64;
    let value = diff.iter().map(|v| v * v).sum::<f64>() / (4.0 * d2);
    let gs = xs.dot(&diff) / (d2 * (zs.nrows() as f64 - 1.0));
    let gt = xt.dot(&diff) / (-d2 * (zt.nrows() as f64 - 1.0));
    Ok(CoralLoss { value, grad_s: gs.mapv(T::from_f64_), grad_t: gt.mapv(T::from_f64_) })
}

/// `coral` (see the module documentation).
#[derive(Clone, Debug)]
pub struct Coral {
    trade_off: f64,
}

impl Coral {
    pub fn new(cfg: &BaselineConfig) -> Self {
        Coral { trade_off: cfg.trade_off }
    }

    pub fn compute<T: Real>(&mut self, inp: &AdaptInputs<T>) -> Result<AdaptOutput<T>> {
        let r = coral_loss(inp.zs, inp.zt)?;
        let l = T::from_f64_(self.trade_off);
        Ok(AdaptOutput {
            value: r.value,
            objective: self.trade_off * r.value,
            lambda: self.trade_off,
            grad_zs: r.grad_s.mapv(|g| g * l),
            grad_zt: r.grad_t.mapv(|g| g * l),
            grad_logits_s: None,
            grad_logits_t: None,
            class_weights: None,
        })
    }
}

impl Method for Coral {
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

    fn max_err(a: &Array2<f64>, b: &Array2<f64>) -> f64 {
        a.iter().zip(b).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
    }

    fn domains(seed: u64) -> (Array2<f64>, Array2<f64>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let zs = random_matrix(9, 4, &mut rng);
        let zt = random_matrix(6, 4, &mut rng) * 1.7 + 0.3;
        (zs, zt)
    }

    #[test]
    fn gradient_matches_finite_differences_in_f64() {
        let (zs, zt) = domains(1);
        let r = coral_loss(zs.view(), zt.view()).unwrap();
        assert!(r.value > 0.0);
        let want_s = fd(&zs, |x| coral_loss(x.view(), zt.view()).unwrap().value);
        let want_t = fd(&zt, |x| coral_loss(zs.view(), x.view()).unwrap().value);
        let scale = want_s.iter().chain(&want_t).fold(1e-12f64, |m, v| m.max(v.abs()));
        assert!(max_err(&r.grad_s, &want_s) < 1e-6 * scale, "source: {} vs {}", r.grad_s, want_s);
        assert!(max_err(&r.grad_t, &want_t) < 1e-6 * scale, "target: {} vs {}", r.grad_t, want_t);
    }

    #[test]
    fn value_is_the_formula_on_a_hand_example() {
        // 1-D: C_S = var([0, 2]) = 2, C_T = var([0, 1, 2]) = 1 → (2 − 1)²/4.
        let zs = ndarray::array![[0.0], [2.0]];
        let zt = ndarray::array![[0.0], [1.0], [2.0]];
        assert_eq!(coral_loss::<f64>(zs.view(), zt.view()).unwrap().value, 0.25);
    }

    #[test]
    fn coral_of_a_domain_with_itself_is_zero_and_has_no_gradient() {
        let (zs, _) = domains(2);
        let r = coral_loss(zs.view(), zs.view()).unwrap();
        assert_eq!(r.value, 0.0);
        assert!(r.grad_s.iter().chain(&r.grad_t).all(|&g| g == 0.0));
        // Translation moves the mean, not the covariance.
        let shifted = &zs + 5.0;
        assert!(coral_loss(zs.view(), shifted.view()).unwrap().value < 1e-20);
    }

    #[test]
    fn coral_is_symmetric_in_the_domains() {
        let (zs, zt) = domains(3);
        let ab = coral_loss(zs.view(), zt.view()).unwrap();
        let ba = coral_loss(zt.view(), zs.view()).unwrap();
        assert!((ab.value - ba.value).abs() <= 1e-15 * ab.value);
        assert!(max_err(&ab.grad_s, &ba.grad_t) < 1e-15 && max_err(&ab.grad_t, &ba.grad_s) < 1e-15);
    }

    #[test]
    fn too_few_rows_or_mismatched_widths_are_errors() {
        let (zs, zt) = domains(4);
        let one = zt.slice(ndarray::s![..1, ..]);
        assert!(coral_loss(zs.view(), one).unwrap_err().to_string().contains("at least 2 rows"));
        let narrow = zt.slice(ndarray::s![.., ..3]);
        assert!(coral_loss(zs.view(), narrow).is_err());
    }
}
