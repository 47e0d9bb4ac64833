//! How `[baselines]` is read: today's layout, and the flat keys of files written before each
//! method's knobs had their own sub-section (model headers and configuration files keep them).
//! An old key is read into its new place; giving it beside its sub-section is refused, naming
//! both keys, since the file would say two things.

use serde::Deserialize;

use super::config::{BaselineConfig, BaselineSchedule};
use super::sections::{AdversarialConfig, CdanConfig, JanConfig, KmmConfig, MmdConfig, PadaConfig};

/// `[baselines]` as written in a file: every key of [`BaselineConfig`] (`training` read as
/// `schedule`), the sub-sections optional, and the flat keys they replaced.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BaselineConfigFile {
    trade_off: Option<f64>,
    #[serde(alias = "training")]
    schedule: Option<BaselineSchedule>,
    iterations: Option<usize>,
    batch_size: Option<usize>,
    lr: Option<f64>,
    lr_alpha: Option<f64>,
    lr_beta: Option<f64>,
    momentum: Option<f64>,
    nesterov: Option<bool>,
    weight_decay: Option<f64>,
    adversarial: Option<AdversarialConfig>,
    cdan: Option<CdanConfig>,
    pada: Option<PadaConfig>,
    mmd: Option<MmdConfig>,
    jan: Option<JanConfig>,
    kmm: Option<KmmConfig>,
    grl_gamma: Option<f64>,
    discriminator_hidden: Option<Vec<usize>>,
    discriminator_dropout: Option<f32>,
    cdan_max_multilinear_dim: Option<usize>,
    cdan_random_dim: Option<usize>,
    pada_update_interval: Option<usize>,
    mk_kernels: Option<usize>,
    jan_prediction_bandwidth: Option<f64>,
}

/// An old flat key given beside the sub-section that replaced it.
#[derive(Debug)]
pub struct OldAndNewKey {
    old: &'static str,
    section: &'static str,
}

impl std::fmt::Display for OldAndNewKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`baselines.{}` is the former name of a key of `[{}]`; give the key in `[{}]` only",
            self.old, self.section, self.section
        )
    }
}

/// The sub-section, from the file's section or else the defaults, with the old flat keys
/// written into it; an error when the file has both.
fn section<T: Default>(
    given: Option<T>,
    name: &'static str,
    old: &[(&'static str, bool)],
    apply_old: impl FnOnce(&mut T),
) -> Result<T, OldAndNewKey> {
    let any_old = old.iter().find(|(_, present)| *present);
    match (given, any_old) {
        (Some(_), Some((key, _))) => Err(OldAndNewKey { old: key, section: name }),
        (Some(s), None) => Ok(s),
        (None, _) => {
            let mut s = T::default();
            apply_old(&mut s);
            Ok(s)
        }
    }
}

impl TryFrom<BaselineConfigFile> for BaselineConfig {
    type Error = OldAndNewKey;

    fn try_from(f: BaselineConfigFile) -> Result<Self, OldAndNewKey> {
        let d = BaselineConfig::default();
        let adversarial = section(
            f.adversarial,
            "baselines.adversarial",
            &[
                ("grl_gamma", f.grl_gamma.is_some()),
                ("discriminator_hidden", f.discriminator_hidden.is_some()),
                ("discriminator_dropout", f.discriminator_dropout.is_some()),
            ],
            |s: &mut AdversarialConfig| {
                s.grl_gamma = f.grl_gamma.unwrap_or(s.grl_gamma);
                s.discriminator_hidden =
                    f.discriminator_hidden.clone().unwrap_or(s.discriminator_hidden.clone());
                s.discriminator_dropout =
                    f.discriminator_dropout.unwrap_or(s.discriminator_dropout);
            },
        )?;
        let cdan = section(
            f.cdan,
            "baselines.cdan",
            &[
                ("cdan_max_multilinear_dim", f.cdan_max_multilinear_dim.is_some()),
                ("cdan_random_dim", f.cdan_random_dim.is_some()),
            ],
            |s: &mut CdanConfig| {
                s.max_multilinear_dim = f.cdan_max_multilinear_dim.unwrap_or(s.max_multilinear_dim);
                s.random_dim = f.cdan_random_dim.unwrap_or(s.random_dim);
            },
        )?;
        let pada = section(
            f.pada,
            "baselines.pada",
            &[("pada_update_interval", f.pada_update_interval.is_some())],
            |s: &mut PadaConfig| {
                s.update_interval = f.pada_update_interval.unwrap_or(s.update_interval)
            },
        )?;
        let mmd = section(
            f.mmd,
            "baselines.mmd",
            &[("mk_kernels", f.mk_kernels.is_some())],
            |s: &mut MmdConfig| s.kernels = f.mk_kernels.unwrap_or(s.kernels),
        )?;
        let jan = section(
            f.jan,
            "baselines.jan",
            &[("jan_prediction_bandwidth", f.jan_prediction_bandwidth.is_some())],
            |s: &mut JanConfig| {
                s.prediction_bandwidth =
                    f.jan_prediction_bandwidth.unwrap_or(s.prediction_bandwidth)
            },
        )?;
        Ok(BaselineConfig {
            trade_off: f.trade_off.unwrap_or(d.trade_off),
            schedule: f.schedule.unwrap_or(d.schedule),
            iterations: f.iterations.unwrap_or(d.iterations),
            batch_size: f.batch_size.unwrap_or(d.batch_size),
            lr: f.lr.unwrap_or(d.lr),
            lr_alpha: f.lr_alpha.unwrap_or(d.lr_alpha),
            lr_beta: f.lr_beta.unwrap_or(d.lr_beta),
            momentum: f.momentum.unwrap_or(d.momentum),
            nesterov: f.nesterov.unwrap_or(d.nesterov),
            weight_decay: f.weight_decay.unwrap_or(d.weight_decay),
            adversarial,
            cdan,
            pada,
            mmd,
            jan,
            kmm: f.kmm.unwrap_or(d.kmm),
        })
    }
}
