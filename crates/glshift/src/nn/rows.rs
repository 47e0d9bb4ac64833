//! Row-wise passes over `n × c` matrices (softmax, cross-entropy, per-row NLL), split over
//! rayon's threads where there are many rows.
//!
//! Each row is computed by the same code whichever thread takes it, and every sum over rows is
//! taken afterwards on the calling thread in row order; so the results are the bits of a
//! single-threaded pass, whatever the thread count. Why: in a full-batch iteration on a GPU
//! these passes are the host's share (at the VisDA-2017 shape one temperature fit alone is 62
//! passes over 30 000 hold-out rows), and they ran on one core.

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

/// Rows below which a pass runs on the calling thread (splitting would cost more than it saves).
pub(crate) const PARALLEL_MIN_ROWS: usize = 4096;

/// Rows per task of a split pass.
const ROWS_PER_TASK: usize = 1024;

/// `[f(0, row 0), f(1, row 1), …]` over the rows of `a` (as slices), which `f` may change in
/// place; `a` is put in row-major order first if it is not.
pub(crate) fn map_rows_in_place<T: Copy + Send + Sync, R: Send>(
    a: &mut Array2<T>,
    f: impl Fn(usize, &mut [T]) -> R + Sync + Send,
) -> Vec<R> {
    let (n, c) = a.dim();
    if c == 0 {
        return (0..n).map(|i| f(i, &mut [])).collect();
    }
    if !a.is_standard_layout() {
        *a = a.as_standard_layout().into_owned();
    }
    let data = a.as_slice_mut().expect("a standard-layout array is one slice");
    if n < PARALLEL_MIN_ROWS {
        data.chunks_exact_mut(c).enumerate().map(|(i, row)| f(i, row)).collect()
    } else {
        data.par_chunks_exact_mut(c)
            .enumerate()
            .with_min_len(ROWS_PER_TASK)
            .map(|(i, row)| f(i, row))
            .collect()
    }
}

/// [`map_rows_in_place`] without results.
pub(crate) fn for_each_row<T: Copy + Send + Sync>(
    a: &mut Array2<T>,
    f: impl Fn(usize, &mut [T]) + Sync + Send,
) {
    map_rows_in_place(a, f);
}

/// `[f(0, row 0), f(1, row 1), …]` over the rows of `a` (as slices; a copy in row-major order
/// is taken first if `a` is not in that order).
pub(crate) fn map_rows_of<T: Copy + Send + Sync, R: Send>(
    a: ArrayView2<T>,
    f: impl Fn(usize, &[T]) -> R + Sync + Send,
) -> Vec<R> {
    let (n, c) = a.dim();
    if c == 0 {
        return (0..n).map(|i| f(i, &[])).collect();
    }
    let a = a.as_standard_layout();
    let data = a.as_slice().expect("a standard-layout array is one slice");
    if n < PARALLEL_MIN_ROWS {
        data.chunks_exact(c).enumerate().map(|(i, row)| f(i, row)).collect()
    } else {
        data.par_chunks_exact(c)
            .enumerate()
            .with_min_len(ROWS_PER_TASK)
            .map(|(i, row)| f(i, row))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value that depends on the row's index and on both its entries.
    fn row_value(i: usize, row: &[f64]) -> f64 {
        ((row[0] + 0.5).ln() * 1e-3 + row[1] * 1e-7).exp() * (i as f64 + 1.0)
    }

    #[test]
    fn split_passes_give_the_single_threads_bits_in_row_order() {
        let n = 3 * PARALLEL_MIN_ROWS + 17;
        let m = Array2::from_shape_fn((n, 2), |(i, k)| (i * (k + 1)) as f64);
        let column_major = m.t().to_owned();
        let expected: Vec<f64> =
            (0..n).map(|i| row_value(i, &[i as f64, 2.0 * i as f64])).collect();
        let same = |got: &[f64]| {
            got.len() == n && got.iter().zip(&expected).all(|(a, b)| a.to_bits() == b.to_bits())
        };
        for threads in [1, 2, 5] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            assert!(same(&pool.install(|| map_rows_of(m.view(), row_value))), "{threads} threads");
            // Not in row-major order: read from a copy that is.
            assert!(
                same(&pool.install(|| map_rows_of(column_major.t(), row_value))),
                "{threads} threads, column-major"
            );
            let mut a = m.clone();
            let values = pool.install(|| {
                map_rows_in_place(&mut a, |i, row| {
                    let v = row_value(i, row);
                    row.iter_mut().for_each(|x| *x = x.sqrt() + i as f64);
                    v
                })
            });
            assert!(same(&values), "{threads} threads, in place");
            assert!(
                a.indexed_iter().all(|((i, k), v)| v.to_bits()
                    == (((i * (k + 1)) as f64).sqrt() + i as f64).to_bits()),
                "{threads} threads"
            );
        }
    }
}
