//! The study's scores per (domain, family, estimator): ℓ1 error over draws and interval
//! coverage (per class, split by present and absent classes, and joint), as in the module doc
//! of [`super`].

use std::collections::BTreeMap;

use glshift::eval::mean_std;
use glshift::label_shift::suite::SUITE;
use glshift::label_shift::IntervalMethod;

use super::{Coverage, DomainStudy, DrawRecord, StudyConfig, SummaryRow};

/// One summary row per (domain, family of `cfg`, estimator of the suite), in that order.
pub(super) fn summarise(domains: &[DomainStudy], cfg: &StudyConfig) -> Vec<SummaryRow> {
    let mut rows = Vec::new();
    for d in domains {
        for fam in &cfg.families {
            let label = fam.label();
            let draws: Vec<&DrawRecord> = d.draws.iter().filter(|r| r.family == label).collect();
            let no_corr: Vec<f64> = draws.iter().map(|r| r.source_target_l1).collect();
            for name in SUITE {
                let l1: Vec<f64> = draws
                    .iter()
                    .filter_map(|r| r.estimates.get(name))
                    .map(|e| e.prior_l1_error)
                    .collect();
                let failures = draws.len() - l1.len();
                let (m, s) = mean_std(&l1);
                let by: BTreeMap<String, Coverage> = IntervalMethod::ALL
                    .iter()
                    .map(|&im| {
                        let cov = coverage(&draws, |r| {
                            r.estimates
                                .get(name)
                                .and_then(|e| e.intervals.get(im.name()))
                                .map(|i| &i.covered[..])
                        });
                        (im.name().to_string(), cov)
                    })
                    .collect();
                let main = coverage(&draws, |r| r.estimates.get(name).map(|e| &e.covered[..]));
                rows.push(SummaryRow {
                    data: d.data.clone(),
                    domain: d.domain.clone(),
                    family: label.clone(),
                    estimator: name.to_string(),
                    draws: draws.len(),
                    failures,
                    l1_mean: m,
                    l1_std: s,
                    no_correction_l1_mean: mean_std(&no_corr).0,
                    coverage: main.coverage,
                    coverage_present: main.coverage_present,
                    coverage_absent: main.coverage_absent,
                    joint_coverage: main.joint_coverage,
                    coverage_by_interval: by,
                });
            }
        }
    }
    rows
}

/// Coverage over `draws` of the per-class flags that `covered` picks; a draw without them
/// (failed estimate) counts as uncovered.
fn coverage<'a>(
    draws: &[&'a DrawRecord],
    covered: impl Fn(&'a DrawRecord) -> Option<&'a [bool]>,
) -> Coverage {
    let (mut cov, mut n_cov, mut cov_p, mut n_p, mut cov_a, mut n_a, mut joint) =
        (0, 0, 0, 0, 0, 0, 0);
    for r in draws {
        let flags = covered(r);
        for (k, &t) in r.true_prior.iter().enumerate() {
            let ok = flags.is_some_and(|f| f[k]) as usize;
            cov += ok;
            n_cov += 1;
            if t > 0.0 {
                cov_p += ok;
                n_p += 1;
            } else {
                cov_a += ok;
                n_a += 1;
            }
        }
        joint += flags.is_some_and(|f| f.iter().all(|&b| b)) as usize;
    }
    let frac = |a: usize, b: usize| if b == 0 { f64::NAN } else { a as f64 / b as f64 };
    Coverage {
        coverage: frac(cov, n_cov),
        coverage_present: frac(cov_p, n_p),
        coverage_absent: (n_a > 0).then(|| frac(cov_a, n_a)),
        joint_coverage: frac(joint, draws.len()),
    }
}
