//! Which GEMM for the tiles of the fused kernel sums: faer vs ndarray's matrixmultiply.
//!
//! Each task computes the two products of one tile pair, K = Z_I Z_Jᵀ (t×d · d×t) and
//! K Z_J (t×t · t×d), f32; 64 tasks per repetition.
//! - faer, `Par::Seq`, tasks spread over rayon's threads (what `kernel::tiled` does);
//! - matrixmultiply through ndarray, tasks over rayon's threads;
//! - matrixmultiply through ndarray, tasks in a loop, its own threads (MATMUL_NUM_THREADS).
//!
//! `cargo run --release -p glshift --example gemm_backends -- [t] [d] [reps]` (default 256 256 4);
//! prints GFLOP/s, median of 5 rounds.

// Product code: no function over clippy.toml's 80 lines (test code may be longer).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

use faer::{Accum, MatMut, MatRef, Par};
use ndarray::{linalg::general_mat_mul, Array2};
use rayon::prelude::*;
use std::time::Instant;

fn faer_mm(a: MatRef<f32>, b: MatRef<f32>, c: &mut Array2<f32>) {
    let (m, n) = c.dim();
    let cv = MatMut::from_row_major_slice_mut(c.as_slice_mut().unwrap(), m, n);
    faer::linalg::matmul::matmul(cv, Accum::Replace, a, b, 1.0f32, Par::Seq);
}

fn rm(a: &Array2<f32>) -> MatRef<'_, f32> {
    MatRef::from_row_major_slice(a.as_slice().unwrap(), a.nrows(), a.ncols())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|s| s.parse().expect("integer")).collect();
    let t = args.first().copied().unwrap_or(256);
    let d = args.get(1).copied().unwrap_or(256);
    let reps = args.get(2).copied().unwrap_or(4);
    let tasks = 64;
    let z: Vec<Array2<f32>> = (0..tasks)
        .map(|s| Array2::from_shape_fn((t, d), |(i, j)| ((i * 7 + j * 13 + s) % 17) as f32 * 0.1))
        .collect();
    let flops = (tasks * reps) as f64 * 2.0 * 2.0 * (t * t * d) as f64;
    let one = |backend: usize, i: usize| {
        let zb = &z[(i + 1) % tasks];
        let mut k = Array2::<f32>::zeros((t, t));
        let mut p = Array2::<f32>::zeros((t, d));
        if backend == 0 {
            faer_mm(rm(&z[i]), rm(zb).transpose(), &mut k);
            faer_mm(rm(&k), rm(zb), &mut p);
        } else {
            general_mat_mul(1.0, &z[i], &zb.t(), 0.0, &mut k);
            general_mat_mul(1.0, &k, zb, 0.0, &mut p);
        }
        std::hint::black_box(&p);
    };
    let names =
        ["faer (Par::Seq) over rayon", "matrixmultiply over rayon", "matrixmultiply, own threads"];
    let mut rates = vec![Vec::new(); 3];
    for _ in 0..5 {
        for (b, rate) in rates.iter_mut().enumerate() {
            let t0 = Instant::now();
            for _ in 0..reps {
                match b {
                    0 | 1 => (0..tasks).into_par_iter().for_each(|i| one(b.min(1), i)),
                    _ => (0..tasks).for_each(|i| one(1, i)),
                }
            }
            rate.push(flops / t0.elapsed().as_secs_f64() / 1e9);
        }
    }
    println!("tile {t}×{d}, {} rayon threads:", rayon::current_num_threads());
    for (name, r) in names.iter().zip(rates) {
        println!("  {name:32} {:7.1} GFLOP/s", median(r));
    }
}
