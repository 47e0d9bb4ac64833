//! Arguments shared by several commands, flattened into each command's own arguments: the
//! `--data DIR --source A --target B` of the commands that train on one domain pair (`fit`,
//! `select`, `shift test`), the protocol (`fit`, `select`) and the run's `--config`, `--out`,
//! `--quiet` (`fit`, `select`, `bench`, `ablation`).

use std::path::PathBuf;

use clap::Args;
use glshift::data::{self, Domain};
use glshift::records::Protocol;

#[derive(Args, Debug, Clone)]
pub struct PairArgs {
    /// Folder holding the domains (npy layout, MATLAB v5 .mat files or CSV files).
    #[arg(long)]
    pub data: PathBuf,
    /// Labelled source domain name (e.g. amazon); `fit` and `select` also take several,
    /// comma-separated (`amazon,dslr`): pooled, in any order the same fit (docs/multi-source.md).
    #[arg(long)]
    pub source: String,
    /// Target domain name; its labels, if present, never train or test anything (`fit` reads
    /// them only to score the result).
    #[arg(long)]
    pub target: String,
}

impl PairArgs {
    /// The source names of `--source` (comma-separated; an empty name is an error).
    pub fn sources(&self) -> anyhow::Result<Vec<String>> {
        let names: Vec<String> = self.source.split(',').map(|s| s.trim().to_string()).collect();
        if names.iter().any(String::is_empty) {
            anyhow::bail!("--source {:?}: an empty domain name", self.source);
        }
        Ok(names)
    }

    /// Loads the two domains (errors name the file and the problem).
    pub fn load(&self) -> glshift::Result<(Domain, Domain)> {
        data::load_pair(&self.data, &self.source, &self.target)
    }

    /// Several sources `names` (from [`PairArgs::sources`]) pooled, with the target
    /// (`glshift::data::load_sources`); `--setting uda` only.
    pub fn load_pooled(
        &self,
        names: &[String],
        protocol: &ProtocolArgs,
    ) -> anyhow::Result<(data::PooledSource, Domain)> {
        if protocol.parse(2)? != Protocol::Uda {
            anyhow::bail!("--source with several domains: only --setting uda is supported");
        }
        Ok(data::load_sources(&self.data, names, &self.target)?)
    }
}

/// `--seed` of a command that reads a config file (`fit`, `select`, `iw`, `shift estimate`,
/// `shift study`, `shift test`): it overrides the file's `seed`; absent, the file's seed holds
/// (0 without a file). Commands without a config file (`generate`, `shift simulate`,
/// `shift test-calibration`, `perf`) take a plain `--seed`, 0 by default: the same value.
#[derive(Args, Debug, Clone, Copy)]
pub struct SeedArg {
    /// Random seed (network initialisation, hold-out split, dropout, resampling). Overrides the
    /// config file's `seed` (default: the file's, 0 without one).
    #[arg(long)]
    pub seed: Option<u64>,
}

impl SeedArg {
    /// The seed given on the command line, if any.
    pub fn get(self) -> Option<u64> {
        self.seed
    }
}

/// The task protocols (`--setting`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettingArg {
    /// Domains unchanged.
    Uda,
    /// Partial DA: the target keeps the first --pda-classes classes.
    Pda,
    /// Generalized label shift: the source subsampled as in Combes et al.
    Gls,
    /// Multi-source, leave one domain out: each target with every other domain pooled as its
    /// source (`glshift bench`; `fit` takes several sources as `--source a,b`).
    Msda,
}

impl SettingArg {
    /// The protocol's name as records and `glshift::records::Protocol::parse` spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            SettingArg::Uda => "uda",
            SettingArg::Pda => "pda",
            SettingArg::Gls => "gls",
            SettingArg::Msda => "msda",
        }
    }
}

/// `--setting uda|pda|gls [--pda-classes K]`, shared by `fit` and `select`.
#[derive(Args, Debug, Clone)]
pub struct ProtocolArgs {
    /// Task protocol: uda (domains unchanged), pda (target keeps the first --pda-classes classes)
    /// or gls (source subsampled as in Combes et al.); see `glshift bench`.
    #[arg(long, value_enum, default_value_t = SettingArg::Uda)]
    pub setting: SettingArg,
    /// Number of target classes kept in pda (default: half of the classes).
    #[arg(long)]
    pub pda_classes: Option<usize>,
}

impl ProtocolArgs {
    /// The protocol for a source of `n_classes` classes (errors name the bad setting; `msda`
    /// is a grid of tasks, not one task).
    pub fn parse(&self, n_classes: usize) -> glshift::Result<Protocol> {
        if self.setting == SettingArg::Msda {
            return Err(glshift::Error::param(
                "setting",
                "msda",
                "msda is `glshift bench`'s leave-one-domain-out grid; for one multi-source fit give the sources as --source a,b",
            ));
        }
        Protocol::parse(self.setting.as_str(), n_classes, self.pda_classes)
    }
}

/// `--config FILE --out DIR --quiet`, shared by `fit`, `select` and the grid commands. A
/// command whose flags mean more than these generic texts say (what `--out` holds, what the
/// config is the base of) rewrites the help with `#[command(mut_arg(...))]` on its own
/// arguments, so each command's `--help` reads as before. (`--seed` is not here: `fit` and
/// `select` take one seed, [`SeedArg`], the grid commands a list, `--seeds`.)
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// TOML file with settings over the defaults (see docs/configuration.md).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Output folder.
    #[arg(long)]
    pub out: PathBuf,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Where the products run: `cpu`, `cuda` (an error without a usable GPU) or `auto` (CUDA
    /// where a driver, cuBLAS, NVRTC and a device are found, else the CPU). Overrides the
    /// config file's `device` (default `auto`); the report says which ran.
    #[arg(long, value_parser = crate::core_values::parser::<glshift::device::Device>())]
    pub device: Option<glshift::device::Device>,
}
