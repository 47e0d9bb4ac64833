//! The element-wise AdamW update of [`super::Adam::step`] on one parameter tensor:
//!
//! ```text
//! m ← β₁m + (1−β₁)g,  v ← β₂v + (1−β₂)g²,  θ ← θ·κ − η·(m/b₁)/(√(v/b₂) + ε)
//! ```
//!
//! in f64 per element, with b₁ = 1−β₁ᵗ, b₂ = 1−β₂ᵗ and κ = 1 − ηλ for decayed weights, κ = 1
//! otherwise (θ·1 is θ exactly). The loop is compiled twice, for the base target and with
//! AVX-512, picked at run time: every lane does the same IEEE operations in the same order
//! (Rust never fuses a multiply and an add), so both give the same bits; the wide one takes
//! eight square roots and divisions at a time. Scalar, this update was 5% of a default fit
//! (perf).

use crate::Real;

/// The per-step constants of the update.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Step {
    pub beta1: f64,
    pub beta2: f64,
    pub lr: f64,
    pub eps: f64,
    /// 1 − β₁ᵗ and 1 − β₂ᵗ.
    pub bias1: f64,
    pub bias2: f64,
    /// κ: 1 − ηλ (decayed weights) or 1.
    pub keep: f64,
}

/// Updates `p`, `m`, `v` in place from `g` (all of one length).
///
/// # Panics
/// If the lengths differ.
pub(super) fn update<T: Real>(p: &mut [T], g: &[T], m: &mut [T], v: &mut [T], k: Step) {
    assert!(
        p.len() == g.len() && p.len() == m.len() && p.len() == v.len(),
        "Adam::step: tensor size mismatch"
    );
    #[cfg(target_arch = "x86_64")]
    if std::env::var_os("GLSHIFT_NO_SIMD").is_none() && is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU supports AVX-512F (checked just above).
        return unsafe { update_avx512(p, g, m, v, k) };
    }
    update_body(p, g, m, v, k)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn update_avx512<T: Real>(p: &mut [T], g: &[T], m: &mut [T], v: &mut [T], k: Step) {
    update_body(p, g, m, v, k)
}

#[inline(always)]
fn update_body<T: Real>(p: &mut [T], g: &[T], m: &mut [T], v: &mut [T], k: Step) {
    for (((p, &g), m), v) in p.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
        let g = g.to_f64_();
        let mn = k.beta1 * m.to_f64_() + (1.0 - k.beta1) * g;
        let vn = k.beta2 * v.to_f64_() + (1.0 - k.beta2) * g * g;
        *m = T::from_f64_(mn);
        *v = T::from_f64_(vn);
        let theta = p.to_f64_() * k.keep;
        *p = T::from_f64_(theta - k.lr * (mn / k.bias1) / ((vn / k.bias2).sqrt() + k.eps));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The update as `Adam::step` wrote it before this module (branch on the decay), element
    /// by element.
    fn reference(
        p: &mut [f32],
        g: &[f32],
        m: &mut [f32],
        v: &mut [f32],
        k: Step,
        decay: Option<f64>,
    ) {
        for i in 0..p.len() {
            let g = g[i] as f64;
            let mn = k.beta1 * m[i] as f64 + (1.0 - k.beta1) * g;
            let vn = k.beta2 * v[i] as f64 + (1.0 - k.beta2) * g * g;
            m[i] = mn as f32;
            v[i] = vn as f32;
            let mut theta = p[i] as f64;
            if let Some(f) = decay {
                theta *= f;
            }
            theta -= k.lr * (mn / k.bias1) / ((vn / k.bias2).sqrt() + k.eps);
            p[i] = theta as f32;
        }
    }

    #[test]
    fn the_dispatched_update_matches_the_scalar_reference_bit_for_bit() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        // 1003 elements: whole vectors and a remainder.
        let n = 1003;
        let mut draw =
            |s: f32| (0..n).map(|_| s * (rng.random::<f32>() - 0.5)).collect::<Vec<f32>>();
        let (p0, g, m0) = (draw(2.0), draw(0.1), draw(0.01));
        let v0: Vec<f32> = draw(1e-3).iter().map(|x| x.abs()).collect();
        for decay in [None, Some(1.0 - 1e-3 * 1e-2)] {
            let k = Step {
                beta1: 0.9,
                beta2: 0.999,
                lr: 1e-3,
                eps: 1e-8,
                bias1: 1.0 - 0.9f64.powi(7),
                bias2: 1.0 - 0.999f64.powi(7),
                keep: decay.unwrap_or(1.0),
            };
            let (mut p, mut m, mut v) = (p0.clone(), m0.clone(), v0.clone());
            update(&mut p, &g, &mut m, &mut v, k);
            let (mut pr, mut mr, mut vr) = (p0.clone(), m0.clone(), v0.clone());
            reference(&mut pr, &g, &mut mr, &mut vr, k, decay);
            let bits = |a: &[f32]| a.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&p), bits(&pr), "parameters, decay {decay:?}");
            assert_eq!(bits(&m), bits(&mr));
            assert_eq!(bits(&v), bits(&vr));
            assert_ne!(bits(&p), bits(&p0));
        }
    }
}
