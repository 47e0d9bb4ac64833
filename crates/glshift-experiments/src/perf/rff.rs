//! Inputs of the random-feature error measurement of `glshift perf`: Office-Caltech10 features
//! and network representations, and the synthetic workload, each with the exact and the
//! random-feature J_TU and J_DU.

use std::path::Path;
use std::time::Instant;

use glshift::kernel::{self, DuRows, Labelled, McmdEstimator, McmdParams, MulObjectives};

use super::Workload;
use crate::{Error, Result};
use glshift::nn::one_hot;

/// Inputs of the random-feature error measurement.
pub struct RffInput {
    pub zs: ndarray::Array2<f32>,
    pub ys: ndarray::Array2<f32>,
    pub zt: ndarray::Array2<f32>,
    pub yt: ndarray::Array2<f32>,
    pub prior: Vec<f64>,
    pub params: McmdParams,
    pub h: f64,
}

impl RffInput {
    /// ((J_TU, J_DU), seconds) with the pooled J_DU.
    pub fn eval(&self, est: McmdEstimator) -> Result<((f64, f64), f64)> {
        let (s, t) = (
            Labelled::new(self.zs.view(), self.ys.view()),
            Labelled::new(self.zt.view(), self.yt.view()),
        );
        let spec = MulObjectives {
            prior: Some(&self.prior),
            du: Some(DuRows::Pooled),
            du_active: None,
            estimator: est,
        };
        let t0 = Instant::now();
        let r = kernel::j_tu_du(&s, &t, &spec, &self.params, self.h)?;
        let secs = t0.elapsed().as_secs_f64();
        Ok(((r.tu.expect("tu").value, r.du.expect("du").value), secs))
    }
}

/// Office-Caltech10 A→W and C→A: z-scored features (source statistics), source labels,
/// target pseudo-labels from the nearest source class mean (target labels are not read),
/// prior = the pseudo-labels' class proportions, ε = 0.01/c, linear label kernel.
pub fn office_caltech_sets(dir: &Path) -> Result<Vec<(String, RffInput)>> {
    if !dir.join("amazon_features.npy").exists() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for (s_name, t_name) in [("amazon", "webcam"), ("caltech", "amazon")] {
        let (src, tgt) = glshift::data::load_pair(dir, s_name, t_name)?;
        let c = src.n_classes();
        let (mut xs, mut xt) = (src.features.clone(), tgt.features.clone());
        glshift::data::preprocess(&mut xs, &mut xt, glshift::data::Preprocess::ZScore)?;
        let ls = src
            .labels
            .clone()
            .ok_or_else(|| Error::bad_data(s_name.to_string(), "has no labels"))?;
        let mut means = ndarray::Array2::<f32>::zeros((c, xs.ncols()));
        let mut counts = vec![0f32; c];
        for (row, &k) in xs.rows().into_iter().zip(&ls) {
            let mut m = means.row_mut(k);
            m += &row;
            counts[k] += 1.0;
        }
        for (mut m, &cnt) in means.rows_mut().into_iter().zip(&counts) {
            m /= cnt.max(1.0);
        }
        let pseudo: Vec<usize> = xt
            .rows()
            .into_iter()
            .map(|row| {
                (0..c)
                    .min_by(|&a, &b| {
                        let da = (&row - &means.row(a)).mapv(|v| v * v).sum();
                        let db = (&row - &means.row(b)).mapv(|v| v * v).sum();
                        da.total_cmp(&db)
                    })
                    .expect("c >= 1")
            })
            .collect();
        let prior = glshift::label_shift::class_prior(&pseudo, c)?;
        let h = kernel::bandwidth(&[xs.view(), xt.view()], 1.0)?;
        out.push((
            format!("Office-Caltech10 {s_name}→{t_name} (d = {})", xs.ncols()),
            RffInput {
                ys: one_hot(&ls, c),
                yt: one_hot(&pseudo, c),
                zs: xs,
                zt: xt,
                prior,
                params: McmdParams {
                    eps: 0.01 / c as f64,
                    label_kernel: kernel::LabelKernel::Linear,
                },
                h,
            },
        ));
        out.push(network_z_set(&src, &tgt, s_name, t_name)?);
    }
    Ok(out)
}

/// The representation MUL's kernel actually sees: Z = G(x) of a network pre-trained on the
/// source (`source` method, default settings, seed 0), source labels, target pseudo-labels =
/// that network's predictions (target labels are not read), prior = their proportions, the
/// bandwidth rule of `mul` (multiplier 1) and ε = 0.01/c.
fn network_z_set(
    src: &glshift::data::Domain,
    tgt: &glshift::data::Domain,
    s_name: &str,
    t_name: &str,
) -> Result<(String, RffInput)> {
    let cfg = glshift::config::FitConfig {
        method: glshift::methods::MethodKind::Source,
        ..Default::default()
    };
    let run = glshift::pipeline::run(src, tgt, &cfg, &mut |_| {})?;
    let c = src.n_classes();
    let pseudo = run.predictions();
    let prior = glshift::label_shift::class_prior(&pseudo, c)?;
    let h = kernel::bandwidth(&[run.source_z.view(), run.target_z.view()], 1.0)?;
    Ok((
        format!("Office-Caltech10 {s_name}→{t_name}, network Z (d = {})", run.source_z.ncols()),
        RffInput {
            ys: one_hot(&run.source_labels, c),
            yt: one_hot(&pseudo, c),
            zs: run.source_z,
            zt: run.target_z,
            prior,
            params: McmdParams { eps: 0.01 / c as f64, label_kernel: kernel::LabelKernel::Linear },
            h,
        },
    ))
}

impl RffInput {
    /// The synthetic workload with a uniform prior over its 65 classes: n = 20000, dimension `d`.
    pub fn synthetic(d: usize, seed: u64) -> Result<(String, RffInput)> {
        let mut w = Workload::synthetic(20_000, d, 65, seed)?;
        w.prior = vec![1.0 / 65.0; 65];
        let Workload { zs, ys, zt, yt, prior, params, h } = w;
        Ok((
            format!("synthetic n = 20000, d = {d}, c = 65"),
            RffInput { zs, ys, zt, yt, prior, params, h },
        ))
    }
}
