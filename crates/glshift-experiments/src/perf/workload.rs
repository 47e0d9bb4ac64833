//! The seeded synthetic workload of `glshift perf`: one J_TU + J_DU loss and gradient as a MUL
//! adaptation iteration computes it in its last stage (every target row confidently
//! pseudo-labelled, J_DU on the pooled rows).
//!
//! n rows in total: n_s = ⌈n/2⌉ source rows, n_t = ⌊n/2⌋ target rows, dimension d, c classes.
//! Class k has mean μ_k ~ N(0, I) (one draw per class, shared by both domains); a row of class
//! k is μ_k + 0.7·N(0, I), plus 0.3 on every coordinate in the target (a domain shift). Labels
//! are uniform over the classes; target labels play the pseudo-labels. Prior: uniform. h: the
//! mean pairwise squared distance of the pooled rows (the default rule); ε = 0.01/c; linear
//! label kernel (the defaults of `FitConfig`).

use crate::{Error, Result};
use glshift::kernel::{
    bandwidth, j_tu_du, j_tu_du_flops, DuRows, LabelKernel, Labelled, McmdEstimator, McmdParams,
    MulObjectives, TuDuGrad,
};
use glshift::nn::one_hot;
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use std::path::Path;

/// Inputs of one J_TU + J_DU evaluation.
#[derive(Clone, Debug)]
pub struct Workload {
    pub zs: Array2<f32>,
    pub ys: Array2<f32>,
    pub zt: Array2<f32>,
    pub yt: Array2<f32>,
    pub prior: Vec<f64>,
    pub params: McmdParams,
    pub h: f64,
}

impl Workload {
    /// The synthetic workload described in the module documentation. Errors when n < 2,
    /// d < 1 or c < 1.
    pub fn synthetic(n: usize, d: usize, c: usize, seed: u64) -> Result<Workload> {
        if n < 2 {
            return Err(Error::param(
                "n",
                n,
                "at least 2 rows are needed (one source, one target)",
            ));
        }
        if d < 1 {
            return Err(Error::param("d", d, "the feature dimension must be >= 1"));
        }
        if c < 1 {
            return Err(Error::param("c", c, "the number of classes must be >= 1"));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let means = Array2::from_shape_fn((c, d), |_| rng.sample::<f32, _>(StandardNormal));
        let (ns, nt) = (n.div_ceil(2), n / 2);
        let mut domain = |rows: usize, shift: f32| {
            let labels: Vec<usize> = (0..rows).map(|_| rng.random_range(0..c)).collect();
            let z = Array2::from_shape_fn((rows, d), |(i, j)| {
                means[[labels[i], j]] + shift + 0.7 * rng.sample::<f32, _>(StandardNormal)
            });
            (z, one_hot(&labels, c))
        };
        let (zs, ys) = domain(ns, 0.0);
        let (zt, yt) = domain(nt, 0.3);
        let h = bandwidth(&[zs.view(), zt.view()], 1.0)?;
        Ok(Workload {
            zs,
            ys,
            zt,
            yt,
            prior: vec![1.0 / c as f64; c],
            params: McmdParams { eps: 0.01 / c as f64, label_kernel: LabelKernel::Linear },
            h,
        })
    }

    /// Source and target as labelled views.
    pub fn views(&self) -> (Labelled<'_, f32>, Labelled<'_, f32>) {
        (
            Labelled::new(self.zs.view(), self.ys.view()),
            Labelled::new(self.zt.view(), self.yt.view()),
        )
    }

    fn spec(&self, est: McmdEstimator) -> MulObjectives<'_> {
        MulObjectives {
            prior: Some(&self.prior),
            du: Some(DuRows::Pooled),
            du_active: None,
            estimator: est,
        }
    }

    /// J_TU and pooled J_DU with their gradients.
    pub fn evaluate(&self, est: McmdEstimator) -> Result<TuDuGrad<f32>> {
        Ok(self.tu_du(est)?)
    }

    /// [`Workload::evaluate`] with the core's error (inside `glshift::device::scoped`).
    pub fn tu_du(&self, est: McmdEstimator) -> glshift::Result<TuDuGrad<f32>> {
        let (s, t) = self.views();
        j_tu_du(&s, &t, &self.spec(est), &self.params, self.h)
    }

    /// FLOPs of [`Workload::evaluate`].
    pub fn flops(&self, est: McmdEstimator) -> Result<f64> {
        let (s, t) = self.views();
        Ok(j_tu_du_flops(&s, &t, &self.spec(est), &self.params, self.h)?)
    }

    /// Writes the inputs (`zs.npy`, `ys.npy`, `zt.npy`, `yt.npy` f32, `prior.npy` f64,
    /// `meta.json` with h, ε and the label kernel) and, when given, our results
    /// (`ours_tu_grad_s.npy`, `ours_tu_grad_t.npy`, `ours_du_grad_s.npy`, `ours_du_grad_t.npy`,
    /// values in `meta.json`) into `dir`, for the Python peers.
    pub fn write_npy(&self, dir: &Path, ours: Option<&TuDuGrad<f32>>) -> Result<()> {
        let w = |name: &str, a: &Array2<f32>| {
            let path = dir.join(name);
            ndarray_npy::write_npy(&path, a)
                .map_err(|e| Error::Write { path, reason: e.to_string() })
        };
        w("zs.npy", &self.zs)?;
        w("ys.npy", &self.ys)?;
        w("zt.npy", &self.zt)?;
        w("yt.npy", &self.yt)?;
        let prior_path = dir.join("prior.npy");
        ndarray_npy::write_npy(&prior_path, &ndarray::Array1::from(self.prior.clone()))
            .map_err(|e| Error::Write { path: prior_path.clone(), reason: e.to_string() })?;
        let mut meta = serde_json::json!({
            "h": self.h,
            "eps": self.params.eps,
            "label_kernel": self.params.label_kernel,
        });
        if let Some(r) = ours {
            for (name, g) in [("tu", &r.tu), ("du", &r.du)] {
                if let Some(g) = g {
                    w(&format!("ours_{name}_grad_s.npy"), &g.grad_s)?;
                    w(&format!("ours_{name}_grad_t.npy"), &g.grad_t)?;
                    meta[format!("ours_{name}")] = serde_json::json!(g.value);
                }
            }
        }
        let path = dir.join("meta.json");
        std::fs::write(&path, serde_json::to_string_pretty(&meta).expect("json"))
            .map_err(|e| Error::Write { path, reason: e.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_workload_is_seeded_and_validates_its_sizes() {
        let a = Workload::synthetic(50, 4, 3, 1).unwrap();
        let b = Workload::synthetic(50, 4, 3, 1).unwrap();
        assert_eq!((a.zs.dim(), a.zt.dim(), a.ys.dim()), ((25, 4), (25, 4), (25, 3)));
        assert_eq!(a.zs, b.zs);
        assert_ne!(a.zs, Workload::synthetic(50, 4, 3, 2).unwrap().zs);
        for (n, d, c) in [(1, 4, 3), (10, 0, 3), (10, 4, 0)] {
            assert!(
                matches!(Workload::synthetic(n, d, c, 0), Err(Error::Param { .. })),
                "{n} {d} {c}"
            );
        }
        let r = a.evaluate(McmdEstimator::Exact).unwrap();
        assert!(r.tu.unwrap().value > 0.0 && r.du.unwrap().value > 0.0);
        assert!(a.flops(McmdEstimator::Exact).unwrap() > 0.0);
    }
}
