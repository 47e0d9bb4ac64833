//! The paper's ablation table (J_TU only; w,y + J_TU; w,y + J_DU; J_TU + J_DU; full MUL; full
//! MUL with class-wise MMD) as grid variants over MUL: one [`Variant`] per row of
//! `glshift::config::ABLATION_ROWS` (and per label kernel of MCMD when several are asked
//! for), run by [`crate::grid::run_grid`].

use glshift::config::{FitConfig, ABLATION_ROWS};
use glshift::kernel::LabelKernel;
use glshift::methods::Discrepancy;

use crate::grid::Variant;
use crate::{Error, Result};

/// One validated variant per ablation row, each built on `base`; ids `ablation-ROW`.
///
/// `kernels` (name, kernel): empty keeps `base`'s label kernel; one replaces it; with two or
/// more every MCMD row runs once per kernel, ids `ablation-ROW-NAME`. The class-wise MMD row
/// reads no label kernel and runs once. `rows` keeps only the rows with these ids (an unknown
/// id is an error naming it).
pub fn ablation_variants(
    base: &FitConfig,
    kernels: &[(String, LabelKernel)],
    rows: Option<&[String]>,
) -> Result<Vec<Variant>> {
    if let Some(bad) =
        rows.into_iter().flatten().find(|r| !ABLATION_ROWS.iter().any(|row| row.id == r.as_str()))
    {
        let ids: Vec<&str> = ABLATION_ROWS.iter().map(|r| r.id).collect();
        return Err(Error::param(
            "--rows",
            bad,
            format!("unknown ablation row; expected one of {}", ids.join(", ")),
        ));
    }
    let mut variants = Vec::new();
    for row in ABLATION_ROWS.iter().filter(|r| rows.is_none_or(|ids| ids.iter().any(|i| i == r.id)))
    {
        let cfg = row.config(base);
        let per_kernel = row.discrepancy == Discrepancy::Mcmd && kernels.len() > 1;
        if !per_kernel {
            let mut cfg = cfg;
            if let Some((_, k)) = kernels.first() {
                cfg.mul.label_kernel = *k;
            }
            variants.push(Variant {
                id: format!("ablation-{}", row.id),
                label: row.label.to_string(),
                cfg,
            });
            continue;
        }
        for (name, k) in kernels {
            let mut cfg = cfg.clone();
            cfg.mul.label_kernel = *k;
            variants.push(Variant {
                id: format!("ablation-{}-{name}", row.id),
                label: format!("{} [{name} label kernel]", row.label),
                cfg,
            });
        }
    }
    for v in &variants {
        v.cfg.validate().map_err(|e| Error::run(format!("ablation row {}", v.label), e))?;
    }
    Ok(variants)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_label_kernels_double_the_mcmd_rows_and_keep_one_mmd_row() {
        let base = FitConfig::default();
        let kernels = [
            ("linear".to_string(), LabelKernel::Linear),
            ("gaussian".to_string(), LabelKernel::GaussianAuto),
        ];
        let rows = ["mul".to_string(), "mul-mmd".to_string()];
        let v = ablation_variants(&base, &kernels, Some(&rows)).unwrap();
        let ids: Vec<&str> = v.iter().map(|v| v.id.as_str()).collect();
        assert_eq!(ids, ["ablation-mul-linear", "ablation-mul-gaussian", "ablation-mul-mmd"]);
        assert_eq!(
            (v[0].cfg.mul.label_kernel, v[1].cfg.mul.label_kernel),
            (LabelKernel::Linear, LabelKernel::GaussianAuto)
        );
        // No kernel given: the ids and configurations of the plain ablation.
        let plain = ablation_variants(&base, &[], None).unwrap();
        assert_eq!(plain.len(), ABLATION_ROWS.len());
        assert_eq!(plain.iter().find(|v| v.id == "ablation-mul").unwrap().cfg, base);
        assert!(ablation_variants(&base, &[], Some(&["nope".to_string()])).is_err());
    }
}
