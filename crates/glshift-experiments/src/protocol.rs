//! Evaluation protocols that turn a source/target pair into a UDA, partial-DA or GLS task
//! ([`Protocol`], the record of how a task was built, lives in `glshift::records`).
//!
//! - `uda`: both domains unchanged.
//! - `pda`: the target keeps only the first k classes (order of `classes.txt`); the source keeps
//!   all classes.
//! - `gls`: the subsampling protocol of Combes et al. (NeurIPS 2020) as the MUL paper uses it: the
//!   source keeps int(0.3·n_c) rows, drawn without replacement with a fixed seed, of each class in
//!   the first half of the classes, and all rows of the others; the target is untouched.
//! - `msda`: the pooled sources and the target unchanged (the grid pools every other domain).

use glshift::data::Domain;
pub use glshift::records::Protocol;
use ndarray::Axis;
use rand::seq::index::sample;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::{Error, Result};

/// The domain restricted to `rows` (gathered once; the other rows' features are not copied).
fn keep_rows(d: &Domain, rows: &[usize]) -> Domain {
    Domain {
        name: d.name.clone(),
        features: d.features.select(Axis(0), rows),
        labels: d.labels.as_ref().map(|y| rows.iter().map(|&i| y[i]).collect()),
        class_names: d.class_names.clone(),
        path: d.path.clone(),
        format: d.format,
        label_rule: d.label_rule,
        feature_names: d.feature_names.clone(),
    }
}

fn labels_of<'a>(d: &'a Domain, role: &str) -> Result<&'a [usize]> {
    d.labels.as_deref().ok_or_else(|| {
        Error::bad_data(
            d.path.display().to_string(),
            format!("the {role} needs labels for this protocol"),
        )
    })
}

/// Applies the protocol. PDA needs target labels to select the rows: that is how the benchmark
/// *constructs* the task, before any training, exactly as the published protocol does.
pub fn apply(p: Protocol, source: &Domain, target: &Domain) -> Result<(Domain, Domain)> {
    let (s_rows, t_rows) = rows_kept(p, source, target)?;
    let pick =
        |d: &Domain, rows: Option<Vec<usize>>| rows.map_or_else(|| d.clone(), |r| keep_rows(d, &r));
    Ok((pick(source, s_rows), pick(target, t_rows)))
}

/// [`apply`] taking the domains by value: a domain the protocol leaves whole is moved, not
/// copied (`glshift fit` on a large task holds one copy of its features).
pub fn apply_owned(p: Protocol, source: Domain, target: Domain) -> Result<(Domain, Domain)> {
    let (s_rows, t_rows) = rows_kept(p, &source, &target)?;
    let take = |d: Domain, rows: Option<Vec<usize>>| match rows {
        None => d,
        Some(r) => keep_rows(&d, &r),
    };
    Ok((take(source, s_rows), take(target, t_rows)))
}

/// Rows a domain keeps: `None` for all of them, in order.
type Kept = Option<Vec<usize>>;

/// The rows each domain keeps under `p`.
fn rows_kept(p: Protocol, source: &Domain, target: &Domain) -> Result<(Kept, Kept)> {
    let c = source.n_classes();
    match p {
        Protocol::Uda | Protocol::Msda => Ok((None, None)),
        Protocol::Pda { classes } => {
            if classes == 0 || classes > c {
                return Err(Error::param("pda-classes", classes, format!("must lie in 1..={c}")));
            }
            let y = labels_of(target, "target")?;
            let rows: Vec<usize> = (0..y.len()).filter(|&i| y[i] < classes).collect();
            if rows.is_empty() {
                return Err(Error::bad_data(
                    target.path.display().to_string(),
                    "no target row in the kept classes",
                ));
            }
            Ok((None, Some(rows)))
        }
        Protocol::Gls { fraction, seed } => {
            if !(fraction > 0.0 && fraction <= 1.0) {
                return Err(Error::param("gls fraction", fraction, "must lie in (0, 1]"));
            }
            let y = labels_of(source, "source")?;
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut rows = Vec::new();
            for k in 0..c {
                let class_rows: Vec<usize> = (0..y.len()).filter(|&i| y[i] == k).collect();
                if k < c / 2 {
                    let m = ((fraction * class_rows.len() as f64) as usize)
                        .max(1)
                        .min(class_rows.len());
                    rows.extend(
                        sample(&mut rng, class_rows.len(), m).into_iter().map(|j| class_rows[j]),
                    );
                } else {
                    rows.extend(class_rows);
                }
            }
            rows.sort_unstable();
            Ok((Some(rows), None))
        }
    }
}

/// The domain restricted to its first `k` classes (order of `classes.txt`): rows of later
/// classes are dropped and the class list is cut to `k` names. Used by the importance-weighting
/// ablation, which keeps the first 4 classes of both domains (paper, "effect of importance
/// weighting"); it needs labels, so on the target it is task construction, like `pda`.
pub fn first_classes(d: &Domain, k: usize) -> Result<Domain> {
    let c = d.n_classes();
    if k < 2 || k > c {
        return Err(Error::param("classes kept", k, format!("must lie in 2..={c}")));
    }
    let y = labels_of(d, "domain")?;
    let rows: Vec<usize> = (0..y.len()).filter(|&i| y[i] < k).collect();
    if rows.is_empty() {
        return Err(Error::bad_data(
            d.path.display().to_string(),
            format!("no row in the first {k} classes"),
        ));
    }
    let mut out = keep_rows(d, &rows);
    out.class_names.truncate(k);
    Ok(out)
}

/// Class counts of a labelled domain.
pub fn class_counts(d: &Domain) -> Option<Vec<usize>> {
    let y = d.labels.as_ref()?;
    let mut counts = vec![0usize; d.n_classes()];
    y.iter().for_each(|&k| counts[k] += 1);
    Some(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{generate, SyntheticConfig};

    fn task() -> (Domain, Domain) {
        let t = generate(&SyntheticConfig {
            n_classes: 6,
            n_source: 300,
            n_target: 240,
            ..Default::default()
        })
        .unwrap();
        (t.source, t.target)
    }

    #[test]
    fn pda_keeps_only_the_first_classes_in_the_target() {
        let (s, t) = task();
        let (s2, t2) = apply(Protocol::parse("pda", 6, None).unwrap(), &s, &t).unwrap();
        assert_eq!(s2.n(), s.n());
        let counts = class_counts(&t2).unwrap();
        assert!(counts[..3].iter().all(|&m| m > 0));
        assert!(counts[3..].iter().all(|&m| m == 0));
        assert_eq!(counts.iter().sum::<usize>(), t2.n());
    }

    #[test]
    fn gls_subsamples_the_first_half_of_source_classes_reproducibly() {
        let (s, t) = task();
        let p = Protocol::parse("gls", 6, None).unwrap();
        let (s2, t2) = apply(p, &s, &t).unwrap();
        let (before, after) = (class_counts(&s).unwrap(), class_counts(&s2).unwrap());
        for k in 0..6 {
            let expect = if k < 3 { ((0.3 * before[k] as f64) as usize).max(1) } else { before[k] };
            assert_eq!(after[k], expect, "class {k}");
        }
        assert_eq!(t2.n(), t.n());
        let (s3, _) = apply(p, &s, &t).unwrap();
        assert_eq!(s2.features, s3.features);
    }

    #[test]
    fn first_classes_drops_later_classes_and_their_names() {
        let (s, _) = task();
        let s4 = first_classes(&s, 4).unwrap();
        assert_eq!(s4.n_classes(), 4);
        let counts = class_counts(&s4).unwrap();
        assert_eq!(counts, class_counts(&s).unwrap()[..4].to_vec());
        assert!(first_classes(&s, 1).is_err() && first_classes(&s, 7).is_err());
    }

    #[test]
    fn unknown_setting_and_bad_pda_size_are_errors() {
        assert!(Protocol::parse("semi", 10, None).is_err());
        let (s, t) = task();
        assert!(apply(Protocol::Pda { classes: 0 }, &s, &t).is_err());
        assert!(apply(Protocol::Pda { classes: 7 }, &s, &t).is_err());
    }
}
