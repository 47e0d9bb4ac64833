//! Hyper-parameters of a fit, with defaults and validation before any work (Params → checked).
//!
//! Every default is fixed by a rule that reads no target labels when it runs; README.md
//! ("Defaults") gives each rule and its reasoning. Two defaults were adopted after diagnoses
//! that read Office-Caltech10 target labels: BatchNorm on in G (`network.batch_norm`) and the
//! J_DU gradient balance (`mul.du_balance`); MUL's class support re-decided every iteration
//! (`label_shift.fixed_support` unset) after diagnoses that read the target labels of
//! synthetic large tasks and of 8-component EfficientNet-Lite2 features (docs/safety.md).

use serde::{Deserialize, Serialize};

mod ablation;
mod label_shift;
mod resolve;
mod training;

pub use ablation::{AblationRow, ABLATION_ROWS};
pub use resolve::{ConfigOverrides, ConfigSource};

use crate::data::Preprocess;
pub use crate::methods::baselines::config::BaselineConfig;
use crate::methods::method_info::Family;
pub use crate::methods::MethodKind;
use crate::methods::{BuildContext, Method};
pub use crate::methods::{Discrepancy, MulConfig};
use crate::nn::{AdamConfig, NetworkConfig};
pub use crate::prior_policy::{DisagreementResponse, GuardFallback};
use crate::{Error, Result};
pub use label_shift::{
    ConfusionRows, LabelShiftConfig, LoopEstimator, PriorGuardConfig, SupportFrom,
};
pub use training::{MiniBatchConfig, Training, AUTO_MINIBATCH_CELLS};

/// When the adaptation stage may stop before `adapt_iters` (MUL only; the baselines' schedules
/// depend on the iteration count and always run it out).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdaptStopConfig {
    /// Off: run all `adapt_iters` iterations.
    pub enabled: bool,
    /// W: iterations between the two states compared.
    pub window: usize,
    /// Largest ℓ1 move of the estimated target prior over W iterations.
    pub tol_prior: f64,
    /// Largest share of target rows whose pseudo-label changed over W iterations.
    pub tol_labels: f64,
    /// No stop before this many adaptation iterations.
    pub min_iters: usize,
    /// Largest relative change of J_TU over W iterations, |J_{t−W} − J_t| / |J_{t−W}|
    /// (`train::converge`): the objective itself must have settled, not only the prior and the
    /// pseudo-labels. Default 0.15, chosen on development seeds under the fit's time bound
    /// (docs/methods.md "Stopping rules"); unset: J_TU is not part of the rule.
    pub tol_objective: Option<f64>,
}

impl Default for AdaptStopConfig {
    fn default() -> Self {
        AdaptStopConfig {
            enabled: true,
            window: 10,
            tol_prior: 0.005,
            tol_labels: 0.005,
            min_iters: 20,
            tol_objective: Some(0.15),
        }
    }
}

impl AdaptStopConfig {
    pub fn validate(&self) -> Result<()> {
        if self.window == 0 {
            return Err(Error::param("adapt_stop.window", 0, "must be >= 1"));
        }
        for (name, v) in
            [("adapt_stop.tol_prior", self.tol_prior), ("adapt_stop.tol_labels", self.tol_labels)]
        {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::param(name, v, "must be finite and >= 0"));
            }
        }
        if let Some(v) = self.tol_objective.filter(|v| !(v.is_finite() && *v >= 0.0)) {
            return Err(Error::param("adapt_stop.tol_objective", v, "must be finite and >= 0"));
        }
        Ok(())
    }
}

/// Everything a fit needs besides the data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FitConfig {
    pub method: MethodKind,
    pub seed: u64,
    pub preprocess: Preprocess,
    pub network: NetworkConfig,
    pub optimizer: AdamConfig,
    /// Full-batch Adam steps on the source alone (Algorithm 1, pre-training stage).
    pub pretrain_iters: usize,
    /// W: pre-training stops once the source hold-out NLL fell by less than
    /// `pretrain_min_gain_se` standard errors over the last W iterations; the network with the
    /// lowest hold-out NLL is kept. W ≥ `pretrain_iters` turns the rule off (every iteration
    /// runs). Rule: `train::converge`; docs/methods.md "Stopping rules".
    pub pretrain_patience: usize,
    /// k: the gain over the window, in standard errors of the hold-out NLL, below which
    /// pre-training stops.
    pub pretrain_min_gain_se: f64,
    /// Full-batch steps of the adaptation stage (for `source`: more CE steps).
    pub adapt_iters: usize,
    /// Label-free early stop of MUL's adaptation (`train::converge`); `adapt_iters` is then a cap.
    pub adapt_stop: AdaptStopConfig,
    pub mul: MulConfig,
    pub label_shift: LabelShiftConfig,
    /// Refuse a fit whose estimated memory (see `train::memory_estimate_bytes`) exceeds this
    /// many GiB, instead of being killed by the system mid-run.
    pub max_memory_gib: f64,
    /// Hyper-parameters of the baselines (ignored by `source` and `mul`).
    pub baselines: BaselineConfig,
    /// Full-batch, mini-batch, or `auto` (by rows × dims; `config::training`).
    pub training: Training,
    /// Mini-batch settings (used when `training` resolves to mini-batch).
    pub minibatch: MiniBatchConfig,
    /// Where the network's products and the kernel sums run: `cpu`, `cuda` or `auto` (CUDA
    /// where found, else the CPU; `crate::device`). The report says which ran.
    pub device: crate::device::Device,
    /// On a GPU, the exact kernel sums' products in TF32 (`device::DeviceOptions`); off by
    /// default, ignored on the CPU. The report says whether they ran so.
    pub tf32_kernel_sums: bool,
}

impl Default for FitConfig {
    fn default() -> Self {
        FitConfig {
            method: MethodKind::Mul,
            seed: 0,
            preprocess: Preprocess::default(),
            network: NetworkConfig::default(),
            optimizer: AdamConfig::default(),
            pretrain_iters: 500,
            pretrain_patience: 100,
            pretrain_min_gain_se: 1.0,
            adapt_iters: 300,
            adapt_stop: AdaptStopConfig::default(),
            mul: MulConfig::default(),
            label_shift: LabelShiftConfig::default(),
            max_memory_gib: 8.0,
            baselines: BaselineConfig::default(),
            training: Training::Auto,
            minibatch: MiniBatchConfig::default(),
            device: crate::device::Device::Auto,
            tf32_kernel_sums: false,
        }
    }
}

impl FitConfig {
    /// Validates every field; called before any data is touched.
    pub fn validate(&self) -> Result<()> {
        self.network.validate()?;
        self.optimizer.validate()?;
        if self.pretrain_iters + self.adapt_iters == 0 {
            return Err(Error::param(
                "pretrain_iters + adapt_iters",
                0,
                "at least one iteration is needed",
            ));
        }
        if self.method != MethodKind::Source && self.adapt_iters == 0 {
            return Err(Error::param(
                "adapt_iters",
                0,
                format!("{} adapts in the adaptation stage: set adapt_iters >= 1", self.method),
            ));
        }
        self.mul.validate()?;
        Error::check_range(
            "pretrain_min_gain_se",
            self.pretrain_min_gain_se,
            0.0,
            f64::MAX,
            "must be finite and >= 0",
        )?;
        self.adapt_stop.validate()?;
        Error::check_range(
            "max_memory_gib",
            self.max_memory_gib,
            1e-6,
            f64::MAX,
            "must be finite and > 0",
        )?;
        self.baselines.validate()?;
        self.minibatch.validate()?;
        self.label_shift.validate()
    }

    /// Reads a TOML file of (partial) settings over the defaults; unknown keys are errors.
    pub fn from_toml_file(path: &std::path::Path) -> Result<FitConfig> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Io { path: path.into(), source: e })?;
        toml::from_str(&text).map_err(|e| Error::bad_file(path, format!("invalid config: {e}")))
    }

    /// Whether a fit on `n_rows` × `d` trains by mini-batch: when `training` resolves so and
    /// the method trains that way (MUL's family and `source` by the memory bank, the papers'
    /// mini-batch baselines by their sampler); the other baselines stay full-batch.
    pub fn uses_minibatch(&self, n_rows: usize, d: usize) -> bool {
        let method_can = match self.method.info().family {
            Family::Mul | Family::Source => true,
            Family::Baseline => self.baselines.minibatch(self.method),
        };
        method_can && self.training.is_minibatch(n_rows, d)
    }

    /// How a GPU scope of this fit runs its work.
    pub fn device_options(&self) -> crate::device::DeviceOptions {
        crate::device::DeviceOptions { tf32_kernel_sums: self.tf32_kernel_sums }
    }

    /// What the constructor of `self.method` reads ([`BuildContext`]), for a Z of `z_dim`
    /// columns and `c` classes.
    pub fn build_context(&self, z_dim: usize, c: usize) -> BuildContext<'_> {
        BuildContext {
            name: self.method.name(),
            info: self.method.info(),
            mul: &self.mul,
            baselines: &self.baselines,
            optimizer: &self.optimizer,
            seed: self.seed,
            z_dim,
            c,
        }
    }

    /// The prior floor for `c` classes: `label_shift.prior_floor`, else 1/(4c). It is also the
    /// prior guard's resolution; the adaptation loop raises it on small targets
    /// ([`FitConfig::loop_floor_for`]).
    pub fn prior_floor_for(&self, c: usize) -> f64 {
        self.label_shift.prior_floor.unwrap_or(0.25 / c as f64)
    }

    /// The adaptation loop's floor for `c` classes ([`LoopFloor`]): [`FitConfig::prior_floor_for`],
    /// raised by [`evidence_floor`] at the prior guard's α when `label_shift.prior_floor` is
    /// unset; a floor given applies as given.
    pub fn loop_floor_for(&self, c: usize) -> LoopFloor {
        let evidence_alpha =
            self.label_shift.prior_floor.is_none().then_some(self.label_shift.guard.alpha);
        LoopFloor { base: self.prior_floor_for(c), evidence_alpha }
    }
}

/// The floor under which the adaptation loop sets an estimated target prior to 0 (pitfall 3).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoopFloor {
    /// 1/(4c) or the floor given: the prior guard's resolution.
    pub base: f64,
    /// Significance of the evidence floor; `None` when a floor is given.
    evidence_alpha: Option<f64>,
}

impl LoopFloor {
    /// The floor of an estimate from `n_t` target rows: the larger of `base` and
    /// [`evidence_floor`]`(n_t, α)`, or `base` alone when a floor was given.
    pub fn at(&self, n_t: usize) -> f64 {
        self.evidence_alpha.map_or(self.base, |a| self.base.max(evidence_floor(n_t, a)))
    }
}

/// The smallest prior an estimate from `n_t` target rows can tell from an absent class at
/// significance `alpha`: ln(1/α) / n_t (0 for no rows or α outside (0, 1)). A class holding m
/// of the n_t rows is missing from a bootstrap resample of them with probability
/// (1 − m/n_t)^{n_t} ≈ e^{−m}, above α while m < ln(1/α) (3.0 rows at α = 0.05), so its
/// percentile interval reaches 0. The loop floors an estimate under the larger of this and
/// 1/(4c) ([`LoopFloor::at`]; PCA-8 PDA webcam→dslr kept 2 rows of 68, 0.029, on an absent class; the
/// rule only acts on targets of fewer than 4c·ln(1/α) rows, 120 for c = 10 at α = 0.05).
pub fn evidence_floor(n_t: usize, alpha: f64) -> f64 {
    match n_t {
        0 => 0.0,
        _ if !(alpha > 0.0 && alpha < 1.0) => 0.0,
        n => (1.0 / alpha).ln() / n as f64,
    }
}

/// The [`Method`] of `cfg.method` for a Z of `z_dim` columns and `c` classes.
pub fn build_method(cfg: &FitConfig, z_dim: usize, c: usize) -> Result<Box<dyn Method>> {
    cfg.method.build(&cfg.build_context(z_dim, c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::LabelKernel;
    use crate::kernel::McmdEstimator;

    #[test]
    fn defaults_are_valid() {
        FitConfig::default().validate().unwrap();
    }

    #[test]
    fn out_of_range_parameters_name_the_parameter() {
        let mut c = FitConfig::default();
        c.mul.tau = 1.0;
        assert!(matches!(c.validate(), Err(Error::Param { name: "mul.tau", .. })));
        let mut c = FitConfig::default();
        c.mul.lambda_tu = -1.0;
        assert!(matches!(c.validate(), Err(Error::Param { name: "mul.lambda_tu", .. })));
        let mut c = FitConfig::default();
        c.mul.eps = Some(0.0);
        assert!(matches!(c.validate(), Err(Error::Param { name: "mul.eps", .. })));
        let c = FitConfig { pretrain_iters: 0, adapt_iters: 0, ..Default::default() };
        assert!(c.validate().is_err());
    }

    #[test]
    fn unknown_method_and_unknown_toml_keys_are_rejected() {
        assert!("dann-x".parse::<MethodKind>().is_err());
        assert_eq!("mul".parse::<MethodKind>().unwrap(), MethodKind::Mul);
        assert!(toml::from_str::<FitConfig>("not_a_key = 3").is_err());
        let c: FitConfig = toml::from_str("adapt_iters = 7\n[mul]\nlambda_du = 0.5").unwrap();
        assert_eq!((c.adapt_iters, c.mul.lambda_du, c.mul.lambda_tu), (7, 0.5, 1.0));
    }

    #[test]
    fn mcmd_estimator_reads_from_toml_and_zero_features_are_rejected() {
        let c: FitConfig = toml::from_str("[mul]\nmcmd = { random_features = 2048 }").unwrap();
        assert_eq!(c.mul.mcmd, McmdEstimator::RandomFeatures(2048));
        c.validate().unwrap();
        assert_eq!(FitConfig::default().mul.mcmd, McmdEstimator::Exact);
        let c: FitConfig = toml::from_str("[mul]\nmcmd = { random_features = 0 }").unwrap();
        assert!(matches!(c.validate(), Err(Error::Param { name: "mcmd.random_features", .. })));
        assert!(toml::from_str::<FitConfig>("[mul]\nmcmd = \"fast\"").is_err());
    }

    #[test]
    fn label_kernel_reads_from_toml_by_name() {
        let c: FitConfig = toml::from_str("[mul]\nlabel_kernel = \"gaussian\"").unwrap();
        assert_eq!(c.mul.label_kernel, LabelKernel::GaussianAuto);
        c.validate().unwrap();
        assert_eq!(FitConfig::default().mul.label_kernel, LabelKernel::Linear);
        assert!(toml::from_str::<FitConfig>("[mul]\nlabel_kernel = \"cubic\"").is_err());
    }
}
