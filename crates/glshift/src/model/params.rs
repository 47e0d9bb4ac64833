//! Parameters of a fit in the linfa style: [`FitParams`] (defaults, setters) →
//! [`FitParams::check`] → [`CheckedParams`] (a type that says the settings are valid) →
//! [`CheckedParams::fit`] → [`FittedModel`].

use ndarray::{CowArray, Ix2};

use super::dataset::Dataset;
use super::fitted::FittedModel;
use crate::config::FitConfig;
use crate::data::Preprocess;
use crate::data::{self, FeatureFile, PreprocessStats, Rows};
use crate::label_shift::ShiftEstimate;
use crate::methods::MethodKind;
use crate::prior_policy::{self, FinalOutputs};
use crate::train::{fit_checked, FitData, Fitted};
use crate::train::{PretrainCache, Progress};
use crate::Result;

/// Unchecked settings of a fit: every [`FitConfig`] field, with the defaults of `glshift fit`.
/// `FitParams::default()` is MUL; [`FitParams::new`] takes any method (`source`, the baselines).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FitParams {
    config: FitConfig,
}

impl FitParams {
    /// The defaults of `glshift fit` for `method`.
    pub fn new(method: MethodKind) -> Self {
        FitParams { config: FitConfig { method, ..FitConfig::default() } }
    }

    /// MUL with its defaults.
    pub fn mul() -> Self {
        Self::new(MethodKind::Mul)
    }

    /// No adaptation: the same network and schedule trained on the source alone.
    pub fn source() -> Self {
        Self::new(MethodKind::Source)
    }

    /// Every setting at once (e.g. read from a TOML file by [`FitConfig::from_toml_file`]).
    pub fn from_config(config: FitConfig) -> Self {
        FitParams { config }
    }

    /// Random seed: network initialisation, hold-out split, dropout.
    pub fn seed(mut self, seed: u64) -> Self {
        self.config.seed = seed;
        self
    }

    pub fn method(mut self, method: MethodKind) -> Self {
        self.config.method = method;
        self
    }

    /// Feature preprocessing, fitted on the source rows and stored in the model.
    pub fn preprocess(mut self, how: Preprocess) -> Self {
        self.config.preprocess = how;
        self
    }

    /// Full-batch pre-training steps on the source (upper bound; stopped by the hold-out NLL).
    pub fn pretrain_iters(mut self, n: usize) -> Self {
        self.config.pretrain_iters = n;
        self
    }

    /// Full-batch adaptation steps.
    pub fn adapt_iters(mut self, n: usize) -> Self {
        self.config.adapt_iters = n;
        self
    }

    /// Any other setting (`mul`, `network`, `optimizer`, `label_shift`, `baselines`, …).
    pub fn config_mut(&mut self) -> &mut FitConfig {
        &mut self.config
    }

    /// Validates every setting ([`FitConfig::validate`]); the result can only be built here.
    pub fn check(self) -> Result<CheckedParams> {
        self.config.validate()?;
        Ok(CheckedParams { config: self.config })
    }
}

/// Settings that passed [`FitParams::check`].
#[derive(Clone, Debug, PartialEq)]
pub struct CheckedParams {
    config: FitConfig,
}

/// What [`CheckedParams::fit_detailed`] returns: the model, and the fit's training-time outputs
/// (target probabilities, Z of both domains, hold-out probabilities) for reports.
pub struct FitOutcome {
    pub model: FittedModel,
    pub fitted: Fitted,
    /// The reported target prior (the model's), estimated once per fit; `None` for methods
    /// that estimate no shift.
    pub prior: Option<ReportedPrior>,
    /// Problems found without labels that did not stop the fit (e.g. badly scaled features).
    pub warnings: Vec<String>,
}

/// A fit's reported target prior and the calibrated final outputs it was estimated on, which
/// the report's bootstrap interval resamples (`None` without a hold-out: the training loop's
/// last estimate, as it is).
#[derive(Clone, Debug)]
pub struct ReportedPrior {
    pub estimate: ShiftEstimate,
    pub outputs: Option<FinalOutputs>,
    /// Why the estimate is not trusted (`prior_policy::untrusted_note`), where the prior guard
    /// distrusted the label-shift estimate; `None` when it is trusted.
    pub untrusted: Option<String>,
}

/// Optional parts of a fit beyond the data.
#[derive(Default)]
pub struct FitOptions<'a> {
    /// Source rows to hold out instead of the stratified split (one fold of a cross-fit).
    pub holdout: Option<&'a [usize]>,
    /// Pre-trained states shared by fits on the same source rows and pre-training settings
    /// (a grid's methods on one task and seed); results are identical with or without it.
    pub cache: Option<&'a mut PretrainCache>,
    /// Called after every iteration.
    pub progress: Option<&'a mut dyn FnMut(Progress)>,
}

impl CheckedParams {
    pub fn config(&self) -> &FitConfig {
        &self.config
    }

    /// Trains on `data` (target labels are not part of a [`Dataset`]). Deterministic for a seed.
    pub fn fit(&self, data: &Dataset) -> Result<FittedModel> {
        Ok(self.fit_detailed(data, FitOptions::default())?.model)
    }

    /// [`CheckedParams::fit`] sharing pre-training through `cache` with earlier fits on the same
    /// source rows and pre-training settings: the explicit form of reusing a pre-trained state.
    pub fn fit_with_cache(&self, data: &Dataset, cache: &mut PretrainCache) -> Result<FittedModel> {
        Ok(self
            .fit_detailed(data, FitOptions { cache: Some(cache), ..FitOptions::default() })?
            .model)
    }

    /// Preprocesses with source statistics, trains, and freezes everything a prediction needs
    /// into the model. `data` is left as it is, so its features are copied once to be
    /// preprocessed (not with `preprocess = "none"`); [`CheckedParams::fit_owned`] preprocesses
    /// them in place instead.
    pub fn fit_detailed(&self, data: &Dataset, opts: FitOptions) -> Result<FitOutcome> {
        let input = FitInput {
            features: FitFeatures::Memory(data.source_x().into(), data.target_x().into()),
            source_y: data.source_y(),
            class_names: data.class_names(),
        };
        self.fit_input(input, opts)
    }

    /// [`CheckedParams::fit_detailed`] consuming `data`: its features are preprocessed in
    /// place and trained on, and freed when the fit returns, so the fit holds one copy of them.
    /// Same model and outputs, bit for bit.
    pub fn fit_owned(&self, data: Dataset, opts: FitOptions) -> Result<FitOutcome> {
        let (source_x, source_y, target_x, class_names) = data.into_parts();
        let input = FitInput {
            features: FitFeatures::Memory(source_x.into(), target_x.into()),
            source_y: &source_y,
            class_names: &class_names,
        };
        self.fit_input(input, opts)
    }

    /// The fit on arrays that are borrowed or owned, or on files: owned features are
    /// preprocessed in place, borrowed ones copied first (only when the preprocessing changes
    /// them) unless the fit trains by mini-batch, rows of files and the borrowed rows of a
    /// mini-batch fit preprocessed as they are read ([`Rows::preprocessed_by`]). The same bits
    /// every way: the preprocessing is row by row.
    pub(crate) fn fit_input(&self, input: FitInput, opts: FitOptions) -> Result<FitOutcome> {
        let cfg = &self.config;
        let FitInput { features, source_y, class_names } = input;
        let (n, d) = features.shape();
        let in_memory = matches!(features, FitFeatures::Memory(..));
        crate::train::check_memory_of(n, d, class_names.len(), cfg, in_memory)?;
        let borrowed;
        let (source_x, target_x) = match features {
            FitFeatures::Memory(xs, xt) => {
                let views = xs.is_view() && xt.is_view();
                if !(views && cfg.preprocess != Preprocess::None && cfg.uses_minibatch(n, d)) {
                    return self.fit_in_memory((xs, xt), source_y, class_names, opts);
                }
                borrowed = (xs, xt);
                (Rows::Memory(borrowed.0.view()), Rows::Memory(borrowed.1.view()))
            }
            FitFeatures::Files(fs, ft) => (Rows::File(fs, None), Rows::File(ft, None)),
        };
        let stats = PreprocessStats::fit_rows(source_x, cfg.preprocess)?;
        let (source_x, target_x) =
            (source_x.preprocessed_by(&stats), target_x.preprocessed_by(&stats));
        let warnings =
            data::preprocess_warning_rows(target_x, cfg.preprocess)?.into_iter().collect();
        let data = FitData {
            source_x,
            source_y,
            target_x,
            n_classes: class_names.len(),
            holdout: opts.holdout,
        };
        self.train(&data, class_names, stats.clone(), (opts.cache, opts.progress), warnings)
    }

    /// [`CheckedParams::fit_input`] on arrays preprocessed whole before training.
    fn fit_in_memory(
        &self,
        (source_x, target_x): (CowArray<f32, Ix2>, CowArray<f32, Ix2>),
        source_y: &[usize],
        class_names: &[String],
        opts: FitOptions,
    ) -> Result<FitOutcome> {
        let cfg = &self.config;
        let stats = PreprocessStats::fit(source_x.view(), cfg.preprocess)?;
        let (xs, xt, warnings) = if cfg.preprocess == Preprocess::None {
            (source_x, target_x, Vec::new())
        } else {
            let mut xs = source_x.into_owned();
            let mut xt = target_x.into_owned();
            stats.apply(&mut xs)?;
            stats.apply(&mut xt)?;
            let warnings: Vec<String> =
                data::preprocess_warning(&xt, cfg.preprocess).into_iter().collect();
            (xs.into(), xt.into(), warnings)
        };
        let (source_x, target_x) = (Rows::Memory(xs.view()), Rows::Memory(xt.view()));
        let data = FitData {
            source_x,
            source_y,
            target_x,
            n_classes: class_names.len(),
            holdout: opts.holdout,
        };
        self.train(&data, class_names, stats.clone(), (opts.cache, opts.progress), warnings)
    }

    /// Trains on `data` (preprocessed rows) and freezes the model.
    fn train(
        &self,
        data: &FitData,
        class_names: &[String],
        stats: PreprocessStats,
        (cache, progress): (Option<&mut PretrainCache>, Option<&mut dyn FnMut(Progress)>),
        warnings: Vec<String>,
    ) -> Result<FitOutcome> {
        let cfg = &self.config;
        let mut no_progress = |_: Progress| {};
        let progress: &mut dyn FnMut(Progress) = match progress {
            Some(p) => p,
            None => &mut no_progress,
        };
        let fitted = fit_checked(data, cfg, cache, progress)?;
        let prior = reported_prior(&fitted, data.source_y, cfg)?;
        let reported = prior.as_ref().map(|p| p.estimate.target_prior.clone());
        let model = FittedModel::from_fit(
            cfg,
            class_names,
            stats,
            data.source_x,
            (data.source_y, &data.target_x),
            &fitted,
            reported,
        )?;
        Ok(FitOutcome { model, fitted, prior, warnings })
    }
}

/// The features of a fit: `n_s × d` source and `n_t × d` target rows, as arrays borrowed or
/// owned, or as two `.npy` files read a block of rows at a time (mini-batch fits; see
/// `pipeline::reads_from_files`).
pub(crate) enum FitFeatures<'a> {
    Memory(CowArray<'a, f32, Ix2>, CowArray<'a, f32, Ix2>),
    Files(&'a FeatureFile, &'a FeatureFile),
}

impl FitFeatures<'_> {
    /// `(n_s + n_t, d)`.
    fn shape(&self) -> (usize, usize) {
        let (ns, d, nt) = self.shape_parts();
        (ns + nt, d)
    }

    /// `(n_s, d, n_t)`.
    pub(crate) fn shape_parts(&self) -> (usize, usize, usize) {
        match self {
            FitFeatures::Memory(s, t) => (s.nrows(), s.ncols(), t.nrows()),
            FitFeatures::Files(s, t) => (s.nrows(), s.ncols(), t.nrows()),
        }
    }
}

/// The inputs of a fit: its features, `n_s` source labels, `c` class names. Checked by the
/// caller (a [`Dataset`], or `pipeline::check_pair` on two domains).
pub(crate) struct FitInput<'f, 'a> {
    pub features: FitFeatures<'f>,
    pub source_y: &'a [usize],
    pub class_names: &'a [String],
}

/// The target prior a fitted model keeps: `label_shift.prior_estimator` on the final network
/// (the same estimate as `report.json`'s `estimated_target_prior`); the training loop's last
/// estimate without a hold-out; `None` for methods that estimate no shift.
fn reported_prior(
    fitted: &Fitted,
    source_y: &[usize],
    cfg: &FitConfig,
) -> Result<Option<ReportedPrior>> {
    let Some(tracker) = fitted.shift.as_ref() else { return Ok(None) };
    if fitted.holdout_rows.is_empty() {
        return Ok(Some(ReportedPrior {
            estimate: tracker.clone(),
            outputs: None,
            untrusted: None,
        }));
    }
    let labels = fitted.holdout_labels(source_y);
    let ls = &cfg.label_shift;
    let outputs = FinalOutputs::new(
        fitted.holdout_probs.view(),
        &labels,
        fitted.target_probs.view(),
        &fitted.source_prior,
        ls.calibrate,
    )?;
    if fitted.prior_guard.as_ref().is_some_and(|g| !g.trusted) {
        let check = fitted.adaptation_check.as_ref();
        let kept = check.is_some_and(|c| c.kept);
        let guard = &cfg.label_shift.guard;
        let (estimate, read) = prior_policy::untrusted_estimate(
            &outputs,
            kept,
            cfg.mul.tau,
            guard.min_confident_share,
        )?;
        let untrusted = Some(prior_policy::untrusted_note(read));
        return Ok(Some(ReportedPrior { estimate, outputs: Some(outputs), untrusted }));
    }
    let estimate = outputs.estimate(ls.prior_estimator, ls.soft, tracker)?;
    Ok(Some(ReportedPrior { estimate, outputs: Some(outputs), untrusted: None }))
}
