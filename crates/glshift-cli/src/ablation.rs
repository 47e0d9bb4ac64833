//! `glshift ablation`: the paper's ablation table (J_TU only; w,y + J_TU; w,y + J_DU;
//! J_TU + J_DU; full MUL; full MUL with class-wise MMD) as a `bench` grid over MUL variants
//! (`glshift_experiments::ablation`).

use anyhow::Result;
use clap::Args;
use glshift_experiments::ablation::ablation_variants;

use crate::bench::{run_grid, GridArgs};
use crate::fit::resolve_config;

#[derive(Args, Debug)]
pub struct AblationArgs {
    #[command(flatten)]
    pub grid: GridArgs,
}

pub fn run(args: AblationArgs) -> Result<()> {
    let base = resolve_config(args.grid.config.as_ref(), None, None)?;
    run_grid(&args.grid, &ablation_variants(&base)?)
}
