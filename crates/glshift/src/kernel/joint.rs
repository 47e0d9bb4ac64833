//! MMD between two samples under a product of multi-bandwidth Gaussian kernels, one factor per
//! "view" of the rows (e.g. the representation Z and the softmax predictions), with gradients
//! with respect to every view. DAN's multi-kernel MMD is the one-view case, JAN's joint MMD
//! the two-view case.
//!
//! k((x¹, x², …), (x'¹, x'², …)) = Π_v k_v(xᵛ, x'ᵛ), k_v(x, x') = Σ_u β_v exp(−‖x − x'‖²/h_{v,u}),
//! MMD² = (1/n_s²) Σ k(sᵢ, sⱼ) + (1/n_t²) Σ k(tᵢ, tⱼ) − (2/(n_s n_t)) Σ k(sᵢ, tⱼ)
//! (the biased V-statistic, Gretton et al. 2012; MMD²(P, P) = 0 exactly for identical samples).
//! Like `gram`, the kernel is built per tile of rows and the bandwidths are constants in backprop.
//! With one view and one bandwidth the sums are `kernel_sum` with all-ones labels (tested).

use crate::{Error, Real, Result};
use ndarray::{s, Array1, Array2, ArrayView2, Axis, Zip};

/// Rows of the source block per kernel tile: memory O(ROW_TILE·n) instead of O(n²). The MMD
/// baselines run at benchmark sizes (a few thousand rows), where the fused engine of `tiled`
/// (built for the CME objectives) is not needed.
const ROW_TILE: usize = 512;

/// A sum of `count` Gaussian kernels with bandwidths base·2^(u − (count−1)/2), u = 0..count
/// (a geometric family centred on `base`, ratio 2), each with weight `weight`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GaussianFamily {
    pub base: f64,
    pub count: usize,
    pub weight: f64,
}

impl GaussianFamily {
    /// The bandwidths, largest first.
    pub fn bandwidths(&self) -> Vec<f64> {
        let top = self.base * 2f64.powf((self.count as f64 - 1.0) / 2.0);
        (0..self.count).map(|u| top / 2f64.powi(u as i32)).collect()
    }

    fn validate(&self, view: usize) -> Result<()> {
        if !(self.base.is_finite() && self.base > 0.0) {
            return Err(Error::param(
                "kernel bandwidth",
                format!("{} (view {view})", self.base),
                "must be finite and > 0",
            ));
        }
        if self.count == 0 || self.count > 32 {
            return Err(Error::param(
                "kernel count",
                format!("{} (view {view})", self.count),
                "must lie in 1..=32",
            ));
        }
        if !(self.weight.is_finite() && self.weight > 0.0) {
            return Err(Error::param(
                "kernel weight",
                format!("{} (view {view})", self.weight),
                "must be finite and > 0",
            ));
        }
        Ok(())
    }
}

/// MMD² and its gradients, one gradient per view and domain (same shapes as the inputs).
#[derive(Clone, Debug)]
pub struct JointMmd<T> {
    pub value: f64,
    pub grad_s: Vec<Array2<T>>,
    pub grad_t: Vec<Array2<T>>,
}

fn check_views<T: Real>(
    s: &[ArrayView2<T>],
    t: &[ArrayView2<T>],
    kernels: &[GaussianFamily],
) -> Result<()> {
    if s.is_empty() || s.len() != t.len() || s.len() != kernels.len() {
        return Err(Error::Shape {
            what: "joint MMD views (source, target, kernels)".into(),
            expected: "the same number >= 1".into(),
            found: format!("{}, {}, {}", s.len(), t.len(), kernels.len()),
        });
    }
    for (v, ((a, b), k)) in s.iter().zip(t).zip(kernels).enumerate() {
        k.validate(v)?;
        let checks = [
            ("source rows", s[0].nrows(), a.nrows()),
            ("target rows", t[0].nrows(), b.nrows()),
            ("target columns (= source columns)", a.ncols(), b.ncols()),
        ];
        for (what, want, got) in checks {
            if want != got {
                return Err(Error::Shape {
                    what: format!("joint MMD view {v} {what}"),
                    expected: want.to_string(),
                    found: got.to_string(),
                });
            }
        }
        if a.nrows() == 0 || b.nrows() == 0 {
            return Err(Error::Shape {
                what: format!("joint MMD view {v} rows"),
                expected: "at least 1 per domain".into(),
                found: "0".into(),
            });
        }
        if a.iter().chain(b.iter()).any(|x| !x.is_finite()) {
            return Err(Error::bad_data(format!("joint MMD view {v}"), "contains NaN or Inf"));
        }
    }
    Ok(())
}

/// Σ_ij k(aᵢ, bⱼ) and the gradients of `coef`·Σ_ij k(aᵢ, bⱼ) wrt every view of a and of b.
fn cross_sum<T: Real>(
    a: &[ArrayView2<T>],
    b: &[ArrayView2<T>],
    kernels: &[GaussianFamily],
    coef: f64,
) -> (f64, Vec<Array2<T>>, Vec<Array2<T>>) {
    let nv = a.len();
    let na = a[0].nrows();
    let norms =
        |z: &ArrayView2<T>| -> Array1<T> { z.rows().into_iter().map(|r| r.dot(&r)).collect() };
    let (norm_a, norm_b): (Vec<_>, Vec<_>) =
        (a.iter().map(norms).collect(), b.iter().map(norms).collect());
    let bws: Vec<Vec<f64>> = kernels.iter().map(|k| k.bandwidths()).collect();
    let mut ga: Vec<Array2<T>> = a.iter().map(|z| Array2::zeros(z.raw_dim())).collect();
    let mut gb: Vec<Array2<T>> = b.iter().map(|z| Array2::zeros(z.raw_dim())).collect();
    let (two, coef_t) = (T::one() + T::one(), T::from_f64_(coef));
    let mut total = 0.0f64;
    for i0 in (0..na).step_by(ROW_TILE) {
        let rows = i0..(i0 + ROW_TILE).min(na);
        // Per view: K_v (the kernel factor) and D_v = Σ_u β e_u/h_u (minus its derivative in d²).
        let mut kv = Vec::with_capacity(nv);
        let mut dv = Vec::with_capacity(nv);
        for v in 0..nv {
            let at = a[v].slice(s![rows.clone(), ..]);
            let mut d2 = at.dot(&b[v].t());
            let na_t = norm_a[v].slice(s![rows.clone()]);
            Zip::indexed(&mut d2)
                .for_each(|(i, j), x| *x = (na_t[i] + norm_b[v][j] - two * *x).max(T::zero()));
            let (mut k, mut d) =
                (Array2::<T>::zeros(d2.raw_dim()), Array2::<T>::zeros(d2.raw_dim()));
            let beta = T::from_f64_(kernels[v].weight);
            let inv_h: Vec<T> = bws[v].iter().map(|h| T::from_f64_(1.0 / h)).collect();
            Zip::from(&mut k).and(&mut d).and(&d2).for_each(|k, d, &x| {
                // Bandwidths halve from one to the next, so each exponential is the square of
                // the previous one: one exp per entry whatever the number of kernels.
                let mut e = (-x * inv_h[0]).exp();
                let (mut ks, mut ds) = (T::zero(), T::zero());
                for &ih in &inv_h {
                    ks = ks + e;
                    ds = ds + e * ih;
                    e = e * e;
                }
                *k = beta * ks;
                *d = beta * ds;
            });
            kv.push(k);
            dv.push(d);
        }
        let mut prod = kv[0].clone();
        for k in &kv[1..] {
            prod.zip_mut_with(k, |p, &q| *p = *p * q);
        }
        total += prod.iter().map(|v| v.to_f64_()).sum::<f64>();
        for v in 0..nv {
            // G = coef · D_v · Π_{w≠v} K_w; ∂(coef Σ K)/∂aᵢ = −2(Σⱼ Gᵢⱼ aᵢ − Σⱼ Gᵢⱼ bⱼ).
            let mut g = dv[v].mapv(|x| x * coef_t);
            for k in kv.iter().enumerate().filter(|(w, _)| *w != v).map(|(_, k)| k) {
                g.zip_mut_with(k, |p, &q| *p = *p * q);
            }
            let at = a[v].slice(s![rows.clone(), ..]);
            let mut part_a = g.dot(&b[v]);
            Zip::from(part_a.rows_mut()).and(at.rows()).and(&g.sum_axis(Axis(1))).for_each(
                |mut out, z, &rs| {
                    out.zip_mut_with(&z, |o, &zv| *o = -two * (rs * zv - *o));
                },
            );
            ga[v].slice_mut(s![rows.clone(), ..]).assign(&part_a);
            let mut part_b = g.t().dot(&at);
            Zip::from(part_b.rows_mut()).and(b[v].rows()).and(&g.sum_axis(Axis(0))).for_each(
                |mut out, z, &cs| {
                    out.zip_mut_with(&z, |o, &zv| *o = -two * (cs * zv - *o));
                },
            );
            gb[v].zip_mut_with(&part_b, |o, &x| *o = *o + x);
        }
    }
    (total, ga, gb)
}

/// MMD² between the source rows `s` and the target rows `t` under the product kernel (one
/// [`GaussianFamily`] per view), with gradients wrt every view of both samples.
///
/// Errors: mismatched view counts or shapes, an empty sample, NaN/Inf, a bad family.
pub fn joint_mmd2<T: Real>(
    s: &[ArrayView2<T>],
    t: &[ArrayView2<T>],
    kernels: &[GaussianFamily],
) -> Result<JointMmd<T>> {
    check_views(s, t, kernels)?;
    let (ns, nt) = (s[0].nrows() as f64, t[0].nrows() as f64);
    let (ss, ss_a, ss_b) = cross_sum(s, s, kernels, 1.0 / (ns * ns));
    let (tt, tt_a, tt_b) = cross_sum(t, t, kernels, 1.0 / (nt * nt));
    let (st, st_s, st_t) = cross_sum(s, t, kernels, -2.0 / (ns * nt));
    let value = ss / (ns * ns) + tt / (nt * nt) - 2.0 * st / (ns * nt);
    let grad_s = ss_a.into_iter().zip(ss_b).zip(st_s).map(|((a, b), c)| a + b + c).collect();
    let grad_t = tt_a.into_iter().zip(tt_b).zip(st_t).map(|((a, b), c)| a + b + c).collect();
    Ok(JointMmd { value, grad_s, grad_t })
}
