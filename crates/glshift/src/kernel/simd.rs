//! Element-wise hot loops of the tiled kernel sums and of the random-feature path: the Gaussian
//! of a Gram tile (exp of scaled squared distances, with row and column sums) and cos/sin.
//!
//! f32 uses branch-free polynomial approximations that the compiler vectorises; the loops are
//! compiled three times (AVX-512, AVX2, baseline) and the widest one the CPU supports is chosen
//! at run time. Every version performs the same IEEE operations in the same order (no fused
//! multiply-add, per-lane accumulators of fixed count), so results do not depend on the
//! instruction set chosen. f64 (the precision of the reference tests) calls the standard
//! library's `exp`, `cos` and `sin`.

use crate::Real;
use std::any::TypeId;

/// Lanes of the explicit accumulators in the row sums: a fixed count, so the summation order
/// (and the result) is the same whatever the SIMD width.
const LANES: usize = 16;

/// `&mut [T]` as `&mut [f32]` when T is f32.
pub(super) fn as_f32_mut<T: Real>(s: &mut [T]) -> Option<&mut [f32]> {
    (TypeId::of::<T>() == TypeId::of::<f32>())
        // SAFETY: T is f32 (same type, size and alignment).
        .then(|| unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<f32>(), s.len()) })
}

/// `&[T]` as `&[f32]` when T is f32.
pub(super) fn as_f32<T: Real>(s: &[T]) -> Option<&[f32]> {
    (TypeId::of::<T>() == TypeId::of::<f32>())
        // SAFETY: T is f32.
        .then(|| unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<f32>(), s.len()) })
}

/// exp(x) for x ≤ 0 (f32): x = n·ln2 + r with |r| ≤ ln2/2, e^r by a degree-7 Taylor-like
/// polynomial (Cephes' expf coefficients), 2ⁿ by building the exponent bits. Relative error
/// ≈ 1e-7 on [−87, 0]; inputs below −87 give exp(−87) ≈ 1.6e−38 instead of a smaller value.
#[inline(always)]
fn exp_neg_f32(x: f32) -> f32 {
    let x = x.clamp(-87.0, 0.0);
    // Round-to-nearest of x·log2(e) by the 1.5·2²³ trick (valid for |x·log2 e| < 2²²).
    const SHIFTER: f32 = 12_582_912.0;
    let t = x * std::f32::consts::LOG2_E + SHIFTER;
    let n = t - SHIFTER;
    let bits = t.to_bits() as i32 - SHIFTER.to_bits() as i32;
    // ln 2 in two parts: 0.693_359_4 is 355/512 exactly in f32.
    let r = x - n * 0.693_359_4 - n * -2.121_944_4e-4;
    let mut p = 1.987_569_1e-4_f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let er = p * (r * r) + r + 1.0;
    er * f32::from_bits(((bits + 127) << 23) as u32)
}

/// (cos x, sin x) for f32 with |x| ≲ 10⁴: reduction by π/2 in three parts (Cody–Waite), Cephes'
/// minimax polynomials on [−π/4, π/4], quadrant chosen without branches.
#[inline(always)]
fn cos_sin_f32(x: f32) -> (f32, f32) {
    const SHIFTER: f32 = 12_582_912.0;
    let t = x * std::f32::consts::FRAC_2_PI + SHIFTER;
    let j = t - SHIFTER;
    let q = t.to_bits().wrapping_sub(SHIFTER.to_bits()) & 3;
    let y = ((x - j * 1.570_312_5) - j * 4.837_513e-4) - j * 7.549_79e-8;
    let z = y * y;
    let s = ((-1.951_529_6e-4 * z + 8.332_161e-3) * z - 1.666_665_5e-1) * z * y + y;
    let c = ((2.443_315_7e-5 * z - 1.388_731_6e-3) * z + 4.166_664_6e-2) * z * z - 0.5 * z + 1.0;
    // quadrant 0: (c, s); 1: (−s, c); 2: (−c, −s); 3: (s, −c)
    let swap = q & 1 == 1;
    let (cc, ss) = if swap { (s, c) } else { (c, s) };
    let cos_neg = q == 1 || q == 2;
    let sin_neg = q >= 2;
    (
        f32::from_bits(cc.to_bits() ^ (u32::from(cos_neg) << 31)),
        f32::from_bits(ss.to_bits() ^ (u32::from(sin_neg) << 31)),
    )
}

/// The Gaussian of one Gram tile, in place. On entry `g` (p×q, row-major) holds the cross
/// products ⟨a_i, b_j⟩; on exit K_ij = exp(−max(0, ‖a_i‖² + ‖b_j‖² − 2⟨a_i, b_j⟩)/h).
/// Adds Σ_j K_ij to `row_sums[i]` and Σ_i K_ij to `col_sums[j]` (either may be empty to
/// skip it).
struct GaussTile<'a> {
    g: &'a mut [f32],
    na: &'a [f32],
    nb: &'a [f32],
    inv_h: f32,
    row_sums: &'a mut [f32],
    col_sums: &'a mut [f32],
}

#[inline(always)]
fn gauss_tile_f32_body(t: GaussTile) {
    let q = t.nb.len();
    let inv_h = t.inv_h;
    let want_cols = !t.col_sums.is_empty();
    for (i, row) in t.g.chunks_exact_mut(q).enumerate() {
        let ni = t.na[i];
        for (v, &nj) in row.iter_mut().zip(t.nb) {
            // −d²/h = (2⟨a,b⟩ − ‖a‖² − ‖b‖²)/h; rounding can make it positive, and
            // exp_neg_f32 clamps its argument to ≤ 0.
            *v = exp_neg_f32(((*v + *v) - ni - nj) * inv_h);
        }
        if !t.row_sums.is_empty() {
            let mut acc = [0f32; LANES];
            let mut chunks = row.chunks_exact(LANES);
            for ch in &mut chunks {
                for l in 0..LANES {
                    acc[l] += ch[l];
                }
            }
            let mut s = acc.iter().sum::<f32>();
            for &v in chunks.remainder() {
                s += v;
            }
            t.row_sums[i] += s;
        }
        if want_cols {
            for (c, &v) in t.col_sums.iter_mut().zip(row.iter()) {
                *c += v;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn gauss_tile_f32_avx512(t: GaussTile) {
    gauss_tile_f32_body(t)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn gauss_tile_f32_avx2(t: GaussTile) {
    gauss_tile_f32_body(t)
}

#[inline(always)]
fn cos_sin_f32_body(x: &[f32], scale: f32, cos: &mut [f32], sin: &mut [f32]) {
    if sin.is_empty() {
        for (c, &v) in cos.iter_mut().zip(x) {
            *c = scale * cos_sin_f32(v).0;
        }
    } else {
        for ((c, s), &v) in cos.iter_mut().zip(sin.iter_mut()).zip(x) {
            let (cv, sv) = cos_sin_f32(v);
            *c = scale * cv;
            *s = scale * sv;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn cos_sin_f32_avx512(x: &[f32], scale: f32, cos: &mut [f32], sin: &mut [f32]) {
    cos_sin_f32_body(x, scale, cos, sin)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn cos_sin_f32_avx2(x: &[f32], scale: f32, cos: &mut [f32], sin: &mut [f32]) {
    cos_sin_f32_body(x, scale, cos, sin)
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Isa {
    Avx512,
    Avx2,
    Base,
}

fn isa() -> Isa {
    static ISA: std::sync::OnceLock<Isa> = std::sync::OnceLock::new();
    *ISA.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            if std::env::var_os("GLSHIFT_NO_SIMD").is_none() {
                if is_x86_feature_detected!("avx512f") {
                    return Isa::Avx512;
                }
                if is_x86_feature_detected!("avx2") {
                    return Isa::Avx2;
                }
            }
        }
        Isa::Base
    })
}

/// See [`GaussTile`]: turns the cross products in `g` (p×q) into kernel values and adds row
/// and column sums (pass empty slices to skip them). `na`: p squared norms, `nb`: q.
pub(super) fn gauss_tile<T: Real>(
    g: &mut [T],
    na: &[T],
    nb: &[T],
    h: f64,
    row_sums: &mut [T],
    col_sums: &mut [T],
) {
    debug_assert_eq!(g.len(), na.len() * nb.len());
    if let (Some(g32), Some(na32), Some(nb32)) = (as_f32_mut(g), as_f32(na), as_f32(nb)) {
        let t = GaussTile {
            g: g32,
            na: na32,
            nb: nb32,
            inv_h: (1.0 / h) as f32,
            row_sums: as_f32_mut(row_sums).expect("row_sums is f32"),
            col_sums: as_f32_mut(col_sums).expect("col_sums is f32"),
        };
        match isa() {
            // SAFETY: the CPU supports the feature (checked at run time in `isa`).
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe { gauss_tile_f32_avx512(t) },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => unsafe { gauss_tile_f32_avx2(t) },
            _ => gauss_tile_f32_body(t),
        }
        return;
    }
    let q = nb.len();
    let (two, neg_inv_h) = (T::one() + T::one(), T::from_f64_(-1.0 / h));
    for (i, row) in g.chunks_exact_mut(q).enumerate() {
        let mut s = T::zero();
        for (j, v) in row.iter_mut().enumerate() {
            let d2 = (na[i] + nb[j] - two * *v).max(T::zero());
            *v = (d2 * neg_inv_h).exp();
            s = s + *v;
        }
        if !row_sums.is_empty() {
            row_sums[i] = row_sums[i] + s;
        }
        if !col_sums.is_empty() {
            for (c, &v) in col_sums.iter_mut().zip(row.iter()) {
                *c = *c + v;
            }
        }
    }
}

/// cos[i] = scale·cos(x[i]) and, when `sin` is not empty, sin[i] = scale·sin(x[i]).
pub(super) fn cos_sin<T: Real>(x: &[T], scale: f64, cos: &mut [T], sin: &mut [T]) {
    if let (Some(x32), Some(c32)) = (as_f32(x), as_f32_mut(cos)) {
        let s32 = as_f32_mut(sin).expect("sin is f32");
        let sc = scale as f32;
        match isa() {
            // SAFETY: the CPU supports the feature (checked at run time in `isa`).
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe { cos_sin_f32_avx512(x32, sc, c32, s32) },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => unsafe { cos_sin_f32_avx2(x32, sc, c32, s32) },
            _ => cos_sin_f32_body(x32, sc, c32, s32),
        }
        return;
    }
    let sc = T::from_f64_(scale);
    for (i, &v) in x.iter().enumerate() {
        cos[i] = sc * v.cos();
        if !sin.is_empty() {
            sin[i] = sc * v.sin();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_exp_is_within_a_few_ulp_of_std_on_the_kernel_range() {
        let mut worst = 0.0f64;
        for i in 0..200_000 {
            let x = -(i as f32) * 87.0 / 200_000.0;
            let got = exp_neg_f32(x) as f64;
            let want = (x as f64).exp();
            worst = worst.max((got - want).abs() / want);
        }
        assert!(worst < 5e-7, "max relative error {worst}");
        assert_eq!(exp_neg_f32(0.0), 1.0);
        assert!(exp_neg_f32(-1000.0) < 1e-37);
    }

    #[test]
    fn f32_cos_sin_match_std_over_a_wide_range() {
        let mut worst = 0.0f64;
        for i in -100_000..100_000 {
            let x = i as f32 * 1e-3 * 3.7;
            let (c, s) = cos_sin_f32(x);
            let (wc, ws) = ((x as f64).cos(), (x as f64).sin());
            worst = worst.max((c as f64 - wc).abs()).max((s as f64 - ws).abs());
        }
        assert!(worst < 1e-6, "max absolute error {worst}");
    }

    #[test]
    fn dispatched_gauss_tile_equals_the_portable_loop_bit_for_bit() {
        let (p, q) = (7, 37);
        let na: Vec<f32> = (0..p).map(|i| 1.0 + i as f32 * 0.3).collect();
        let nb: Vec<f32> = (0..q).map(|j| 0.5 + j as f32 * 0.11).collect();
        let g0: Vec<f32> = (0..p * q).map(|k| ((k * 37 % 101) as f32) * 0.01).collect();
        let run = |fast: bool| {
            let mut g = g0.clone();
            let (mut rs, mut cs) = (vec![0f32; p], vec![0f32; q]);
            let t = GaussTile {
                g: &mut g,
                na: &na,
                nb: &nb,
                inv_h: 0.4,
                row_sums: &mut rs,
                col_sums: &mut cs,
            };
            if fast {
                gauss_tile::<f32>(t.g, t.na, t.nb, 2.5, t.row_sums, t.col_sums);
            } else {
                gauss_tile_f32_body(t);
            }
            (g, rs, cs)
        };
        assert_eq!(run(true), run(false));
        let (g, _, _) = run(false);
        let want = (-((na[2] + nb[5] - 2.0 * g0[2 * q + 5]) as f64) / 2.5).exp();
        assert!((g[2 * q + 5] as f64 - want).abs() < 1e-6);
    }
}
