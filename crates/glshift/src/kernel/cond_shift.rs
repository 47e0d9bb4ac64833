//! A per-class conditional two-sample test: did `P(x | y = k)` change between two samples?
//!
//! **Statistic.** For class k, with `A_k` the rows of sample a assigned to k (n_a rows in all,
//! n_ak of class k) and `B_k` those of sample b, the MCMD² of the paper with the linear label
//! kernel (B = I) and one-hot assignments:
//!
//! ```text
//! μ̂ᵃ_k = Σ_{i∈A_k} φ(z_i) / (ε n_a + n_ak)          (the CME, W = (εnI + N)⁻¹ diagonal)
//! MCMD²_k = ‖μ̂ᵃ_k − μ̂ᵇ_k‖² = S_AA/α² + S_BB/β² − 2 S_AB/(αβ),
//! α = ε n_a + n_ak,  β = ε n_b + n_bk,  S_XY = Σ_{i∈X, j∈Y} exp(−‖z_i − z_j‖²/h)
//! ```
//!
//! i.e. the diagonal of [`super::mcmd2_matrix`] (the test checks it against it).
//!
//! **Permutation p-value.** Under H₀: `P^a(x | k) = P^b(x | k)`, the pooled rows `A_k ∪ B_k` are
//! exchangeable; the statistic is recomputed for `permutations` random relabellings of the pool
//! into sets of sizes n_ak and n_bk (α, β fixed), and p = (1 + #{T* ≥ T}) / (1 + permutations),
//! which is exact (super-uniform) under exchangeability. The m×m Gram of the pool (m = n_ak +
//! n_bk) is built once per class; a relabelling then costs O(min(n_ak, n_bk)²) from the row sums
//! r_i = Σ_j K_ij: with X the smaller set, S_XY = Σ_{i∈X} r_i − S_XX and
//! S_YY = S_total − 2 Σ_{i∈X} r_i + S_XX.
//!
//! **Assignments** are hard and come from the caller. Exchangeability needs both sets chosen by
//! the same rule, independent of the rows' sample membership: the caller should assign both
//! samples with one classifier that saw neither as labelled training rows (`glshift shift test`
//! uses the adapted model's predictions on the source hold-out and on the target).
//! **Bandwidth** h is fixed before permuting (the caller's rule on all rows), so it is
//! permutation-invariant. **Multiplicity:** Holm's step-down adjustment across the testable
//! classes controls the family-wise error; the overall decision rejects when any adjusted
//! p < `alpha`.
//!
//! **Minimum rows: [`MIN_ROWS_PER_CLASS`] = 5 on each side.** A class with fewer rows on either
//! side is *not testable*: no statistic, no p-value, left out of Holm, and never counted as "no
//! shift detected". Why 5: with n_ak and n_bk rows there are only C(n_ak + n_bk, n_ak) distinct
//! relabellings, and each sampled one repeats the observed split with probability 1/C, so the
//! p-value cannot go much below 1/C; Holm's first step needs p < α/m over m testable classes.
//! At 5 a side C(10, 5) = 252: p can reach ≈ 0.004 (with 999 sampled relabellings ≈ 0.005 on
//! average), about α/m for the 10 classes of Office-Caltech at α = 0.05, so the smallest testable
//! class can just be rejected there. At 4 a side C(8, 4) = 70 (p ≳ 0.014: no rejection among 4
//! or more classes), at 3 C(6, 3) = 20 (p ≳ 0.05: none at all), and the old rule "1 row a side"
//! allowed n + 1 relabellings. A larger other side lowers the floor fast (5 against 19:
//! C(24, 5) = 42 504, below the 1/1000 floor of 999 relabellings). The minimum makes a
//! rejection possible at the usual class counts; it does not make a small class powerful, and
//! with many classes (α/m < 1/252, m ≥ 13 at α = 0.05) a class at exactly 5 + 5 still cannot be
//! rejected on its own.
//!
//! Deterministic: class k's relabellings come from a ChaCha8 stream seeded by (`seed`, k);
//! classes run in parallel, each on one stream, so the result does not depend on the threads.

use ndarray::{Array2, ArrayView2, Axis};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::{Error, Real, Result};

/// Settings of [`conditional_shift_test`].
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct CondTestParams {
    /// Relabellings per class.
    pub permutations: usize,
    pub seed: u64,
    /// ε of the CME (as in MUL's MCMD).
    pub eps: f64,
    /// Feature-kernel bandwidth h (K = exp(−‖·‖²/h)).
    pub h: f64,
    /// Family-wise level of the overall decision (Holm).
    pub alpha: f64,
}

/// Default relabellings per class.
pub const DEFAULT_PERMUTATIONS: usize = 999;

/// Fewest rows a class needs on *each* side to be tested (see the module doc: below it the
/// permutation p-value cannot get small enough for Holm to reject).
pub const MIN_ROWS_PER_CLASS: usize = 5;

/// One class's result.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct ClassTest {
    pub class: usize,
    /// Rows of sample a (source) and b (target) assigned to the class.
    pub n_source: usize,
    pub n_target: usize,
    /// Both sides have at least [`MIN_ROWS_PER_CLASS`] rows. When false the class is a result
    /// of its own, "not testable": not tested, not in Holm, and not "no shift".
    pub testable: bool,
    /// MCMD² of the class; `None` when not testable.
    pub mcmd2: Option<f64>,
    /// Permutation p-value; `None` when not testable.
    pub p_value: Option<f64>,
    /// Holm-adjusted p-value across the testable classes; `None` when not testable.
    pub p_adjusted: Option<f64>,
    /// `p_adjusted < alpha` (false when not testable).
    pub reject: bool,
}

/// Result of [`conditional_shift_test`].
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct CondTest {
    pub per_class: Vec<ClassTest>,
    /// Some class's Holm-adjusted p-value is below `alpha`.
    pub reject_any: bool,
    pub alpha: f64,
    pub permutations: usize,
    /// Classes with `testable` (Holm's m); 0 means nothing was tested, whatever `reject_any` says.
    pub testable_classes: usize,
    /// [`MIN_ROWS_PER_CLASS`], recorded with the result.
    pub min_rows_per_class: usize,
}

/// `S_XX` over the pool indices `x` of the Gram `k`.
fn block_sum(k: &Array2<f64>, x: &[usize]) -> f64 {
    x.iter().map(|&i| x.iter().map(|&j| k[[i, j]]).sum::<f64>()).sum()
}

/// Gaussian Gram of the rows `z` (m×d), in f64 through one GEMM.
fn gram<T: Real>(z: ArrayView2<T>, h: f64) -> Array2<f64> {
    let z = z.mapv(|v| v.to_f64_());
    let sq: Vec<f64> = z.rows().into_iter().map(|r| r.dot(&r)).collect();
    let mut g = z.dot(&z.t());
    for ((i, j), v) in g.indexed_iter_mut() {
        *v = (-(sq[i] + sq[j] - 2.0 * *v).max(0.0) / h).exp();
    }
    g
}

/// The statistic of one class from its pool Gram: rows `0..na` are sample a in the observed
/// labelling; `perm` (if any) relabels them.
struct Pool {
    k: Array2<f64>,
    rowsum: Vec<f64>,
    total: f64,
    na: usize,
    alpha: f64,
    beta: f64,
}

impl Pool {
    /// MCMD² when the rows `a_rows` form sample a (the rest sample b).
    fn stat(&self, a_rows: &[usize], b_rows: &[usize]) -> f64 {
        let (small, small_is_a) =
            if a_rows.len() <= b_rows.len() { (a_rows, true) } else { (b_rows, false) };
        let sxx = block_sum(&self.k, small);
        let rx: f64 = small.iter().map(|&i| self.rowsum[i]).sum();
        let sxy = rx - sxx;
        let syy = self.total - 2.0 * rx + sxx;
        let (saa, sbb) = if small_is_a { (sxx, syy) } else { (syy, sxx) };
        saa / (self.alpha * self.alpha) + sbb / (self.beta * self.beta)
            - 2.0 * sxy / (self.alpha * self.beta)
    }
}

fn check_rows<T>(z: ArrayView2<T>, y: &[usize], c: usize, what: &'static str) -> Result<()> {
    if z.nrows() != y.len() {
        return Err(Error::Shape {
            what: format!("{what} assignments"),
            expected: z.nrows().to_string(),
            found: y.len().to_string(),
        });
    }
    if let Some((i, &k)) = y.iter().enumerate().find(|(_, &k)| k >= c) {
        let name = if what == "source" { "source assignment" } else { "target assignment" };
        return Err(Error::param(name, format!("{k} (row {i})"), format!("must be < {c} classes")));
    }
    Ok(())
}

/// Errors of [`conditional_shift_test`]'s settings.
fn check_params(p: &CondTestParams) -> Result<()> {
    if p.permutations == 0 {
        return Err(Error::param("permutations", 0, "need at least 1 permutation"));
    }
    for (name, v) in [("eps", p.eps), ("bandwidth", p.h)] {
        if !(v.is_finite() && v > 0.0) {
            return Err(Error::param(name, v, "must be finite and > 0"));
        }
    }
    if !(p.alpha > 0.0 && p.alpha < 1.0) {
        return Err(Error::param("alpha", p.alpha, "must lie in (0, 1)"));
    }
    Ok(())
}

/// Class `k`: its statistic and permutation p-value, or "not testable" when a side has fewer
/// than [`MIN_ROWS_PER_CLASS`] rows (p_adjusted and reject are set by the caller's Holm step).
fn test_class<T: Real>(
    za: ArrayView2<T>,
    ya: &[usize],
    zb: ArrayView2<T>,
    yb: &[usize],
    k: usize,
    p: &CondTestParams,
) -> ClassTest {
    let ia: Vec<usize> = (0..ya.len()).filter(|&i| ya[i] == k).collect();
    let ib: Vec<usize> = (0..yb.len()).filter(|&i| yb[i] == k).collect();
    let testable = ia.len() >= MIN_ROWS_PER_CLASS && ib.len() >= MIN_ROWS_PER_CLASS;
    let mut out = ClassTest {
        class: k,
        n_source: ia.len(),
        n_target: ib.len(),
        testable,
        mcmd2: None,
        p_value: None,
        p_adjusted: None,
        reject: false,
    };
    if !testable {
        return out;
    }
    let pooled = ndarray::concatenate![Axis(0), za.select(Axis(0), &ia), zb.select(Axis(0), &ib)];
    let kmat = gram(pooled.view(), p.h);
    let rowsum: Vec<f64> = kmat.rows().into_iter().map(|r| r.sum()).collect();
    let pool = Pool {
        total: rowsum.iter().sum(),
        rowsum,
        k: kmat,
        na: ia.len(),
        alpha: p.eps * za.nrows() as f64 + ia.len() as f64,
        beta: p.eps * zb.nrows() as f64 + ib.len() as f64,
    };
    let mut idx: Vec<usize> = (0..ia.len() + ib.len()).collect();
    let observed = pool.stat(&idx[..pool.na], &idx[pool.na..]);
    let mut rng =
        ChaCha8Rng::seed_from_u64(p.seed ^ (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut exceed = 0usize;
    for _ in 0..p.permutations {
        idx.shuffle(&mut rng);
        // Ties count as exceeding (conservative), with a relative tolerance for rounding.
        if pool.stat(&idx[..pool.na], &idx[pool.na..]) >= observed - 1e-12 * observed.abs() {
            exceed += 1;
        }
    }
    out.mcmd2 = Some(observed);
    out.p_value = Some((1 + exceed) as f64 / (1 + p.permutations) as f64);
    out
}

/// Per-class MCMD² permutation test of sample a (`za` n_a×d with hard assignments `ya`) against
/// sample b (`zb` n_b×d, `yb`), `c` classes; see the module doc. Classes with fewer than
/// [`MIN_ROWS_PER_CLASS`] rows on a side come back `testable: false` and are left out of Holm;
/// a result with `testable_classes == 0` tested nothing (callers that print a verdict should
/// refuse it, as `glshift shift test` does).
///
/// Errors: d mismatch, assignment lengths or values out of range, `permutations = 0`,
/// ε, h or α not finite and > 0 (α < 1).
pub fn conditional_shift_test<T: Real>(
    za: ArrayView2<T>,
    ya: &[usize],
    zb: ArrayView2<T>,
    yb: &[usize],
    c: usize,
    p: &CondTestParams,
) -> Result<CondTest> {
    if za.ncols() != zb.ncols() {
        return Err(Error::Shape {
            what: "conditional test: feature dimension of sample b".into(),
            expected: za.ncols().to_string(),
            found: zb.ncols().to_string(),
        });
    }
    check_rows(za, ya, c, "source")?;
    check_rows(zb, yb, c, "target")?;
    check_params(p)?;
    let mut per_class: Vec<ClassTest> =
        (0..c).into_par_iter().map(|k| test_class(za, ya, zb, yb, k, p)).collect();
    // Untestable classes have no p-value, so Holm's m counts the testable classes only.
    let adjusted = holm(&per_class.iter().map(|t| t.p_value).collect::<Vec<_>>());
    for (t, a) in per_class.iter_mut().zip(adjusted) {
        t.p_adjusted = a;
        t.reject = a.is_some_and(|a| a < p.alpha);
    }
    Ok(CondTest {
        reject_any: per_class.iter().any(|t| t.reject),
        testable_classes: per_class.iter().filter(|t| t.testable).count(),
        min_rows_per_class: MIN_ROWS_PER_CLASS,
        per_class,
        alpha: p.alpha,
        permutations: p.permutations,
    })
}

/// Holm's step-down adjusted p-values of the present entries (m = their number):
/// p̃_(i) = max_{j ≤ i} min(1, (m − j + 1) p_(j)); absent entries stay absent.
pub fn holm(p: &[Option<f64>]) -> Vec<Option<f64>> {
    let mut order: Vec<usize> = (0..p.len()).filter(|&i| p[i].is_some()).collect();
    order.sort_by(|&a, &b| p[a].unwrap().total_cmp(&p[b].unwrap()).then(a.cmp(&b)));
    let m = order.len();
    let mut out = vec![None; p.len()];
    let mut running: f64 = 0.0;
    for (j, &i) in order.iter().enumerate() {
        running = running.max(((m - j) as f64 * p[i].unwrap()).min(1.0));
        out[i] = Some(running);
    }
    out
}

#[cfg(test)]
mod tests;
