//! BBSE as a QP (eq. `BBSE_QP_estimation`), solved with clarabel.

use clarabel::algebra::CscMatrix;
use clarabel::solver::{DefaultSettings, DefaultSolver, IPSolver, SolverStatus, SupportedConeT::*};
use ndarray::{ArrayView2, Axis};

use super::polish::polish;
use super::prior::{check_len, check_prior};
use super::ShiftEstimate;
use crate::{Error, Result};

const WHAT: &str = "BBSE QP (clarabel)";

/// BBSE in its QP form (Lipton et al. 2018; Combes et al. 2020), eq. `BBSE_QP_estimation`:
///
/// ```text
/// ŵ = argmin_w ‖q − C w‖²  s.t.  w ≥ 0,  wᵀpˢ = 1;     p̂ᵗ = ŵ ⊙ pˢ
/// ```
///
/// - `confusion`: `C` (c × c), `C_jk = P̂(ŷ = j | y = k) · pˢ_k` (see [`super::confusion_matrix`]);
/// - `q`: `q_j = P̂_target(ŷ = j)` (length c);
/// - `source_prior`: `pˢ` (length c, ≥ 0, sums to 1).
///
/// clarabel form: `min ½ wᵀPw + q_linᵀw` with `P = 2CᵀC`, `q_lin = −2Cᵀq`, one equality row
/// `pˢᵀw = 1` (zero cone) and `−w + s = 0, s ≥ 0` (nonnegative cone). Tolerances are tightened
/// (gap 1e-13, feasibility 1e-12) so that weights that should be 0 come out below 1e-9; if that
/// does not reach `Solved`, the solve is repeated with clarabel's defaults. The interior-point
/// solution is then polished on its guessed active set (module `polish`): this makes
/// zero weights exactly 0 even where the bound is degenerate (`w_k = 0` with zero multiplier,
/// where the interior point stalls between 1e-7 and 1e-5). A class with
/// `pˢ_k = 0` does not enter the QP and gets `w_k = 0`. The returned `w` is clipped at 0 and
/// rescaled so that `wᵀpˢ = 1` holds to rounding; `objective = ‖q − C w‖²` for that `w`.
pub fn bbse_qp(
    confusion: ArrayView2<f64>,
    q: &[f64],
    source_prior: &[f64],
) -> Result<ShiftEstimate> {
    check_inputs(confusion, q, source_prior)?;
    let c = source_prior.len();
    // Variables: w_k for the classes with pˢ_k > 0.
    let cls: Vec<usize> = (0..c).filter(|&k| source_prior[k] > 0.0).collect();
    let mut x = solve_qp(&Qp::new(confusion, q, source_prior, &cls))?;
    x.iter_mut().for_each(|v| *v = v.max(0.0));
    let sub = confusion.select(Axis(1), &cls);
    let ps_sub: Vec<f64> = cls.iter().map(|&k| source_prior[k]).collect();
    if let Some(polished) = polish(sub.view(), q, &ps_sub, &x) {
        x = polished;
    }
    let mut weights = vec![0.0; c];
    for (&k, &v) in cls.iter().zip(&x) {
        weights[k] = v;
    }
    let s: f64 = weights.iter().zip(source_prior).map(|(w, p)| w * p).sum();
    if !(s.is_finite() && s > 0.0) {
        return Err(Error::numerical(WHAT, format!("solution has wᵀpˢ = {s}")));
    }
    weights.iter_mut().for_each(|w| *w /= s);
    let target_prior: Vec<f64> = weights.iter().zip(source_prior).map(|(w, p)| w * p).collect();
    let objective = (0..c)
        .map(|j| {
            (q[j] - confusion.row(j).iter().zip(&weights).map(|(a, w)| a * w).sum::<f64>()).powi(2)
        })
        .sum();
    Ok(ShiftEstimate {
        weights,
        target_prior,
        objective: Some(objective),
        warnings: Vec::new(),
        iterations: None,
    })
}

/// Shapes agree with `c = pˢ.len() ≥ 1`, pˢ is a distribution, and every entry is finite.
fn check_inputs(confusion: ArrayView2<f64>, q: &[f64], source_prior: &[f64]) -> Result<()> {
    let c = source_prior.len();
    if c == 0 {
        return Err(Error::bad_data("source prior", "no classes"));
    }
    if confusion.dim() != (c, c) {
        return Err(Error::Shape {
            what: "BBSE confusion matrix".into(),
            expected: format!("{c} × {c} (c from the source prior)"),
            found: format!("{} × {}", confusion.nrows(), confusion.ncols()),
        });
    }
    check_len(q.len(), c, "predicted target distribution q")?;
    check_prior(source_prior, c, "source prior")?;
    if confusion.iter().any(|v| !v.is_finite()) {
        return Err(Error::bad_data("BBSE confusion matrix", "contains NaN or Inf"));
    }
    if let Some(v) = q.iter().find(|v| !v.is_finite()) {
        return Err(Error::bad_data(
            "predicted target distribution q",
            format!("entry {v} is not finite"),
        ));
    }
    Ok(())
}

/// The QP in clarabel's form over the classes `cls` (those with pˢ_k > 0): `P = 2CᵀC` (upper
/// triangle), `q_lin = −2Cᵀq`, and `A = [pˢᵀ; −I]`, `b = [1; 0]` for one zero cone and m
/// nonnegative ones.
struct Qp {
    p: CscMatrix<f64>,
    lin: Vec<f64>,
    a: CscMatrix<f64>,
    b: Vec<f64>,
    m: usize,
}

impl Qp {
    fn new(confusion: ArrayView2<f64>, q: &[f64], source_prior: &[f64], cls: &[usize]) -> Qp {
        let m = cls.len();
        let (mut pi, mut pj, mut pv) = (Vec::new(), Vec::new(), Vec::new());
        for a in 0..m {
            for b in a..m {
                pi.push(a);
                pj.push(b);
                pv.push(2.0 * confusion.column(cls[a]).dot(&confusion.column(cls[b])));
            }
        }
        let p = CscMatrix::new_from_triplets(m, m, pi, pj, pv);
        let lin: Vec<f64> = cls
            .iter()
            .map(|&k| -2.0 * confusion.column(k).iter().zip(q).map(|(a, b)| a * b).sum::<f64>())
            .collect();
        let (mut ai, mut aj, mut av) = (Vec::new(), Vec::new(), Vec::new());
        for (a, &k) in cls.iter().enumerate() {
            ai.extend([0, a + 1]);
            aj.extend([a, a]);
            av.extend([source_prior[k], -1.0]);
        }
        let a = CscMatrix::new_from_triplets(m + 1, m, ai, aj, av);
        let mut b = vec![0.0; m + 1];
        b[0] = 1.0;
        Qp { p, lin, a, b, m }
    }
}

/// clarabel's solution of `qp`: with tight tolerances, else (not `Solved`) with its defaults;
/// an error unless one is (almost) solved with finite entries.
fn solve_qp(qp: &Qp) -> Result<Vec<f64>> {
    let cones = [ZeroConeT(1), NonnegativeConeT(qp.m)];
    let tight = DefaultSettings {
        verbose: false,
        tol_gap_abs: 1e-13,
        tol_gap_rel: 1e-13,
        tol_feas: 1e-12,
        ..DefaultSettings::default()
    };
    let loose = DefaultSettings { verbose: false, ..DefaultSettings::default() };
    let solve = |settings| -> Result<(SolverStatus, Vec<f64>)> {
        let mut solver = DefaultSolver::new(&qp.p, &qp.lin, &qp.a, &qp.b, &cones, settings)
            .map_err(|e| Error::numerical(WHAT, format!("setup failed: {e}")))?;
        solver.solve();
        Ok((solver.solution.status, solver.solution.x.clone()))
    };
    let (status, mut x) = solve(tight)?;
    if status != SolverStatus::Solved {
        let (status2, x2) = solve(loose)?;
        if !matches!(status2, SolverStatus::Solved | SolverStatus::AlmostSolved) {
            return Err(Error::numerical(
                WHAT,
                format!("status {status} with tight tolerances, {status2} with default tolerances"),
            ));
        }
        x = x2;
    }
    if x.iter().any(|v| !v.is_finite()) {
        return Err(Error::numerical(WHAT, "solution contains NaN or Inf"));
    }
    Ok(x)
}
