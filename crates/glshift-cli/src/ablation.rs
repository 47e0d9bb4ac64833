//! `glshift ablation`: the paper's ablation table (J_TU only; w,y + J_TU; w,y + J_DU;
//! J_TU + J_DU; full MUL; full MUL with class-wise MMD) as a `bench` grid over MUL variants.

use anyhow::{Context, Result};
use clap::Args;
use glshift::methods::ABLATION_ROWS;

use crate::bench::{run_grid, GridArgs, Variant};
use crate::fit::resolve_config;

#[derive(Args, Debug)]
pub struct AblationArgs {
    #[command(flatten)]
    pub grid: GridArgs,
}

pub fn run(args: AblationArgs) -> Result<()> {
    let base = resolve_config(args.grid.config.as_ref(), None, None)?;
    let variants: Vec<Variant> = ABLATION_ROWS
        .iter()
        .map(|row| Variant { id: format!("ablation-{}", row.id), label: row.label.to_string(), cfg: row.config(&base) })
        .collect();
    for v in &variants {
        v.cfg.validate().with_context(|| format!("ablation row {}", v.label))?;
    }
    run_grid(&args.grid, &variants)
}
