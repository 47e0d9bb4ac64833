use super::*;
use crate::data::FileFormat;
use ndarray::Array2;

fn domain(name: &str, n: usize, d: usize, classes: &[&str]) -> Domain {
    let c = classes.len();
    Domain {
        name: name.into(),
        features: Array2::from_shape_fn((n, d), |(i, j)| (i * d + j) as f32 + name.len() as f32),
        labels: Some((0..n).map(|i| i % c).collect()),
        class_names: classes.iter().map(|s| s.to_string()).collect(),
        path: format!("{name}_features.npy").into(),
        format: FileFormat::Npy,
        label_rule: crate::data::LabelRule::ZeroBased,
        feature_names: None,
    }
}

#[test]
fn names_are_sorted_and_a_duplicate_or_the_target_is_refused_by_name() {
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(check_source_names(&names(&["b", "a"]), "t").unwrap(), names(&["a", "b"]));
    let dup = check_source_names(&names(&["a", "b", "a"]), "t").unwrap_err().to_string();
    assert!(dup.contains("'a' is named twice"), "{dup}");
    let tgt = check_source_names(&names(&["a", "t"]), "t").unwrap_err().to_string();
    assert!(tgt.contains("target 't' cannot also be a source"), "{tgt}");
    assert!(check_source_names(&[], "t").is_err());
}

#[test]
fn pooling_stacks_rows_in_order_and_keeps_each_domains_rows() {
    let p = pool(
        vec![domain("a", 6, 3, &["x", "y"]), domain("b", 4, 3, &["x", "y"])],
        Path::new("dir"),
    )
    .unwrap();
    assert_eq!(p.pooled.name, "a+b");
    assert_eq!(p.pooled.features.nrows(), 10);
    assert_eq!(p.parts[1], SourcePart { name: "b".into(), rows: 6..10 });
    assert_eq!(p.pooled.features.row(6), domain("b", 4, 3, &["x", "y"]).features.row(0));
    assert_eq!(p.domain_of_rows(), [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]);
    assert_eq!(p.pooled.labels.as_ref().unwrap().len(), 10);
}

#[test]
fn sources_of_other_widths_or_classes_are_refused_naming_both() {
    let width =
        pool(vec![domain("a", 4, 3, &["x", "y"]), domain("b", 4, 5, &["x", "y"])], Path::new("d"))
            .unwrap_err()
            .to_string();
    assert!(width.contains("'b' has 5 features") && width.contains("'a'"), "{width}");
    let classes =
        pool(vec![domain("a", 4, 3, &["x", "y"]), domain("b", 4, 3, &["x", "z"])], Path::new("d"))
            .unwrap_err()
            .to_string();
    assert!(classes.contains("other classes"), "{classes}");
}

#[test]
fn the_holdout_holds_every_domains_share_of_every_class_and_is_seeded() {
    let p = pool(
        vec![domain("a", 40, 2, &["x", "y"]), domain("b", 20, 2, &["x", "y"])],
        Path::new("d"),
    )
    .unwrap();
    let hold = p.holdout(0.2, 7).unwrap();
    assert_eq!(hold, p.holdout(0.2, 7).unwrap());
    let labels = p.pooled.labels.as_ref().unwrap();
    let dom = p.domain_of_rows();
    for (d, n_per_class) in [(0, 20), (1, 10)] {
        for k in 0..2 {
            let held = hold.iter().filter(|&&i| dom[i] == d && labels[i] == k).count();
            assert_eq!(held, (0.2 * n_per_class as f64).round() as usize, "domain {d} class {k}");
        }
    }
}
