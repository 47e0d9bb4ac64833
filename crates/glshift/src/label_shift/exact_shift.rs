//! Draws for the parametric bootstraps under exact label shift that the fit's diagnostics
//! ([`super::fit_diagnostics`]) and the prior guard ([`super::prior_guard`]) share. A replicate
//! resamples the labelled hold-out within each class (so C* keeps the hold-out's class counts)
//! and draws a synthetic target of n_t rows: a class k from a prior p (over the classes the
//! hold-out has), then a hold-out row of class k. Such a target satisfies
//! `P_t(x|y) = P_s(x|y)` exactly, whatever p is.

use ndarray::ArrayView2;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Row indices of each class 0..c (c lists; a class without rows has an empty one).
pub(crate) fn rows_by_class(labels: &[usize], c: usize) -> Vec<Vec<usize>> {
    (0..c).map(|k| (0..labels.len()).filter(|&i| labels[i] == k).collect()).collect()
}

/// One within-class resample of the hold-out: as many rows of each class as it has, drawn with
/// replacement, class by class.
pub(crate) fn resample_within_class(by_class: &[Vec<usize>], rng: &mut ChaCha8Rng) -> Vec<usize> {
    let mut rows = Vec::with_capacity(by_class.iter().map(Vec::len).sum());
    for members in by_class {
        rows.extend((0..members.len()).map(|_| members[rng.random_range(0..members.len())]));
    }
    rows
}

/// The classes a synthetic target can draw (those with hold-out rows) with their prior mass.
pub(crate) struct Drawable {
    classes: Vec<(usize, f64)>,
    mass: f64,
}

impl Drawable {
    /// `prior` (length c) restricted to the classes of `by_class` that have rows.
    pub fn new(by_class: &[Vec<usize>], prior: &[f64]) -> Drawable {
        let classes: Vec<(usize, f64)> =
            (0..prior.len()).filter(|&k| !by_class[k].is_empty()).map(|k| (k, prior[k])).collect();
        let mass = classes.iter().map(|d| d.1).sum();
        Drawable { classes, mass }
    }

    /// `n_t` hold-out row indices of a synthetic label-shift target.
    pub fn target(&self, by_class: &[Vec<usize>], n_t: usize, rng: &mut ChaCha8Rng) -> Vec<usize> {
        (0..n_t)
            .map(|_| {
                let m = &by_class[self.pick(rng.random::<f64>())];
                m[rng.random_range(0..m.len())]
            })
            .collect()
    }

    /// The class whose cumulative mass first exceeds `u·mass` (the last one on rounding).
    fn pick(&self, u: f64) -> usize {
        let mut acc = 0.0;
        for &(k, m) in &self.classes {
            acc += m;
            if u * self.mass < acc {
                return k;
            }
        }
        self.classes.last().map_or(0, |d| d.0)
    }
}

/// The rows (of n × c probabilities) whose top probability exceeds τ, in order.
pub(crate) fn confident_rows(probs: ArrayView2<f32>, tau: f64) -> Vec<usize> {
    (0..probs.nrows())
        .filter(|&i| probs.row(i).iter().cloned().fold(0.0f32, f32::max) > tau as f32)
        .collect()
}

/// Share of rows (of n × c probabilities) whose top probability exceeds τ; 0 for no rows.
pub(crate) fn confident_share(probs: ArrayView2<f32>, tau: f64) -> f64 {
    confident_rows(probs, tau).len() as f64 / probs.nrows().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn draws_keep_class_counts_and_follow_the_prior() {
        let labels = [0, 0, 1, 2, 2, 2];
        let by_class = rows_by_class(&labels, 4);
        assert_eq!(by_class, vec![vec![0, 1], vec![2], vec![3, 4, 5], vec![]]);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let rows = resample_within_class(&by_class, &mut rng);
        let ys: Vec<usize> = rows.iter().map(|&i| labels[i]).collect();
        assert_eq!(ys, vec![0, 0, 1, 2, 2, 2], "within-class resampling keeps the counts");
        // Class 3 has no row: its mass is dropped and the rest renormalised.
        let d = Drawable::new(&by_class, &[0.5, 0.0, 0.25, 0.25]);
        let t = d.target(&by_class, 4000, &mut rng);
        let share0 = t.iter().filter(|&&i| labels[i] == 0).count() as f64 / 4000.0;
        assert!((share0 - 2.0 / 3.0).abs() < 0.03, "{share0}");
        assert!(t.iter().all(|&i| labels[i] != 1), "a class of prior 0 is never drawn");
    }
}
