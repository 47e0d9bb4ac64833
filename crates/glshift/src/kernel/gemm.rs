//! Single-threaded GEMM on ndarray views through faer (`Par::Seq`): the tiled kernel sums
//! parallelise over tiles with rayon, so each product runs on one thread.
//!
//! Why faer and not ndarray's matrixmultiply: on the tile shapes of the fused kernel sums
//! (p×256 · 256×q and p×q · q×256 with p, q ≤ 256, f32) faer's AVX-512 kernels ran at about
//! twice matrixmultiply's rate on this project's 2-core AVX-512 machine (docs/fit-time.md).
//! matrixmultiply also chooses its own thread count per call (`MATMUL_NUM_THREADS`), which would
//! oversubscribe the cores inside rayon tasks.

use crate::Real;
use faer::{Accum, MatMut, MatRef, Par};
use ndarray::{ArrayView2, ArrayViewMut2};
use std::any::TypeId;

macro_rules! faer_gemm {
    ($name:ident, $t:ty) => {
        /// SAFETY: the pointers and strides describe valid, non-overlapping (c vs a, b)
        /// matrices of the given shapes.
        #[allow(clippy::too_many_arguments)]
        unsafe fn $name(
            c: (*mut $t, usize, usize, isize, isize),
            a: (*const $t, usize, usize, isize, isize),
            b: (*const $t, usize, usize, isize, isize),
            alpha: $t,
            accumulate: bool,
        ) {
            let cm = MatMut::<$t>::from_raw_parts_mut(c.0, c.1, c.2, c.3, c.4);
            let am = MatRef::<$t>::from_raw_parts(a.0, a.1, a.2, a.3, a.4);
            let bm = MatRef::<$t>::from_raw_parts(b.0, b.1, b.2, b.3, b.4);
            let acc = if accumulate { Accum::Add } else { Accum::Replace };
            faer::linalg::matmul::matmul(cm, acc, am, bm, alpha, Par::Seq);
        }
    };
}
faer_gemm!(gemm_f32, f32);
faer_gemm!(gemm_f64, f64);

/// c = alpha·a·b, or c += alpha·a·b when `accumulate`. Shapes a: m×k, b: k×n, c: m×n (any
/// strides; transposed views are fine). One thread.
///
/// # Panics
/// On inconsistent shapes.
pub(super) fn gemm<T: Real>(
    mut c: ArrayViewMut2<T>,
    a: ArrayView2<T>,
    b: ArrayView2<T>,
    alpha: T,
    accumulate: bool,
) {
    assert!(
        a.ncols() == b.nrows() && c.nrows() == a.nrows() && c.ncols() == b.ncols(),
        "gemm: shapes {:?} · {:?} → {:?}",
        a.dim(),
        b.dim(),
        c.dim()
    );
    if c.is_empty() {
        return;
    }
    if a.ncols() == 0 {
        if !accumulate {
            c.fill(T::zero());
        }
        return;
    }
    let cs = (c.strides()[0], c.strides()[1]);
    let (m, n) = c.dim();
    let cp = (c.as_mut_ptr(), m, n, cs.0, cs.1);
    let (as_, bs) = (a.strides(), b.strides());
    let ap = (a.as_ptr(), a.nrows(), a.ncols(), as_[0], as_[1]);
    let bp = (b.as_ptr(), b.nrows(), b.ncols(), bs[0], bs[1]);
    let id = TypeId::of::<T>();
    // SAFETY: the tuples come from live ndarray views of the stated shapes and strides; `c` is
    // borrowed mutably, so it does not alias `a` or `b`. The casts are between identical types
    // (checked by TypeId).
    unsafe {
        if id == TypeId::of::<f32>() {
            gemm_f32(
                (cp.0.cast(), cp.1, cp.2, cp.3, cp.4),
                (ap.0.cast(), ap.1, ap.2, ap.3, ap.4),
                (bp.0.cast(), bp.1, bp.2, bp.3, bp.4),
                alpha.to_f64_() as f32,
                accumulate,
            );
        } else if id == TypeId::of::<f64>() {
            gemm_f64(
                (cp.0.cast(), cp.1, cp.2, cp.3, cp.4),
                (ap.0.cast(), ap.1, ap.2, ap.3, ap.4),
                (bp.0.cast(), bp.1, bp.2, bp.3, bp.4),
                alpha.to_f64_(),
                accumulate,
            );
        } else {
            let beta = if accumulate { T::one() } else { T::zero() };
            ndarray::linalg::general_mat_mul(alpha, &a, &b, beta, &mut c);
        }
    }
}

/// Multiplies a `(m, k)·(k, n)` product `reps` times per task over `tasks` independent tasks
/// in parallel (rayon) and returns the rate in GFLOP/s — the GEMM rate the tiled kernel sums
/// can reach at that shape (used by `glshift perf` for the FLOP-bound ratio).
pub fn tile_gemm_gflops(m: usize, k: usize, n: usize, tasks: usize, reps: usize) -> f64 {
    use ndarray::Array2;
    use rayon::prelude::*;
    let a: Vec<Array2<f32>> = (0..tasks)
        .map(|s| Array2::from_shape_fn((m, k), |(i, j)| ((i * 7 + j * 13 + s) % 17) as f32 * 0.1))
        .collect();
    let b = Array2::from_shape_fn((k, n), |(i, j)| ((i * 5 + j * 3) % 11) as f32 * 0.1);
    let t0 = std::time::Instant::now();
    (0..tasks).into_par_iter().for_each(|t| {
        let mut c = Array2::<f32>::zeros((m, n));
        for _ in 0..reps {
            gemm(c.view_mut(), a[t].view(), b.view(), 1.0, true);
        }
        std::hint::black_box(&c);
    });
    let secs = t0.elapsed().as_secs_f64();
    (2.0 * (m * k * n) as f64 * (tasks * reps) as f64) / secs / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    #[test]
    fn gemm_matches_ndarray_dot_for_strided_and_transposed_views() {
        let a = Array2::from_shape_fn((5, 7), |(i, j)| (i as f64) * 0.3 - j as f64 * 0.2);
        let b = Array2::from_shape_fn((6, 7), |(i, j)| ((i * j) % 5) as f64 - 1.5);
        let want = a.dot(&b.t());
        let mut c = Array2::<f64>::zeros((5, 6));
        gemm(c.view_mut(), a.view(), b.t(), 1.0, false);
        assert!((&c - &want).iter().all(|v| v.abs() < 1e-12));
        gemm(c.view_mut(), a.view(), b.t(), 2.0, true);
        assert!((&c - &(&want * 3.0)).iter().all(|v| v.abs() < 1e-12));
        let a32 = a.mapv(|v| v as f32);
        let b32 = b.mapv(|v| v as f32);
        let mut c32 = Array2::<f32>::zeros((6, 5));
        gemm(c32.view_mut().reversed_axes(), a32.view(), b32.t(), 1.0, false);
        assert!(c32.t().iter().zip(want.iter()).all(|(x, y)| (*x as f64 - y).abs() < 1e-4));
    }
}
