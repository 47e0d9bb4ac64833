//! A saved fit of `scripts/cross_domain_prior.sh` rebuilt for the development examples
//! (`prior_estimator_dev`, `prior_interval_dev`): `RUN/sim` holds the simulated pair, `RUN/fit`
//! its fit. The final network's hold-out (n_h × c, the fit's split from its seed) and target
//! (n_t × c) probabilities are recomputed from `RUN/fit/model.glshift` and re-tempered with the
//! temperature fitted on the hold-out, as `fit` does (softmax is shift-invariant, so `ln p`
//! serves as logits). The true prior is read to score only.

use std::path::Path;

use glshift::config::FitConfig;
use glshift::data::load_pair;
use glshift::label_shift::{
    fit_temperature, softmax_with_temperature, stratified_holdout, ShiftInputs,
};
use glshift::model::FittedModel;
use ndarray::{Array2, Axis};

pub fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read json")).expect("parse json")
}

pub fn vec_of(v: &serde_json::Value) -> Vec<f64> {
    v.as_array().expect("array").iter().map(|x| x.as_f64().expect("number")).collect()
}

pub struct SavedRun {
    pub cfg: FitConfig,
    /// Number of classes c.
    pub c: usize,
    /// Calibrated hold-out probabilities (n_h × c) and their labels (length n_h).
    pub hold: Array2<f32>,
    pub hold_labels: Vec<usize>,
    /// Calibrated target probabilities (n_t × c).
    pub target: Array2<f32>,
    /// The fit's source prior pˢ (length c).
    pub source_prior: Vec<f64>,
    /// `RUN/fit/report.json`.
    pub report: serde_json::Value,
    /// `RUN/sim/simulation.json`'s true target prior (length c).
    pub truth: Vec<f64>,
}

impl SavedRun {
    /// Loads `run`; panics with the failing step's name (a development tool).
    pub fn load(run: &Path) -> SavedRun {
        let (source, target) = load_pair(&run.join("sim"), "source", "target").expect("load sim");
        let model = FittedModel::load(&run.join("fit/model.glshift")).expect("load model");
        let cfg = model.config().clone();
        let sy = source.labels.clone().expect("source labels");
        let c = model.n_classes();
        let (_, hold) =
            stratified_holdout(&sy, c, cfg.label_shift.holdout_fraction, cfg.seed).expect("split");
        let hp =
            model.predict_proba(source.features.select(Axis(0), &hold).view()).expect("predict");
        let tp = model.predict_proba(target.features.view()).expect("predict");
        let hold_labels: Vec<usize> = hold.iter().map(|&i| sy[i]).collect();
        let logits = |p: &Array2<f32>| p.mapv(|v| v.max(1e-30).ln());
        let (hl, tl) = (logits(&hp), logits(&tp));
        let t = fit_temperature(hl.view(), &hold_labels).expect("temperature");
        SavedRun {
            c,
            hold: softmax_with_temperature(hl.view(), t),
            hold_labels,
            target: softmax_with_temperature(tl.view(), t),
            source_prior: model.source_prior().to_vec(),
            report: json(&run.join("fit/report.json")),
            truth: vec_of(&json(&run.join("sim/simulation.json"))["target"]["true_prior"]),
            cfg,
        }
    }

    /// The estimators' inputs: calibrated hold-out (with labels) and target, pˢ given.
    pub fn inputs(&self) -> ShiftInputs<'_> {
        ShiftInputs {
            source_probs: self.hold.view(),
            source_labels: &self.hold_labels,
            target_probs: self.target.view(),
            source_prior: Some(&self.source_prior),
        }
    }
}
