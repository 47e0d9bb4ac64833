//! Model selection without target labels: fit every candidate
//! configuration on one task, score each with label-free scorers, keep the best.
//!
//! With candidates `θ_1 … θ_m` (a method and MUL's λ_TU, λ_DU, τ over one base configuration)
//! and label-free scores `s_j(θ)` (higher is better), the rule picks
//!
//! ```text
//! θ̂ = argmax_θ s_r(θ)                          (one scorer r), or
//! θ̂ = argmin_θ (1/|R|) Σ_{j∈R} rank_j(θ)       (mean rank over the scorers R), or
//! θ̂ = argmin_{θ ∈ S} H(θ),  S = {θ_src} ∪ {θ : IWCV(θ) ≥ IWCV(θ_src) − m}   (safe-entropy, the default)
//! ```
//!
//! where `H` is the mean entropy of a candidate's target predictions, `θ_src` the pre-trained
//! network (the `source` candidate) and `m` = [`SAFE_IWCV_MARGIN`]
//!
//! ties going to the earlier candidate. Every candidate shares one pre-training (the
//! [`PretrainCache`]: the base configuration fixes seed, network and pre-training), and MUL's
//! adaptation ends by its label-free stop, so a selection costs one pre-training plus one
//! adaptation per candidate.
//!
//! **IWCV's class weights.** Label-shift IWCV estimates the target risk as a w-weighted source
//! hold-out risk. Scoring each candidate with its own ŵ would compare risks under different
//! target distributions, and reward a candidate for estimating the weights that suit it. One
//! w serves all: `w = p̂ᵗ_MLLS / pˢ` from the pre-trained network (the source-only black box
//! that BBSE and MLLS assume, calibrated on the hold-out; MLLS's prior is in its
//! diagnostics). It is computed before any adaptation, so no candidate's alignment feeds it.
//!
//! **Target labels** are removed from the target before any candidate is fitted; they are
//! read once, after the choice, to score every candidate (`SelectOutcome::evaluation`) and
//! the chosen model's report.

mod candidates;
mod linear;
mod outcome;
mod record;
pub mod scorers;
mod scores;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

pub use candidates::{default_candidates, read_candidates_file, Candidate};
pub use record::SelectionFile;
pub use scores::{CandidateScores, SelectRule, SAFE_IWCV_MARGIN, SND_MAX_ROWS, SND_TEMPERATURE};

use crate::config::FitConfig;
use crate::data::{Domain, PooledSource};
use crate::methods::MethodKind;
use crate::model::Dataset;
use crate::pipeline::{self, RunOutput, Sources};
use crate::prior_policy::FitDiagnostics;
use crate::train::{PretrainCache, Progress, Stage};
use crate::{Error, Result};
use outcome::{evaluate, reason};

/// Unchecked settings of a selection: the base configuration (seed, network, pre-training and
/// every setting a candidate does not override), the candidates, the rule.
#[derive(Clone, Debug, PartialEq)]
pub struct SelectParams {
    base: FitConfig,
    candidates: Vec<Candidate>,
    rule: SelectRule,
}

impl Default for SelectParams {
    fn default() -> Self {
        SelectParams {
            base: FitConfig::default(),
            candidates: default_candidates(),
            rule: SelectRule::default(),
        }
    }
}

impl SelectParams {
    /// The default candidates and rule over `base`.
    pub fn new(base: FitConfig) -> Self {
        SelectParams { base, ..Self::default() }
    }

    pub fn candidates(mut self, candidates: Vec<Candidate>) -> Self {
        self.candidates = candidates;
        self
    }

    pub fn rule(mut self, rule: SelectRule) -> Self {
        self.rule = rule;
        self
    }

    /// The seed of every candidate (and of the scorers' subsampling).
    pub fn seed(mut self, seed: u64) -> Self {
        self.base.seed = seed;
        self
    }

    /// Validates the base and every candidate's configuration, and refuses what the scorers
    /// cannot work with (no source hold-out).
    pub fn check(self) -> Result<CheckedSelectParams> {
        self.base.validate()?;
        if self.base.label_shift.confusion != crate::config::ConfusionRows::Holdout {
            return Err(Error::param(
                "label_shift.confusion",
                "train",
                "select scores candidates on the source hold-out: use confusion = \"holdout\"",
            ));
        }
        let configs = candidates::check_candidates(&self.candidates, &self.base)?;
        Ok(CheckedSelectParams { params: self, configs })
    }
}

/// Settings that passed [`SelectParams::check`].
#[derive(Clone, Debug)]
pub struct CheckedSelectParams {
    params: SelectParams,
    configs: Vec<FitConfig>,
}

/// One candidate as scored (`selection.json → candidates`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScoredCandidate {
    pub name: String,
    pub candidate: Candidate,
    /// The full configuration it was fitted with.
    pub config: FitConfig,
    pub scores: CandidateScores,
    /// The value the rule compared (the score, or minus the mean rank).
    pub rule_value: Option<f64>,
    pub pretrain_iterations: usize,
    pub adapt_iterations: usize,
    pub estimated_target_prior: Option<Vec<f64>>,
    pub diagnostics: Option<FitDiagnostics>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The class weights every candidate's IWCV used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IwcvReference {
    /// Where they come from (the pre-trained network's MLLS estimate).
    pub from: String,
    pub target_prior: Vec<f64>,
    pub weights: Vec<f64>,
}

/// A label-free selection: serialisable, identical whatever the target labels are.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Selection {
    pub rule: SelectRule,
    pub seed: u64,
    pub iwcv_reference: IwcvReference,
    pub candidates: Vec<ScoredCandidate>,
    /// Index into `candidates`.
    pub chosen: usize,
    pub chosen_name: String,
    /// One sentence: the rule, the winner's value and the runner-up's.
    pub reason: String,
}

/// Each candidate's target accuracy, computed after the choice (target labels only).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CandidateAccuracies {
    pub note: String,
    /// Same order as `Selection::candidates`.
    pub target_accuracy: Vec<f64>,
    pub chosen_accuracy: f64,
    /// The best candidate in hindsight (what an oracle with the labels would pick).
    pub oracle: usize,
    pub oracle_accuracy: f64,
}

/// What [`CheckedSelectParams::select`] returns.
pub struct SelectOutcome {
    pub selection: Selection,
    /// The chosen candidate's run (scored against the target labels when they exist).
    pub chosen: RunOutput,
    /// Present only when the target has labels.
    pub evaluation: Option<CandidateAccuracies>,
}

impl CheckedSelectParams {
    pub fn rule(&self) -> SelectRule {
        self.params.rule
    }

    /// The candidates' full configurations, in order.
    pub fn configs(&self) -> &[FitConfig] {
        &self.configs
    }

    /// Fits every candidate on `source` → `target` (pre-training shared), scores them, chooses.
    /// `progress(i, p)` reports candidate `i`'s training. Deterministic for the base seed.
    pub fn select(
        &self,
        source: &Domain,
        target: &Domain,
        progress: &mut dyn FnMut(usize, Progress),
    ) -> Result<SelectOutcome> {
        pipeline::check_pair(source, target)?;
        self.select_on(Sources::One(source), target, progress)
    }

    /// [`CheckedSelectParams::select`] on several sources pooled (`glshift select --source
    /// a,b`): every candidate is the pooled fit of `pipeline::run_pooled` (the hold-out
    /// stratified by class and domain).
    pub fn select_pooled(
        &self,
        sources: &PooledSource,
        target: &Domain,
        progress: &mut dyn FnMut(usize, Progress),
    ) -> Result<SelectOutcome> {
        pipeline::check_pair(&sources.pooled, target)?;
        self.select_on(Sources::Pooled(sources), target, progress)
    }

    fn select_on(
        &self,
        sources: Sources<'_>,
        target: &Domain,
        progress: &mut dyn FnMut(usize, Progress),
    ) -> Result<SelectOutcome> {
        let blind = Domain { labels: None, ..target.clone() };
        let mut cache = PretrainCache::new();
        let fit = |cfg: &FitConfig, cache: &mut PretrainCache, p: &mut dyn FnMut(Progress)| {
            pipeline::run_sources_cached(sources, &blind, cfg, cache, p)
        };
        let mut runs = Vec::with_capacity(self.configs.len());
        for (i, cfg) in self.configs.iter().enumerate() {
            runs.push(fit(cfg, &mut cache, &mut |p| progress(i, p))?);
        }
        let reference = self.iwcv_reference(&runs, &mut |cfg| fit(cfg, &mut cache, &mut |_| {}))?;
        let selection = self.choose(&runs, reference)?;
        // The choice is made: from here on the target labels may be read, to score.
        let evaluation = match &target.labels {
            Some(truth) => Some(evaluate(&selection, &runs, truth)?),
            None => None,
        };
        let mut chosen = runs.swap_remove(selection.chosen);
        if let Some(truth) = &target.labels {
            chosen.evaluate(truth)?;
        }
        Ok(SelectOutcome { selection, chosen, evaluation })
    }

    /// [`CheckedSelectParams::select`] on in-memory arrays (the Python package's
    /// `glshift.select`): the dataset has no target labels, so the outcome has no evaluation.
    pub fn select_dataset(
        &self,
        data: &Dataset,
        progress: &mut dyn FnMut(usize, Progress),
    ) -> Result<SelectOutcome> {
        let (source, target) = data.to_domains();
        self.select(&source, &target, progress)
    }

    /// The candidate that is the pre-trained network itself (`source` with `adapt_iters = 0`
    /// over the base), if one is: IWCV's weights come from it and `safe-entropy` compares with it.
    fn pretrained_candidate(&self) -> Option<usize> {
        let cfg =
            FitConfig { method: MethodKind::Source, adapt_iters: 0, ..self.params.base.clone() };
        self.configs.iter().position(|c| *c == cfg)
    }

    /// The common IWCV weights: MLLS on the pre-trained network (a candidate's run when one is
    /// exactly `source` with `adapt_iters = 0`, else one more run from the cache).
    fn iwcv_reference(
        &self,
        runs: &[RunOutput],
        fit: &mut dyn FnMut(&FitConfig) -> Result<RunOutput>,
    ) -> Result<IwcvReference> {
        let cfg =
            FitConfig { method: MethodKind::Source, adapt_iters: 0, ..self.params.base.clone() };
        let own;
        let run = match self.pretrained_candidate() {
            Some(i) => &runs[i],
            None => {
                own = fit(&cfg)?;
                &own
            }
        };
        let d = run.report.diagnostics.as_ref().ok_or_else(|| {
            Error::numerical(
                "select: IWCV weights",
                format!(
                    "the pre-trained network's diagnostics failed: {}",
                    run.report.warnings.join("; ")
                ),
            )
        })?;
        let ps = &run.report.source_prior;
        let weights =
            d.mlls_prior.iter().zip(ps).map(|(q, p)| if *p > 0.0 { q / p } else { 0.0 }).collect();
        Ok(IwcvReference {
            from: "MLLS-BCTS on the pre-trained network (source, adapt_iters = 0)".into(),
            target_prior: d.mlls_prior.clone(),
            weights,
        })
    }

    /// Scores every run and applies the rule.
    fn choose(&self, runs: &[RunOutput], reference: IwcvReference) -> Result<Selection> {
        let rule = self.params.rule;
        let rows = scores::snd_rows(runs[0].target_probs.nrows(), self.params.base.seed);
        let mut warnings: Vec<Vec<String>> = vec![Vec::new(); runs.len()];
        let all: Vec<CandidateScores> = runs
            .iter()
            .zip(&mut warnings)
            .map(|(r, w)| scores::score_candidate(r, &reference.weights, &rows, w))
            .collect();
        let values = scores::rule_values(&all, rule, self.pretrained_candidate());
        let chosen = scores::arg_best(&values).ok_or_else(|| {
            Error::numerical(
                format!("select rule {rule}"),
                "no candidate could be scored (see the candidates' warnings)",
            )
        })?;
        let candidates: Vec<ScoredCandidate> = runs
            .iter()
            .zip(&self.params.candidates)
            .zip(all.into_iter().zip(values).zip(warnings))
            .map(|((run, cand), ((scores, rule_value), mut warnings))| {
                let adapt = run.report.history.iter().filter(|h| h.stage == Stage::Adapt).count();
                warnings.extend(run.report.warnings.iter().cloned());
                ScoredCandidate {
                    name: cand.label(),
                    candidate: cand.clone(),
                    config: run.report.config.clone(),
                    scores,
                    rule_value,
                    pretrain_iterations: run.report.history.len() - adapt,
                    adapt_iterations: adapt,
                    estimated_target_prior: run.report.estimated_target_prior.clone(),
                    diagnostics: run.report.diagnostics.clone(),
                    warnings,
                }
            })
            .collect();
        let reason = reason(rule, &candidates, chosen);
        Ok(Selection {
            rule,
            seed: self.params.base.seed,
            iwcv_reference: reference,
            chosen_name: candidates[chosen].name.clone(),
            candidates,
            chosen,
            reason,
        })
    }
}
