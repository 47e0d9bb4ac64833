use super::*;
use ndarray::array;

#[test]
fn shared_rows_counts_the_target_rows_found_bitwise_in_the_source() {
    let a = array![[1.0f32, 2.0], [3.0, 4.0], [5.0, 6.0]];
    let b = array![[3.0f32, 4.0], [7.0, 8.0], [1.0, 2.0], [1.0, 2.0], [-0.0, 0.0]];
    assert_eq!(shared_rows(a.view(), b.view()), 3, "a repeated target row counts each time");
    assert_eq!(shared_rows(a.view(), a.view()), 3, "the same data shares every row");
    // Bitwise: 0.0 and -0.0 differ, one ulp differs, and other widths share nothing.
    let z = array![[0.0f32, 0.0]];
    assert_eq!(shared_rows(z.view(), b.view()), 0);
    let near = array![[1.0f32, f32::from_bits(2.0f32.to_bits() + 1)]];
    assert_eq!(shared_rows(a.view(), near.view()), 0);
    assert_eq!(shared_rows(a.view(), array![[1.0f32, 2.0, 0.0]].view()), 0);
    assert_eq!(shared_rows(a.view(), b.slice(ndarray::s![1..2, ..])), 0);
}

#[test]
fn class_counts_counts_each_class() {
    assert_eq!(class_counts(&[0, 2, 2, 1, 2], 4), vec![1, 1, 3, 0]);
    assert_eq!(class_counts(&[], 2), vec![0, 0]);
}
