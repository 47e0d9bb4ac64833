//! Is a new batch a label shift of the target the model was fitted on?
//!
//! The model keeps a seeded sample of its fitted target: `m` preprocessed feature rows (`m × d`,
//! m ≤ [`TARGET_SAMPLE_ROWS`]) and the model's plain softmax probabilities of them (`m × c`).
//! If a batch differs from that target only in its class proportions π_b (π₀ the model's target
//! prior), its density is the target's re-weighted by the posterior density ratio
//!
//! > p_b(x) / p_t(x) = Σ_k (π_b,k / π₀,k) · p₀(k | x),
//!
//! with p₀(k | x) the calibrated posteriors the model gives under π₀ (the same reading of the
//! posteriors as the batch re-weighting, Saerens et al. 2002). With π̂_b the batch estimate, each
//! sample row i gets the weight ω_i = Σ_k r_k q_ik, r = π̂_b / π₀, and the batch is compared with
//! the re-weighted sample by the (biased in the reference, unbiased in the batch) squared MMD
//! with a Gaussian kernel k(a, b) = exp(−‖a − b‖² / h²), h² the median squared distance among
//! the reference rows:
//!
//! > MMD² = mean_{x_i ≠ x_j} k(x_i, x_j) − 2/n Σ_i Σ_a ω_a k(x_i, a) + Σ_{a,a'} ω_a ω_a' k(a, a'),
//!
//! the first mean over the pairs of different batch rows (exact duplicates left out, as below).
//!
//! The comparison is made on the preprocessed features, not on the representation Z: the
//! adaptation makes Z domain-invariant by design, and on Office-Caltech10 a batch from a third
//! domain was as close to the target in Z as the target's own batches (an amazon→webcam model,
//! caltech batches: p 0.09–0.39 in Z), while the features tell domains apart.
//!
//! **Null distribution.** The sample is split in two halves (even and odd positions of the
//! seeded sample): the reference A above and a pool B. Each of `R` replicates draws n rows from
//! B with probabilities ω_B (normalised) and computes the same statistic against A (its
//! within-batch mean over pairs of different pool rows: a row drawn twice is an artefact of the
//! finite pool); the p-value is (1 + #{MMD²_r ≥ MMD²}) / (1 + R). Drawing from a half the statistic does not read keeps
//! the null as wide as a new batch's (drawing from A itself would make it too narrow). π̂_b is
//! estimated on the batch and reused, not re-estimated per replicate, which makes the observed
//! statistic a little smaller than the replicates' under the null: conservative. Batch rows
//! past [`BATCH_TEST_ROWS`] are subsampled (seeded), so the cost is bounded whatever the batch.
//!
//! A small p-value says the batch differs from the fitted target beyond class proportions (a new
//! domain, a new sensor, drift in the features): the re-weighted posteriors and the batch prior
//! are then not to be trusted, and the model should be refitted with the batch as its target.

use ndarray::{Array2, ArrayView2};
use rand::seq::index::sample as sample_indices;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

use crate::data::Rows;
use crate::seeds::{stream_seed, Stream};
use crate::{Error, Result};

/// Rows of the fitted target a model keeps (its whole target when smaller).
pub const TARGET_SAMPLE_ROWS: usize = 1000;
/// Batch rows the test reads at most (a seeded sample of a larger batch).
pub const BATCH_TEST_ROWS: usize = 1000;

/// A seeded sample of the fitted target: preprocessed features (`m × d`) and the model's plain
/// probabilities of them (`m × c`).
#[derive(Clone, Debug)]
pub(super) struct TargetSample {
    x: Array2<f32>,
    probs: Array2<f32>,
    /// What the test reads of `x` alone, whatever the batch: computed on the model's first test
    /// and kept, so that `monitor` pays the O(m²d) bandwidth and kernels once, not per batch.
    reference: OnceLock<Reference>,
}

/// Two samples are equal when their rows are: the reference is derived from them.
impl PartialEq for TargetSample {
    fn eq(&self, other: &Self) -> bool {
        self.x == other.x && self.probs == other.probs
    }
}

/// The sample's halves (module docs: reference A at even positions, pool B at odd ones), the
/// bandwidth from A, and the kernels A×A (`m_A × m_A`), B×B (`m_B × m_B`) and B×A (`m_B × m_A`).
#[derive(Clone, Debug)]
struct Reference {
    ref_rows: Vec<usize>,
    pool_rows: Vec<usize>,
    ref_x: Array2<f32>,
    inv_h2: f64,
    k_ref: Array2<f64>,
    k_pool: Array2<f64>,
    k_pool_ref: Array2<f64>,
}

impl Reference {
    fn new(x: &Array2<f32>) -> Reference {
        let m = x.nrows();
        let (ref_rows, pool_rows): (Vec<usize>, Vec<usize>) =
            ((0..m).step_by(2).collect(), (1..m).step_by(2).collect());
        let (ref_x, pool_x) =
            (x.select(ndarray::Axis(0), &ref_rows), x.select(ndarray::Axis(0), &pool_rows));
        let inv_h2 = 1.0 / median_sq_distance(ref_x.view());
        let k_ref = kernel(ref_x.view(), ref_x.view(), inv_h2);
        let k_pool = kernel(pool_x.view(), pool_x.view(), inv_h2);
        let k_pool_ref = kernel(pool_x.view(), ref_x.view(), inv_h2);
        Reference { ref_rows, pool_rows, ref_x, inv_h2, k_ref, k_pool, k_pool_ref }
    }
}

impl TargetSample {
    /// A sample of `x` (`m × d`, preprocessed) with the model's plain probabilities (`m × c`).
    pub fn new(x: Array2<f32>, probs: Array2<f32>) -> TargetSample {
        TargetSample { x, probs, reference: OnceLock::new() }
    }

    /// The kept rows (`m × d`, preprocessed). Read-only: the kept reference is derived from them.
    pub fn x(&self) -> &Array2<f32> {
        &self.x
    }

    /// The model's plain probabilities of the kept rows (`m × c`).
    pub fn probs(&self) -> &Array2<f32> {
        &self.probs
    }

    fn reference(&self) -> &Reference {
        self.reference.get_or_init(|| Reference::new(&self.x))
    }

    /// Up to [`TARGET_SAMPLE_ROWS`] of the fit's preprocessed target rows (`n_t × d`, in
    /// memory or a file) with their probabilities (`n_t × c`), chosen with `seed`, in a random
    /// order (the halves of the test are its even and odd positions). `None` for fewer than 4
    /// target rows.
    pub fn from_fit(
        target_x: &Rows,
        probs: ArrayView2<f32>,
        seed: u64,
    ) -> Result<Option<TargetSample>> {
        let n = target_x.nrows();
        if n < 4 || probs.nrows() != n {
            return Ok(None);
        }
        let rows = sample_indices(
            &mut ChaCha8Rng::seed_from_u64(stream_seed(seed, Stream::TargetSample)),
            n,
            n.min(TARGET_SAMPLE_ROWS),
        )
        .into_vec();
        Ok(Some(TargetSample::new(target_x.gather(&rows)?, probs.select(ndarray::Axis(0), &rows))))
    }

    /// Shapes (`m ≥ 4` rows, `d` and `c` columns) and finite values, probabilities ≥ 0.
    pub fn check(&self, d: usize, c: usize) -> std::result::Result<(), String> {
        let m = self.x.nrows();
        let shapes =
            m >= 4 && self.probs.nrows() == m && self.x.ncols() == d && self.probs.ncols() == c;
        if !shapes
            || self.x.iter().any(|v| !v.is_finite())
            || self.probs.iter().any(|v| !(v.is_finite() && *v >= 0.0))
        {
            return Err(format!("the target sample must be m ≥ 4 rows of {d} finite features and {c} finite probabilities"));
        }
        Ok(())
    }
}

/// The batch rows the test reads (increasing): all of a batch of `n` ≤ [`BATCH_TEST_ROWS`]
/// rows, else a seeded sample. Callers that stream a batch keep Z for these rows only.
pub fn batch_test_rows(n: usize, seed: u64) -> Vec<usize> {
    if n <= BATCH_TEST_ROWS {
        return (0..n).collect();
    }
    let mut rows = sample_indices(
        &mut ChaCha8Rng::seed_from_u64(stream_seed(seed, Stream::BatchTestRows)),
        n,
        BATCH_TEST_ROWS,
    )
    .into_vec();
    rows.sort_unstable();
    rows
}

/// The test's result (module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetShiftTest {
    /// MMD² between the batch and the re-weighted reference half.
    pub mmd2: f64,
    /// (1 + #{replicates ≥ mmd2}) / (1 + R).
    pub p_value: f64,
    /// Batch rows read (≤ [`BATCH_TEST_ROWS`] and ≤ half the pool's effective size) and
    /// reference rows (half the sample).
    pub batch_rows: usize,
    pub reference_rows: usize,
    /// The pool half's effective size under the weights, 1/Σω² (of its m/2 rows).
    pub pool_effective_rows: f64,
}

/// Fewer batch rows than this and the test is not made (`None`): the target sample is too
/// small, or the batch's proportions put its weight on too few of the sample's rows.
pub const MIN_TEST_ROWS: usize = 10;

/// The test of the module docs: `batch_x` (preprocessed, `n × d`, n ≥ 2) against the sample, whose
/// calibrated probabilities are `sample_q` (`m × c`), with `ratio` = π̂_b / π₀ (length c),
/// `resamples` ≥ 1 replicates seeded by `seed`. `None` when fewer than [`MIN_TEST_ROWS`] batch
/// rows can be read (see the pool's effective size in the module docs) or the ratio gives the
/// sample no weight.
pub(super) fn target_shift_test(
    sample: &TargetSample,
    sample_q: ArrayView2<f32>,
    batch_x: ArrayView2<f32>,
    ratio: &[f64],
    resamples: usize,
    seed: u64,
) -> Result<Option<TargetShiftTest>> {
    let n = batch_x.nrows();
    if n < 2 || batch_x.ncols() != sample.x.ncols() {
        return Err(Error::Shape {
            what: "batch rows for the target test".into(),
            expected: format!("n ≥ 2 rows × {}", sample.x.ncols()),
            found: format!("{n} × {}", batch_x.ncols()),
        });
    }
    let Reference { ref_rows, pool_rows, ref_x, inv_h2, k_ref, k_pool, k_pool_ref } =
        sample.reference();
    let inv_h2 = *inv_h2;
    // ω_i = Σ_k r_k q_ik, normalised in each half; a half the batch's prior gives no weight
    // (all its mass on classes the fitted target lacks) leaves nothing to compare with.
    let weights = |rows: &[usize]| -> Option<Vec<f64>> {
        let w: Vec<f64> = rows
            .iter()
            .map(|&i| {
                sample_q.row(i).iter().zip(ratio).map(|(&q, &r)| q as f64 * r).sum::<f64>().max(0.0)
            })
            .collect();
        let s: f64 = w.iter().sum();
        (s > 0.0 && s.is_finite()).then(|| w.into_iter().map(|v| v / s).collect())
    };
    let (Some(w_ref), Some(w_pool)) = (weights(ref_rows), weights(pool_rows)) else {
        return Ok(None);
    };
    // A pseudo-batch must be mostly distinct pool rows to stand for a new batch: read at most
    // half the pool's effective size (Kong's 1/Σω²) of batch rows, a seeded subset.
    let ess = 1.0 / w_pool.iter().map(|w| w * w).sum::<f64>();
    let n = n.min((ess / 2.0).floor() as usize);
    if n < MIN_TEST_ROWS {
        return Ok(None);
    }
    let mut kept = sample_indices(
        &mut ChaCha8Rng::seed_from_u64(stream_seed(seed, Stream::TargetTestSubset)),
        batch_x.nrows(),
        n,
    )
    .into_vec();
    kept.sort_unstable();
    let batch_x = batch_x.select(ndarray::Axis(0), &kept);
    let batch_x = batch_x.view();
    let ref_term = quad_form(k_ref, &w_ref);
    // Each pool row's weighted mean kernel to the reference.
    let pool_to_ref = k_pool_ref.dot(&ndarray::Array1::from(w_ref.clone()));
    let mmd2 = {
        let k_bb = kernel(batch_x, batch_x, inv_h2);
        let cross = kernel(batch_x, ref_x.view(), inv_h2).dot(&ndarray::Array1::from(w_ref)).sum()
            / n as f64;
        distinct_pairs_mean(&row_ids(batch_x), &k_bb) - 2.0 * cross + ref_term
    };
    let cumulative: Vec<f64> = w_pool
        .iter()
        .scan(0.0, |acc, &w| {
            *acc += w;
            Some(*acc)
        })
        .collect();
    let mut rng = ChaCha8Rng::seed_from_u64(stream_seed(seed, Stream::TargetTestReplicates));
    let mut reached = 0usize;
    for _ in 0..resamples {
        let draw: Vec<usize> = (0..n).map(|_| pick(&cumulative, rng.random::<f64>())).collect();
        let cross = draw.iter().map(|&j| pool_to_ref[j]).sum::<f64>() / n as f64;
        let stat = distinct_pairs_mean(&draw, k_pool) - 2.0 * cross + ref_term;
        reached += usize::from(stat >= mmd2);
    }
    let p_value = (1 + reached) as f64 / (1 + resamples) as f64;
    Ok(Some(TargetShiftTest {
        mmd2,
        p_value,
        batch_rows: n,
        reference_rows: ref_rows.len(),
        pool_effective_rows: ess,
    }))
}

/// exp(−‖a_i − b_j‖² · inv_h2) for rows of `a` (`n_a × z`) and `b` (`n_b × z`): `n_a × n_b`.
fn kernel(a: ArrayView2<f32>, b: ArrayView2<f32>, inv_h2: f64) -> Array2<f64> {
    let sq = |v: ndarray::ArrayView1<f32>| v.iter().map(|&x| x as f64 * x as f64).sum::<f64>();
    let (na, nb): (Vec<f64>, Vec<f64>) =
        (a.rows().into_iter().map(sq).collect(), b.rows().into_iter().map(sq).collect());
    let ab = a.mapv(f64::from).dot(&b.mapv(f64::from).t());
    Array2::from_shape_fn((a.nrows(), b.nrows()), |(i, j)| {
        (-(na[i] + nb[j] - 2.0 * ab[[i, j]]).max(0.0) * inv_h2).exp()
    })
}

/// The median squared distance among distinct rows' pairs of `a` (1 when it is 0).
fn median_sq_distance(a: ArrayView2<f32>) -> f64 {
    let m = a.nrows();
    let mut d: Vec<f64> = Vec::with_capacity(m * (m - 1) / 2);
    for i in 0..m {
        for j in i + 1..m {
            d.push(
                a.row(i).iter().zip(a.row(j)).map(|(&x, &y)| (x as f64 - y as f64).powi(2)).sum(),
            );
        }
    }
    let mid = d.len() / 2;
    let med = *d.select_nth_unstable_by(mid, f64::total_cmp).1;
    if med > 0.0 {
        med
    } else {
        1.0
    }
}

/// wᵀ K w.
fn quad_form(k: &Array2<f64>, w: &[f64]) -> f64 {
    let w = ndarray::Array1::from(w.to_vec());
    w.dot(&k.dot(&w))
}

/// Each row's id: the index of the first row with the same bits (duplicates share it).
fn row_ids(x: ArrayView2<f32>) -> Vec<usize> {
    let mut first: std::collections::HashMap<Vec<u32>, usize> = std::collections::HashMap::new();
    x.rows()
        .into_iter()
        .enumerate()
        .map(|(i, r)| *first.entry(r.iter().map(|v| v.to_bits()).collect()).or_insert(i))
        .collect()
}

/// The mean of `k[id_i, id_j]` over pairs of different rows (`ids` index `k`'s rows and
/// columns): a row drawn twice is an artefact of resampling a finite pool (a new batch draws
/// distinct rows), and its pairs with itself (k = 1) would inflate the statistic; the batch's
/// own exact duplicates are read the same way. 0 when every draw is the same row.
fn distinct_pairs_mean(draw: &[usize], k: &Array2<f64>) -> f64 {
    let (mut s, mut pairs) = (0.0, 0usize);
    for (i, &a) in draw.iter().enumerate() {
        for &b in &draw[i + 1..] {
            if a != b {
                s += k[[a, b]];
                pairs += 1;
            }
        }
    }
    if pairs == 0 {
        0.0
    } else {
        s / pairs as f64
    }
}

/// The index whose cumulative weight first reaches `u` ∈ [0, 1).
fn pick(cumulative: &[f64], u: f64) -> usize {
    let total = *cumulative.last().expect("a non-empty pool");
    cumulative.partition_point(|&c| c <= u * total).min(cumulative.len() - 1)
}
