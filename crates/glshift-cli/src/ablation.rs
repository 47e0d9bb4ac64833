//! `glshift ablation`: the paper's ablation table (J_TU only; w,y + J_TU; w,y + J_DU;
//! J_TU + J_DU; full MUL; full MUL with class-wise MMD) as a `bench` grid over MUL variants
//! (`glshift_experiments::ablation`), optionally with each MCMD row under several label
//! kernels (`--label-kernels linear,gaussian`) and only some rows (`--rows mul,mul-mmd`).

use anyhow::Result;
use clap::{Args, ValueEnum};
use glshift::kernel::LabelKernel;
use glshift_experiments::ablation::ablation_variants;

use crate::bench::{run_grid, GridArgs};
use crate::fit::resolve_config_on;

/// Label kernel of MCMD (docs/ablation.md, "Label kernel").
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LabelKernelArg {
    /// B = I: class means shrunk by n_k/(n_k + εn).
    Linear,
    /// exp(−‖y − y′‖²/σ) on one-hot source and soft target labels, σ by CKB's rule.
    Gaussian,
}

impl From<LabelKernelArg> for LabelKernel {
    fn from(k: LabelKernelArg) -> LabelKernel {
        match k {
            LabelKernelArg::Linear => LabelKernel::Linear,
            LabelKernelArg::Gaussian => LabelKernel::GaussianAuto,
        }
    }
}

#[derive(Args, Debug)]
pub struct AblationArgs {
    #[command(flatten)]
    pub grid: GridArgs,
    /// Label kernels of the MCMD rows (default: the configuration's). With two or more, each
    /// MCMD row runs once per kernel (ids `ablation-ROW-KERNEL`).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub label_kernels: Vec<LabelKernelArg>,
    /// Only these rows (ids: tu, wy-tu, wy-du, tu-du, mul, mul-mmd; default: all).
    #[arg(long, value_delimiter = ',')]
    pub rows: Option<Vec<String>>,
}

pub fn run(args: AblationArgs) -> Result<()> {
    let base = resolve_config_on(args.grid.run.config.as_ref(), None, None, args.grid.run.device)?;
    let kernels: Vec<(String, LabelKernel)> = args
        .label_kernels
        .iter()
        .map(|&k| {
            (k.to_possible_value().map_or_else(String::new, |v| v.get_name().to_string()), k.into())
        })
        .collect();
    run_grid(&args.grid, &ablation_variants(&base, &kernels, args.rows.as_deref())?)
}
