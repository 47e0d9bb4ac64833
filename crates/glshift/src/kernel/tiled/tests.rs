//! Unit tests of the tiling, the schedule and the row permutation.

use super::pass::permute_rows;
use super::plan::circle_rounds;
use super::request::{one_hot_classes, split_even};

#[test]
fn circle_rounds_cover_every_pair_once_with_disjoint_tiles_per_round() {
    for b in [2usize, 3, 4, 7, 10] {
        let rounds = circle_rounds(b);
        let mut seen = std::collections::BTreeSet::new();
        for r in &rounds {
            let mut tiles = std::collections::BTreeSet::new();
            for &(i, j) in r {
                assert!(i < j && j < b);
                assert!(tiles.insert(i) && tiles.insert(j), "tile twice in a round");
                assert!(seen.insert((i, j)), "pair twice");
            }
        }
        assert_eq!(seen.len(), b * (b - 1) / 2);
    }
    assert!(circle_rounds(1).is_empty());
}

#[test]
fn permute_rows_moves_each_row_to_its_destination() {
    let dest = [2usize, 0, 1, 3, 5, 4];
    let mut buf: Vec<u32> = (0..12).collect(); // 6 rows of 2
    permute_rows(&mut buf, 2, &dest);
    let mut want = vec![0u32; 12];
    for (k, &to) in dest.iter().enumerate() {
        want[2 * to] = 2 * k as u32;
        want[2 * to + 1] = 2 * k as u32 + 1;
    }
    assert_eq!(buf, want);
}

#[test]
fn split_even_gives_near_equal_parts_of_at_most_max() {
    let parts = split_even(600, 256);
    assert_eq!(parts, vec![0..200, 200..400, 400..600]);
    assert_eq!(split_even(256, 256), vec![0..256]);
    assert!(split_even(0, 256).is_empty());
}

#[test]
fn one_hot_detection_accepts_zero_rows_and_rejects_soft_rows() {
    let y = ndarray::array![[0.0f32, 1.0], [0.0, 0.0], [1.0, 0.0]];
    assert_eq!(one_hot_classes(y.view()), Some(vec![1, usize::MAX, 0]));
    let soft = ndarray::array![[0.5f32, 0.5]];
    assert_eq!(one_hot_classes(soft.view()), None);
    let two = ndarray::array![[1.0f32, 1.0]];
    assert_eq!(one_hot_classes(two.view()), None);
}
