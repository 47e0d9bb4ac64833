//! The paper's ablation table (J_TU only; w,y + J_TU; w,y + J_DU; J_TU + J_DU; full MUL; full
//! MUL with class-wise MMD) as grid variants over MUL: one [`Variant`] per row of
//! `glshift::methods::ABLATION_ROWS`, run by [`crate::grid::run_grid`].

use glshift::methods::{FitConfig, ABLATION_ROWS};

use crate::grid::Variant;
use crate::{Error, Result};

/// One validated variant per ablation row, each built on `base`; ids `ablation-ROW`.
pub fn ablation_variants(base: &FitConfig) -> Result<Vec<Variant>> {
    let variants: Vec<Variant> = ABLATION_ROWS
        .iter()
        .map(|row| Variant { id: format!("ablation-{}", row.id), label: row.label.to_string(), cfg: row.config(base) })
        .collect();
    for v in &variants {
        v.cfg.validate().map_err(|e| Error::run(format!("ablation row {}", v.label), e))?;
    }
    Ok(variants)
}
