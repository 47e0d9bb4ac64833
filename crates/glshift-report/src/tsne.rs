//! Barnes–Hut t-SNE (the `bhtsne` crate) with the settings fixed here rather than left to the
//! crate: an explicit learning rate (the crate's automatic max(n/48, 50) was seen to collapse
//! clusters), a perplexity clamped to what n allows, and a seeded initial embedding so that the
//! same Z and seed give the same picture. Two more sources of run-to-run variation in the crate
//! are closed: its vantage-point tree picks vantage points from the thread-local RNG (so the
//! order of tied neighbours, and with it the affinities' rounding, changed between processes),
//! so the exact nearest neighbours are computed here and passed in; and the optimisation runs
//! in a one-thread pool, since rayon's reductions would make the result depend on timing.

use ndarray::{Array2, ArrayView2};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use crate::error::{Error, Result};

/// t-SNE settings.
#[derive(Clone, Debug, PartialEq)]
pub struct TsneParams {
    pub perplexity: f32,
    /// Gradient step (van der Maaten's 200; set explicitly, never the crate's automatic rule).
    pub learning_rate: f32,
    pub epochs: usize,
    /// Barnes–Hut accuracy θ (> 0).
    pub theta: f32,
    pub seed: u64,
}

impl Default for TsneParams {
    fn default() -> Self {
        TsneParams { perplexity: 30.0, learning_rate: 200.0, epochs: 1000, theta: 0.5, seed: 0 }
    }
}

/// 2-D t-SNE of the rows of `x` (n × d, n ≥ 8). Returns n × 2.
pub fn tsne_2d(x: ArrayView2<f32>, p: &TsneParams) -> Result<Array2<f32>> {
    let n = x.nrows();
    if n < 8 {
        return Err(Error::bad_input("t-SNE", format!("needs at least 8 rows, got {n}")));
    }
    if x.iter().any(|v| !v.is_finite()) {
        return Err(Error::bad_input("t-SNE", "the representation holds NaN or Inf"));
    }
    if !(p.learning_rate > 0.0 && p.theta > 0.0 && p.perplexity > 0.0 && p.epochs > 0) {
        return Err(Error::bad_input(
            "t-SNE",
            format!("learning rate, θ, perplexity and epochs must be > 0: {p:?}"),
        ));
    }
    let rows: Vec<Vec<f32>> = x.rows().into_iter().map(|r| r.to_vec()).collect();
    let refs: Vec<&[f32]> = rows.iter().map(Vec::as_slice).collect();
    // The crate uses 3·perplexity neighbours per point.
    let perplexity = p.perplexity.min(((n - 1) as f32 / 3.0).floor()).max(1.0);
    let neighbors = nearest_neighbors(x, ((3.0 * perplexity) as usize).clamp(1, n - 1));
    let mut rng = ChaCha8Rng::seed_from_u64(p.seed);
    let normal = Normal::new(0.0f32, 1e-4).expect("valid normal");
    let init: Vec<f32> = (0..2 * n).map(|_| normal.sample(&mut rng)).collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .map_err(|e| Error::bad_input("t-SNE thread pool", e.to_string()))?;
    let y = pool.install(|| {
        let mut t: bhtsne::tSNE<f32, &[f32]> = bhtsne::tSNE::new(&refs);
        t.perplexity(perplexity)
            .learning_rate(p.learning_rate)
            .epochs(p.epochs)
            .initial_embedding(init)
            .barnes_hut_with_neighbors(p.theta, &neighbors);
        t.embedding()
    });
    let out = Array2::from_shape_vec((n, 2), y)
        .map_err(|e| Error::bad_input("t-SNE output", e.to_string()))?;
    if out.iter().any(|v| !v.is_finite()) {
        return Err(Error::bad_input(
            "t-SNE",
            "the embedding diverged (NaN/Inf); lower the learning rate",
        ));
    }
    Ok(out)
}

/// The `k` nearest other rows of each row by Euclidean distance (accumulated in f64), ordered by
/// (distance, index): exact and independent of any RNG.
pub fn nearest_neighbors(x: ArrayView2<f32>, k: usize) -> Vec<Vec<bhtsne::Neighbor<f32>>> {
    let n = x.nrows();
    (0..n)
        .map(|i| {
            let xi = x.row(i);
            let mut d: Vec<(f64, usize)> = (0..n)
                .filter(|&j| j != i)
                .map(|j| {
                    (
                        xi.iter()
                            .zip(x.row(j))
                            .map(|(a, b)| (f64::from(*a) - f64::from(*b)).powi(2))
                            .sum::<f64>()
                            .sqrt(),
                        j,
                    )
                })
                .collect();
            d.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            d.into_iter()
                .take(k)
                .map(|(dist, index)| bhtsne::Neighbor { index, distance: dist as f32 })
                .collect()
        })
        .collect()
}

/// Intra-class scatter of 2-D points per class: (1/n_k) Σ_{i: y_i = k} ‖y_i − ȳ_k‖² (`None` for
/// a class without points); the values the paper prints beside each t-SNE cluster.
pub fn intra_class_scatter(y2: ArrayView2<f32>, labels: &[usize], c: usize) -> Vec<Option<f64>> {
    let mut sum = vec![[0.0f64; 2]; c];
    let mut cnt = vec![0usize; c];
    for (r, &k) in y2.rows().into_iter().zip(labels) {
        sum[k][0] += f64::from(r[0]);
        sum[k][1] += f64::from(r[1]);
        cnt[k] += 1;
    }
    let mut ss = vec![0.0f64; c];
    for (r, &k) in y2.rows().into_iter().zip(labels) {
        let m = cnt[k] as f64;
        ss[k] +=
            (f64::from(r[0]) - sum[k][0] / m).powi(2) + (f64::from(r[1]) - sum[k][1] / m).powi(2);
    }
    (0..c).map(|k| (cnt[k] > 0).then(|| ss[k] / cnt[k] as f64)).collect()
}

/// At most `max` row indices out of `n`, drawn without replacement with `seed`, in increasing
/// order (all rows when n ≤ max).
pub fn subsample(n: usize, max: usize, seed: u64) -> Vec<usize> {
    if n <= max {
        return (0..n).collect();
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut idx = rand::seq::index::sample(&mut rng, n, max).into_vec();
    idx.sort_unstable();
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three well separated Gaussian-ish blobs in 10-D, 40 points each.
    fn blobs() -> (Array2<f32>, Vec<usize>) {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let noise = Normal::new(0.0f32, 0.3).unwrap();
        let y: Vec<usize> = (0..120).map(|i| i % 3).collect();
        let x = Array2::from_shape_fn(
            (120, 10),
            |(i, j)| if j == y[i] * 3 { 5.0 } else { 0.0 } + noise.sample(&mut rng),
        );
        (x, y)
    }

    #[test]
    fn tsne_separates_clusters_and_does_not_collapse() {
        let (x, y) = blobs();
        let e = tsne_2d(x.view(), &TsneParams { epochs: 500, ..Default::default() }).unwrap();
        // Not degenerate: the layout has spread in both axes, far above the 1e-4 initialisation.
        for axis in 0..2 {
            let col = e.column(axis);
            let mean = col.mean().unwrap();
            let sd = (col.mapv(|v| (v - mean).powi(2)).mean().unwrap()).sqrt();
            assert!(sd > 1.0, "axis {axis} collapsed: sd {sd}");
        }
        // Clusters kept apart: every class's scatter is far below the spread between classes.
        let scatter = intra_class_scatter(e.view(), &y, 3);
        let total = intra_class_scatter(e.view(), &vec![0; 120], 1)[0].unwrap();
        for s in scatter {
            assert!(s.unwrap() < 0.2 * total, "cluster not separated: {s:?} vs total {total}");
        }
    }

    #[test]
    fn same_seed_gives_the_same_embedding() {
        let (x, _) = blobs();
        let p = TsneParams { epochs: 200, ..Default::default() };
        assert_eq!(tsne_2d(x.view(), &p).unwrap(), tsne_2d(x.view(), &p).unwrap());
    }

    #[test]
    fn nearest_neighbours_are_exact_and_ordered() {
        let x = ndarray::array![[0.0f32], [1.0], [3.0], [-0.5]];
        let nn = nearest_neighbors(x.view(), 2);
        let idx: Vec<Vec<usize>> = nn.iter().map(|r| r.iter().map(|b| b.index).collect()).collect();
        assert_eq!(idx, vec![vec![3, 1], vec![0, 3], vec![1, 0], vec![0, 1]]);
        assert_eq!(nn[2][0].distance, 2.0);
    }

    #[test]
    fn too_few_rows_and_bad_values_are_errors() {
        assert!(tsne_2d(Array2::<f32>::zeros((3, 2)).view(), &TsneParams::default()).is_err());
        let mut x = Array2::<f32>::zeros((20, 2));
        x[[0, 0]] = f32::NAN;
        assert!(tsne_2d(x.view(), &TsneParams::default()).is_err());
    }

    #[test]
    fn scatter_is_the_mean_squared_distance_to_the_class_centre() {
        let y2 = ndarray::array![[0.0f32, 0.0], [2.0, 0.0], [5.0, 5.0]];
        assert_eq!(intra_class_scatter(y2.view(), &[0, 0, 1], 3), vec![Some(1.0), Some(0.0), None]);
    }

    #[test]
    fn subsample_is_sorted_seeded_and_bounded() {
        let a = subsample(100, 10, 3);
        assert_eq!(a.len(), 10);
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(a, subsample(100, 10, 3));
        assert_eq!(subsample(5, 10, 3), vec![0, 1, 2, 3, 4]);
    }
}
