//! Active-set polishing of an interior-point solution of the BBSE QP.
//!
//! With `F` = the weights the solver left clearly positive, solve the equality-constrained
//! least squares `min ‖q − C_F w_F‖²  s.t.  p_Fᵀ w_F = 1` exactly through its KKT system
//!
//! ```text
//! [ 2C_FᵀC_F  −p_F ] [ w_F ]   [ 2C_Fᵀq ]
//! [ p_Fᵀ        0  ] [  λ  ] = [   1    ]
//! ```
//!
//! and keep the result only if it satisfies the KKT conditions of the full QP (`w_F ≥ 0`,
//! `ν = 2Cᵀ(Cw − q) − λp ≥ 0` on the zeroed set) and does not raise the objective.

use ndarray::{Array2, ArrayView2};

/// Weights at or below `t · max_k x_k` are guessed to be at their bound 0, for each `t` in
/// turn until a guess passes the checks. A degenerate bound (`w_k = 0` with multiplier 0)
/// leaves the interior point at up to a few 1e-6.
const ACTIVE: [f64; 4] = [1e-8, 1e-6, 1e-4, 1e-3];

/// Polished `w` (same length as `x`), or `None` if no guess passes the checks.
/// `cm` is c × m (columns of the QP variables), `q` length c, `ps` and `x` length m (x ≥ 0).
pub(crate) fn polish(cm: ArrayView2<f64>, q: &[f64], ps: &[f64], x: &[f64]) -> Option<Vec<f64>> {
    let top = x.iter().fold(0.0f64, |a, &b| a.max(b));
    ACTIVE.iter().find_map(|t| polish_at(cm, q, ps, x, t * top))
}

/// One polishing attempt with the active set `{k : x_k <= active}`.
fn polish_at(
    cm: ArrayView2<f64>,
    q: &[f64],
    ps: &[f64],
    x: &[f64],
    active: f64,
) -> Option<Vec<f64>> {
    let m = x.len();
    let free: Vec<usize> = (0..m).filter(|&k| x[k] > active).collect();
    let f = free.len();
    if f == 0 {
        return None;
    }
    let mut kkt = Array2::<f64>::zeros((f + 1, f + 1));
    let mut rhs = vec![0.0; f + 1];
    for (a, &i) in free.iter().enumerate() {
        for (b, &j) in free.iter().enumerate() {
            kkt[[a, b]] = 2.0 * cm.column(i).dot(&cm.column(j));
        }
        kkt[[a, f]] = -ps[i];
        kkt[[f, a]] = ps[i];
        rhs[a] = 2.0 * cm.column(i).iter().zip(q).map(|(u, v)| u * v).sum::<f64>();
    }
    rhs[f] = 1.0;
    let sol = solve_dense(kkt, rhs)?;
    let lambda = sol[f];
    let mut w = vec![0.0; m];
    for (a, &i) in free.iter().enumerate() {
        if sol[a] < 0.0 {
            return None;
        }
        w[i] = sol[a];
    }
    let obj = |w: &[f64]| -> f64 {
        (0..q.len())
            .map(|j| (cm.row(j).iter().zip(w).map(|(a, b)| a * b).sum::<f64>() - q[j]).powi(2))
            .sum()
    };
    let cw: Vec<f64> =
        (0..q.len()).map(|j| cm.row(j).iter().zip(&w).map(|(a, b)| a * b).sum()).collect();
    let grad: Vec<f64> = (0..m)
        .map(|k| 2.0 * (0..q.len()).map(|j| cm[[j, k]] * (cw[j] - q[j])).sum::<f64>())
        .collect();
    // size of the terms that cancel in ν, so that the sign test is relative to rounding
    let scale = (0..m)
        .map(|k| {
            2.0 * (0..q.len()).map(|j| cm[[j, k]].abs() * (cw[j].abs() + q[j].abs())).sum::<f64>()
        })
        .fold(f64::MIN_POSITIVE, f64::max);
    let dual_ok =
        (0..m).filter(|&k| x[k] <= active).all(|k| grad[k] - lambda * ps[k] >= -1e-9 * scale);
    let (o_new, o_old) = (obj(&w), obj(x));
    (dual_ok && o_new.is_finite() && o_new <= o_old + 1e-12 * o_old.max(1e-12)).then_some(w)
}

/// Gaussian elimination with partial pivoting; `None` if (numerically) singular.
fn solve_dense(mut a: Array2<f64>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    let norm = a.iter().fold(0.0f64, |s, v| s.max(v.abs()));
    for col in 0..n {
        let piv = (col..n).max_by(|&i, &j| a[[i, col]].abs().total_cmp(&a[[j, col]].abs()))?;
        let pivot = a[[piv, col]].abs();
        if pivot.is_nan() || pivot <= 1e-13 * norm {
            return None;
        }
        if piv != col {
            for k in 0..n {
                a.swap([piv, k], [col, k]);
            }
            b.swap(piv, col);
        }
        for i in col + 1..n {
            let factor = a[[i, col]] / a[[col, col]];
            for k in col..n {
                a[[i, k]] -= factor * a[[col, k]];
            }
            b[i] -= factor * b[col];
        }
    }
    for i in (0..n).rev() {
        let s: f64 = (i + 1..n).map(|k| a[[i, k]] * b[k]).sum();
        b[i] = (b[i] - s) / a[[i, i]];
    }
    b.iter().all(|v| v.is_finite()).then_some(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_solver_solves_and_detects_singular_systems() {
        let a = ndarray::array![[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0]];
        let x = [1.0, -2.0, 0.5];
        let b: Vec<f64> = (0..3).map(|i| (0..3).map(|k| a[[i, k]] * x[k]).sum()).collect();
        let sol = solve_dense(a, b).unwrap();
        for k in 0..3 {
            assert!((sol[k] - x[k]).abs() < 1e-14);
        }
        let sing = ndarray::array![[1.0, 2.0], [2.0, 4.0]];
        assert!(solve_dense(sing, vec![1.0, 2.0]).is_none());
    }

    #[test]
    fn polish_rejects_a_wrong_active_set() {
        // Unconstrained optimum w = (1, 1) with pˢ = (0.5, 0.5); a start that zeroes w_1 must
        // be refused (ν_1 < 0).
        let cm = ndarray::array![[0.5, 0.0], [0.0, 0.5]];
        assert!(polish(cm.view(), &[0.5, 0.5], &[0.5, 0.5], &[2.0, 0.0]).is_none());
        let w = polish(cm.view(), &[0.5, 0.5], &[0.5, 0.5], &[1.1, 0.9]).unwrap();
        assert!((w[0] - 1.0).abs() < 1e-14 && (w[1] - 1.0).abs() < 1e-14);
    }
}
