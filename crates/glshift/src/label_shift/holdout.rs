//! Stratified source hold-out for the BBSE confusion matrix.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::prior::check_labels;
use crate::{Error, Result};

/// Stratified hold-out split of source rows; returns `(train_idx, holdout_idx)`, both sorted,
/// disjoint, together covering `0..labels.len()`.
///
/// For each class with `n_k` rows, `round(fraction · n_k)` rows go to the hold-out, clamped to
/// `[1, n_k − 1]` when `n_k ≥ 2` and `fraction > 0` (every class with two rows or more is seen
/// both in training and in the confusion estimate — pitfall 1), and to 0 when `n_k = 1`
/// (never all rows of a class). `fraction = 0` gives an empty hold-out. Rows are chosen by
/// shuffling each class (in class order) with one `ChaCha8Rng` seeded by `seed`.
///
/// Errors: `fraction` outside `[0, 1)` or NaN, `c == 0`, empty `labels`, a label `>= c`.
pub fn stratified_holdout(
    labels: &[usize],
    c: usize,
    fraction: f64,
    seed: u64,
) -> Result<(Vec<usize>, Vec<usize>)> {
    if !(0.0..1.0).contains(&fraction) {
        return Err(Error::param("fraction", fraction, "must lie in [0, 1)"));
    }
    let by_class = rows_by_class(labels, c)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut train, mut hold) = (Vec::new(), Vec::new());
    for mut rows in by_class {
        let n_k = rows.len();
        let m = if n_k < 2 || fraction == 0.0 {
            0
        } else {
            ((fraction * n_k as f64).round() as usize).clamp(1, n_k - 1)
        };
        rows.shuffle(&mut rng);
        hold.extend_from_slice(&rows[..m]);
        train.extend_from_slice(&rows[m..]);
    }
    train.sort_unstable();
    hold.sort_unstable();
    Ok((train, hold))
}

/// Stratified assignment of rows to `k` folds for cross-fitting: returns the fold (`< k`) of
/// every row. Each class's rows are shuffled (classes in order, one `ChaCha8Rng` seeded by
/// `seed`) and dealt to folds round-robin, starting where the previous class stopped, so fold
/// sizes differ by at most one and every class with at least `k` rows appears in every fold.
///
/// Errors: `k < 2`, `c == 0`, empty `labels`, a label `>= c`.
pub fn stratified_folds(labels: &[usize], c: usize, k: usize, seed: u64) -> Result<Vec<usize>> {
    if k < 2 {
        return Err(Error::param("folds", k, "cross-fitting needs at least 2 folds"));
    }
    let by_class = rows_by_class(labels, c)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut fold = vec![0usize; labels.len()];
    let mut next = 0usize;
    for mut rows in by_class {
        rows.shuffle(&mut rng);
        for i in rows {
            fold[i] = next % k;
            next += 1;
        }
    }
    Ok(fold)
}

/// Row indices of each class, in row order, after checking that there are rows, at least one
/// class and no label `>= c`.
fn rows_by_class(labels: &[usize], c: usize) -> Result<Vec<Vec<usize>>> {
    if c == 0 {
        return Err(Error::param("c", c, "need at least one class"));
    }
    if labels.is_empty() {
        return Err(Error::bad_data("labels", "no rows to split"));
    }
    check_labels(labels, c, "labels")?;
    let mut by_class = vec![Vec::new(); c];
    for (i, &y) in labels.iter().enumerate() {
        by_class[y].push(i);
    }
    Ok(by_class)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stratified_folds_are_balanced_per_class_and_deterministic_under_a_seed() {
        let y: Vec<usize> = (0..103).map(|i| (i * 7) % 4).collect();
        let f = stratified_folds(&y, 4, 5, 3).unwrap();
        assert_eq!(f, stratified_folds(&y, 4, 5, 3).unwrap());
        assert_ne!(f, stratified_folds(&y, 4, 5, 4).unwrap());
        let sizes: Vec<usize> = (0..5).map(|m| f.iter().filter(|&&g| g == m).count()).collect();
        assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "{sizes:?}");
        for k in 0..4 {
            for m in 0..5 {
                let n = (0..y.len()).filter(|&i| y[i] == k && f[i] == m).count();
                assert!((5..=6).contains(&n), "class {k} fold {m}: {n} rows");
            }
        }
        assert!(stratified_folds(&y, 4, 1, 0).unwrap_err().to_string().contains("folds"));
    }
    use rand::Rng;

    fn labels(seed: u64) -> Vec<usize> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        // class 3 has 2 rows, class 4 one row, class 5 none
        let mut y: Vec<usize> = (0..200).map(|_| rng.random_range(0..3)).collect();
        y.extend([3, 4, 3]);
        y
    }

    #[test]
    fn holdout_is_disjoint_covering_sorted_and_stratified() {
        let y = labels(1);
        let (train, hold) = stratified_holdout(&y, 6, 0.2, 7).unwrap();
        let mut all: Vec<usize> = train.iter().chain(&hold).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..y.len()).collect::<Vec<_>>());
        assert!(train.windows(2).all(|w| w[0] < w[1]) && hold.windows(2).all(|w| w[0] < w[1]));
        for k in 0..6 {
            let n_k = y.iter().filter(|&&v| v == k).count();
            let h = hold.iter().filter(|&&i| y[i] == k).count();
            if n_k >= 2 {
                assert!(h >= 1 && h < n_k, "class {k}: {h} of {n_k}");
                if n_k > 10 {
                    assert_eq!(h, (0.2 * n_k as f64).round() as usize);
                }
            } else {
                assert_eq!(h, 0, "class {k} with {n_k} rows");
            }
        }
    }

    #[test]
    fn holdout_is_deterministic_per_seed() {
        let y = labels(2);
        let a = stratified_holdout(&y, 6, 0.3, 11).unwrap();
        assert_eq!(a, stratified_holdout(&y, 6, 0.3, 11).unwrap());
        assert_ne!(a, stratified_holdout(&y, 6, 0.3, 12).unwrap());
    }

    #[test]
    fn holdout_small_fraction_still_holds_one_row_and_zero_fraction_none() {
        let y = vec![0, 0, 0, 1, 1];
        let (_, hold) = stratified_holdout(&y, 2, 0.01, 0).unwrap();
        assert_eq!(hold.len(), 2);
        let (train, hold) = stratified_holdout(&y, 2, 0.0, 0).unwrap();
        assert!(hold.is_empty() && train.len() == 5);
        // 0.9 of 2 rows rounds to 2 but one must stay in training
        let (train, _) = stratified_holdout(&[0, 0], 1, 0.9, 0).unwrap();
        assert_eq!(train.len(), 1);
    }

    #[test]
    fn holdout_rejects_bad_fraction_and_labels() {
        let y = [0, 1, 1];
        for f in [-0.1, 1.0, 1.5, f64::NAN] {
            assert!(stratified_holdout(&y, 2, f, 0).is_err(), "fraction {f}");
        }
        assert!(stratified_holdout(&y, 1, 0.2, 0).is_err());
        assert!(stratified_holdout(&[], 2, 0.2, 0).is_err());
    }
}
