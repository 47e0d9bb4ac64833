//! Cross-fitted probabilities for the label-shift estimators.
//!
//! With one stratified hold-out, only the held-out rows (20% of the source) give the
//! estimators their confusion matrix and their calibration. Cross-fitting uses every source
//! row: the source is split into `k` stratified folds ([`stratified_folds`]) and model `m` is
//! the usual `source` fit ([`pipeline::run_with_holdout`]) with fold `m` as its hold-out (it
//! stops pre-training on fold `m` and never trains on it). Each source row gets the
//! probabilities of the one model that did not train on it (out of fold).
//!
//! The target must be scored by the *same* classifier whose source behaviour the estimators
//! measured. The out-of-fold probabilities come from a randomised classifier: "the fold model
//! of a row that it did not train on", each model serving a `1/k` share. The target rows are
//! therefore dealt to the `k` models in the same way (seeded, balanced), so that
//! `P(probabilities | y)` is the same on both sides, which is what BBSE's confusion matrix and
//! BCTS's calibration assume. Averaging the `k` models on the target would apply an ensemble
//! whose confusion and calibration no source row measures (averaged probabilities are less
//! confident than any single model's), so it is not done.

use glshift::seeds::{stream_seed, Stream};
use ndarray::{Array2, Axis};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::{Error, Result};
use glshift::config::FitConfig;
use glshift::data::Domain;
use glshift::label_shift::stratified_folds;
use glshift::methods::MethodKind;
use glshift::pipeline;

/// Out-of-fold source probabilities and the matching target probabilities.
#[derive(Clone, Debug)]
pub struct CrossFit {
    /// Number of folds (= models).
    pub folds: usize,
    /// Fold of every source row (its probabilities come from model `fold[i]`).
    pub fold: Vec<usize>,
    /// Out-of-fold probabilities of every source row, source-row order (n_source × c).
    pub source_probs: Array2<f32>,
    /// Source labels, source-row order.
    pub source_labels: Vec<usize>,
    /// Model that scores each target row (balanced over the folds, seeded).
    pub target_model: Vec<usize>,
    /// Target probabilities, row `i` from model `target_model[i]` (n_target × c).
    pub target_probs: Array2<f32>,
    /// Source rows each model trained on.
    pub n_train: Vec<usize>,
}

/// Cross-fits `k ≥ 2` source classifiers of `cfg` (its method forced to `source`) on `source`
/// and scores `target` (see the module doc). Folds and the target assignment are seeded from
/// `cfg.seed`; the target's labels are never read (the target is passed to training without
/// them).
///
/// Errors: `k < 2`, an unlabelled source, or any fit failing.
pub fn cross_fit(source: &Domain, target: &Domain, cfg: &FitConfig, k: usize) -> Result<CrossFit> {
    let labels = source.labels.as_deref().ok_or_else(|| {
        Error::bad_data(source.path.display().to_string(), "cross-fitting needs a labelled source")
    })?;
    let c = source.n_classes();
    let fold = stratified_folds(labels, c, k, cfg.seed)?;
    let mut cfg = cfg.clone();
    cfg.method = MethodKind::Source;
    let cfg = &cfg;
    let mut unlabelled = target.clone();
    unlabelled.labels = None;
    let nt = target.n();
    let mut target_model: Vec<usize> = (0..nt).map(|i| i % k).collect();
    target_model
        .shuffle(&mut ChaCha8Rng::seed_from_u64(stream_seed(cfg.seed, Stream::CrossFitTargets)));
    let mut source_probs = Array2::<f32>::zeros((source.n(), c));
    let mut target_probs = Array2::<f32>::zeros((nt, c));
    let mut n_train = Vec::with_capacity(k);
    for m in 0..k {
        let hold: Vec<usize> = (0..fold.len()).filter(|&i| fold[i] == m).collect();
        let run = pipeline::run_with_holdout(source, &unlabelled, cfg, Some(&hold), &mut |_| {})?;
        debug_assert_eq!(run.holdout_rows, hold);
        for (r, &i) in run.holdout_rows.iter().enumerate() {
            source_probs.row_mut(i).assign(&run.holdout_probs.row(r));
        }
        for (i, _) in target_model.iter().enumerate().filter(|(_, &g)| g == m) {
            target_probs.row_mut(i).assign(&run.target_probs.row(i));
        }
        n_train.push(run.report.n_source_train);
    }
    Ok(CrossFit {
        folds: k,
        fold,
        source_probs,
        source_labels: labels.to_vec(),
        target_model,
        target_probs,
        n_train,
    })
}

impl CrossFit {
    /// The target probabilities of the rows `rows` (e.g. a simulated target drawn from a pool).
    pub fn target_rows(&self, rows: &[usize]) -> Array2<f32> {
        self.target_probs.select(Axis(0), rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{generate, SyntheticConfig};

    #[test]
    fn cross_fitting_is_deterministic_under_a_seed_and_scores_every_row_out_of_fold() {
        let t = generate(&SyntheticConfig {
            n_classes: 3,
            n_source: 150,
            n_target: 40,
            ..Default::default()
        })
        .unwrap();
        let mut cfg = FitConfig { pretrain_iters: 30, adapt_iters: 0, ..Default::default() };
        cfg.network.hidden = vec![8];
        let a = cross_fit(&t.source, &t.target, &cfg, 3).unwrap();
        let b = cross_fit(&t.source, &t.target, &cfg, 3).unwrap();
        assert_eq!(a.source_probs, b.source_probs);
        assert_eq!(a.target_probs, b.target_probs);
        assert_eq!(a.target_model, b.target_model);
        // Every row has probabilities (rows sum to 1), and each model trained on the rows
        // outside its fold only.
        for r in a.source_probs.rows().into_iter().chain(a.target_probs.rows()) {
            assert!((r.sum() - 1.0).abs() < 1e-4, "{r:?}");
        }
        for m in 0..3 {
            let in_fold = a.fold.iter().filter(|&&f| f == m).count();
            assert_eq!(a.n_train[m], 150 - in_fold);
            let served = a.target_model.iter().filter(|&&g| g == m).count();
            assert!((13..=14).contains(&served), "model {m} scores {served} target rows");
        }
        // Target labels are never needed.
        let mut unl = t.target.clone();
        unl.labels = None;
        assert_eq!(cross_fit(&t.source, &unl, &cfg, 3).unwrap().target_probs, a.target_probs);
        assert!(cross_fit(&t.source, &t.target, &cfg, 1)
            .unwrap_err()
            .to_string()
            .contains("folds"));
    }
}
