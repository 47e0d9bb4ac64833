//! A fitted model: everything a prediction on new rows needs, and what the fit estimated.
//!
//! Prediction for raw feature rows X (`n × d`): X ↦ preprocess(X) with the source statistics ↦
//! G (BatchNorm with statistics frozen from the source training rows) ↦ Z (`n × z_dim`) ↦
//! F ↦ softmax (`n × c`). On the fit's own target rows this reproduces the fit's probabilities
//! bit for bit.

use ndarray::{Array2, ArrayView2};
use serde::{Deserialize, Serialize};

use super::target_match::TargetSample;
use crate::config::FitConfig;
use crate::data::{check_features, PreprocessStats, Rows};
use crate::nn::{argmax_row, softmax, BnStats, Network};
use crate::train::Fitted;
use crate::train::IterRecord;
use crate::{Error, Result};

/// What a model records about its fit besides the arrays: settings, classes, estimates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelInfo {
    /// glshift version that trained the model.
    pub glshift_version: String,
    pub config: FitConfig,
    /// `c` names; class `k` is `class_names[k]`.
    pub class_names: Vec<String>,
    /// Feature dimension d the model takes.
    pub input_dim: usize,
    /// Source class prior pˢ over all source rows, length c.
    pub source_prior: Vec<f64>,
    /// Estimated target prior p̂ᵗ (label-shift methods; `label_shift.prior_estimator`, as in
    /// `report.json`), length c.
    pub target_prior: Option<Vec<f64>>,
    /// Importance weights training used (the training loop's last estimate ŵ, whose prior
    /// ŵ ⊙ pˢ is `target_prior` only with `prior_estimator = "tracker"`), length c.
    pub importance_weights: Option<Vec<f64>>,
    pub n_source_train: usize,
    pub n_source_holdout: usize,
    pub n_target: usize,
    /// What every training iteration measured.
    pub history: Vec<IterRecord>,
    /// Whether the fit's prior guard trusted the label-shift estimate on its target (`None`:
    /// no guard ran, or a file from before this field; absent from the file then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_guard_trusted: Option<bool>,
    /// Where the guard distrusted it and the fit adapted under the adaptation check: whether
    /// the check kept the adaptation (`None` otherwise; absent from the file then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptation_kept: Option<bool>,
    /// Rows of the fitted target the model keeps for the batch target test (format version 3;
    /// 0 in earlier files, absent from the file then).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub n_target_sample: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A trained model: preprocessing statistics, network G + F, BatchNorm statistics frozen from
/// the source training rows, and [`ModelInfo`]. Saved and loaded with
/// [`FittedModel::save`] / [`FittedModel::load`] (`model::file`).
#[derive(Clone, Debug, PartialEq)]
pub struct FittedModel {
    pub(super) info: ModelInfo,
    pub(super) preprocess: PreprocessStats,
    pub(super) network: Network,
    /// One entry per block of G; `Some` exactly for the blocks with BatchNorm.
    pub(super) bn_stats: Vec<Option<BnStats<f32>>>,
    /// The source hold-out's outputs (format version 2; `None` in version-1 files and for
    /// fits without a hold-out): what [`FittedModel::adapt_batch`] estimates from.
    pub(super) holdout: Option<SourceHoldout>,
    /// A seeded sample of the fitted target's preprocessed rows and probabilities (format version 3; `None` in
    /// earlier files): what a batch is compared with ([`super::target_match`]).
    pub(super) target: Option<TargetSample>,
}

/// The final model's plain softmax probabilities on the source hold-out rows (`n_h × c`) and
/// their labels (`n_h`, each `< c`): the labelled reference of BBSE and MLLS on a new batch.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct SourceHoldout {
    pub probs: Array2<f32>,
    pub labels: Vec<usize>,
}

impl FittedModel {
    /// Freezes a finished fit. `source_x` are the *preprocessed* source rows in input order
    /// (`n_s × d`, in memory or read from a file) and `source_y` their labels; the training rows
    /// among them (all but `fitted.holdout_rows`, increasing, as the fit laid them out) give
    /// BatchNorm's statistics, computed where the rows are (no gathered copy); the hold-out's
    /// probabilities and labels are kept for batch adaptation. `class_names` has the `c` names;
    /// `target_prior` is the reported estimate (see [`ModelInfo::target_prior`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn from_fit(
        cfg: &FitConfig,
        class_names: &[String],
        preprocess: PreprocessStats,
        source_x: Rows,
        (source_y, target_x): (&[usize], &Rows),
        fitted: &Fitted,
        target_prior: Option<Vec<f64>>,
    ) -> Result<Self> {
        let mut is_hold = vec![false; source_x.nrows()];
        fitted.holdout_rows.iter().for_each(|&i| is_hold[i] = true);
        let all_train: Vec<usize> = (0..source_x.nrows()).filter(|&i| !is_hold[i]).collect();
        // A mini-batch fit evaluated with the statistics of a sample of them; freeze the same.
        let train_rows = fitted.bn_stats_rows.clone().unwrap_or(all_train);
        let bn_stats = match source_x.memory() {
            Some(x) => fitted.network.batch_norm_stats_rows(x, &train_rows),
            // Rows in a file: the same rows, read (a sample of them: a mini-batch fit).
            None => {
                let x = source_x.gather(&train_rows)?;
                fitted.network.batch_norm_stats_rows(x.view(), &(0..x.nrows()).collect::<Vec<_>>())
            }
        };
        let shift = fitted.shift.as_ref();
        let info = ModelInfo {
            glshift_version: env!("CARGO_PKG_VERSION").to_string(),
            config: cfg.clone(),
            class_names: class_names.to_vec(),
            input_dim: source_x.ncols(),
            source_prior: fitted.source_prior.clone(),
            target_prior,
            importance_weights: shift.map(|s| s.weights.clone()),
            n_source_train: fitted.n_train,
            n_source_holdout: fitted.n_holdout,
            n_target: target_x.nrows(),
            history: fitted.history.clone(),
            prior_guard_trusted: fitted.prior_guard.as_ref().map(|g| g.trusted),
            adaptation_kept: fitted.adaptation_check.as_ref().map(|c| c.kept),
            n_target_sample: 0,
        };
        let holdout = (!fitted.holdout_rows.is_empty()).then(|| SourceHoldout {
            probs: fitted.holdout_probs.clone(),
            labels: fitted.holdout_labels(source_y),
        });
        let target = TargetSample::from_fit(target_x, fitted.target_probs.view(), cfg.seed)?;
        let info =
            ModelInfo { n_target_sample: target.as_ref().map_or(0, |t| t.x().nrows()), ..info };
        let model = FittedModel {
            info,
            preprocess,
            network: fitted.network.clone(),
            bn_stats,
            holdout,
            target,
        };
        model.check_consistent("the fitted model")?;
        Ok(model)
    }

    /// Class probabilities (`n × c`, rows sum to 1) for raw feature rows `x` (`n × d`).
    /// Errors: another feature dimension, no rows, a NaN/Inf value.
    pub fn predict_proba(&self, x: ArrayView2<f32>) -> Result<Array2<f32>> {
        Ok(softmax(self.outputs(x)?.1.view()))
    }

    /// Predicted class index (`< c`) per row of `x` (`n × d`).
    pub fn predict(&self, x: ArrayView2<f32>) -> Result<Vec<usize>> {
        let p = self.predict_proba(x)?;
        Ok(p.rows().into_iter().map(|r| argmax_row(r).0).collect())
    }

    /// The representation Z = G(x) (`n × z_dim`) the adaptation aligned.
    pub fn transform(&self, x: ArrayView2<f32>) -> Result<Array2<f32>> {
        Ok(self.outputs(x)?.0)
    }

    /// Raw rows `x` (`n × d`, finite) preprocessed as the fit preprocessed its rows.
    pub(super) fn preprocessed(&self, x: ArrayView2<f32>) -> Result<Array2<f32>> {
        if x.ncols() != self.info.input_dim {
            return Err(Error::Shape {
                what: "feature columns of the rows to predict vs the model's".into(),
                expected: self.info.input_dim.to_string(),
                found: x.ncols().to_string(),
            });
        }
        check_features("rows to predict", x)?;
        let mut xp = x.to_owned();
        self.preprocess.apply(&mut xp)?;
        Ok(xp)
    }

    /// `(Z, logits)` for raw rows: checks, preprocesses, runs G + F in evaluation mode.
    fn outputs(&self, x: ArrayView2<f32>) -> Result<(Array2<f32>, Array2<f32>)> {
        let xp = self.preprocessed(x)?;
        let (z, logits) = self.network.eval_frozen(xp.view(), &self.bn_stats);
        // Finite weights can still overflow on extreme rows; never return NaN probabilities.
        if let Some(i) = logits.rows().into_iter().position(|r| r.iter().any(|v| !v.is_finite())) {
            return Err(Error::numerical(
                "prediction",
                format!("row {i} gives non-finite outputs (its features are far outside the training range?)"),
            ));
        }
        Ok((z, logits))
    }

    /// Estimated target class prior p̂ᵗ (length c), for the label-shift methods.
    pub fn target_prior(&self) -> Option<&[f64]> {
        self.info.target_prior.as_deref()
    }

    /// Importance weights w(y) = p̂ᵗ(y) / pˢ(y) (length c), for the label-shift methods.
    pub fn importance_weights(&self) -> Option<&[f64]> {
        self.info.importance_weights.as_deref()
    }

    /// Source class prior pˢ (length c).
    pub fn source_prior(&self) -> &[f64] {
        &self.info.source_prior
    }

    pub fn history(&self) -> &[IterRecord] {
        &self.info.history
    }

    pub fn config(&self) -> &FitConfig {
        &self.info.config
    }

    pub fn class_names(&self) -> &[String] {
        &self.info.class_names
    }

    pub fn n_classes(&self) -> usize {
        self.info.class_names.len()
    }

    /// Feature dimension d the model takes.
    pub fn input_dim(&self) -> usize {
        self.info.input_dim
    }

    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// The network G + F (without the frozen statistics).
    pub fn network(&self) -> &Network {
        &self.network
    }

    /// Checks that the parts agree (dimensions, class count, statistics per BatchNorm block,
    /// priors' lengths, finite values), so that prediction cannot panic. `what` names the
    /// model (its file) in errors.
    pub(super) fn check_consistent(&self, what: &str) -> Result<()> {
        self.check_shapes(what)?;
        self.check_bn_stats(what)?;
        self.check_kept_rows(what)?;
        self.check_finite(what)
    }

    /// Dimensions, class count and the priors' lengths agree.
    fn check_shapes(&self, what: &str) -> Result<()> {
        let bad = |reason: String| Error::bad_data(what, reason);
        let (i, net) = (&self.info, &self.network);
        let c = i.class_names.len();
        if net.input_dim() != i.input_dim || self.preprocess.dim != i.input_dim {
            return Err(bad(format!(
                "input dimension: header {}, network {}, preprocessing {}",
                i.input_dim,
                net.input_dim(),
                self.preprocess.dim
            )));
        }
        if net.n_classes() != c || i.source_prior.len() != c {
            return Err(bad(format!(
                "{c} class names, but the network has {} outputs and the source prior {} entries",
                net.n_classes(),
                i.source_prior.len()
            )));
        }
        for (name, v) in
            [("target_prior", &i.target_prior), ("importance_weights", &i.importance_weights)]
        {
            if v.as_ref().is_some_and(|v| v.len() != c || v.iter().any(|x| !x.is_finite())) {
                return Err(bad(format!("{name} must hold {c} finite values")));
            }
        }
        Ok(())
    }

    /// One BatchNorm statistics entry per block, of the block's width.
    fn check_bn_stats(&self, what: &str) -> Result<()> {
        let bad = |reason: String| Error::bad_data(what, reason);
        let net = &self.network;
        if self.bn_stats.len() != net.g.blocks.len() {
            return Err(bad(format!(
                "{} BatchNorm statistics entries for {} blocks",
                self.bn_stats.len(),
                net.g.blocks.len()
            )));
        }
        for (l, (block, st)) in net.g.blocks.iter().zip(&self.bn_stats).enumerate() {
            let width = block.linear.out_dim();
            let ok = match (&block.bn, st) {
                (Some(_), Some(s)) => s.mean.len() == width && s.rstd.len() == width,
                (None, None) => true,
                _ => false,
            };
            if !ok {
                return Err(bad(format!(
                    "block {l}: BatchNorm statistics do not match the layer (width {width})"
                )));
            }
        }
        Ok(())
    }

    /// The kept source hold-out and target sample have the header's shapes.
    fn check_kept_rows(&self, what: &str) -> Result<()> {
        let bad = |reason: String| Error::bad_data(what, reason);
        let i = &self.info;
        let c = i.class_names.len();
        if let Some(h) = &self.holdout {
            let n_h = i.n_source_holdout;
            let shape_ok =
                h.probs.ncols() == c && h.probs.nrows() == n_h && h.labels.len() == n_h && n_h > 0;
            if !shape_ok
                || h.labels.iter().any(|&y| y >= c)
                || h.probs.iter().any(|v| !(v.is_finite() && *v >= 0.0))
            {
                return Err(bad(format!("the source hold-out must be {n_h} × {c} finite probabilities with {n_h} labels below {c}")));
            }
        }
        if let Some(t) = &self.target {
            let m = i.n_target_sample;
            t.check(i.input_dim, c)
                .and_then(|()| {
                    if t.x().nrows() == m {
                        Ok(())
                    } else {
                        Err(format!(
                            "the target sample has {} rows, the header says {m}",
                            t.x().nrows()
                        ))
                    }
                })
                .map_err(bad)?;
        }
        Ok(())
    }

    /// No parameter or statistic is NaN or infinite.
    fn check_finite(&self, what: &str) -> Result<()> {
        let bad = |reason: String| Error::bad_data(what, reason);
        let net = &self.network;
        let stats_finite = self
            .bn_stats
            .iter()
            .flatten()
            .all(|s| s.mean.iter().chain(&s.rstd).all(|v| v.is_finite()));
        let pre_finite =
            self.preprocess.mean.iter().chain(&self.preprocess.scale).all(|v| v.is_finite());
        let params_finite = net.params().iter().all(|(_, t)| t.iter().all(|v| v.is_finite()));
        if !(params_finite && stats_finite && pre_finite) {
            return Err(bad("a parameter or statistic is NaN or infinite".into()));
        }
        Ok(())
    }
}
