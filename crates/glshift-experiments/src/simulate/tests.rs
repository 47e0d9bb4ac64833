use super::*;

#[test]
fn prior_specs_parse_and_bad_ones_name_the_problem() {
    assert_eq!(PriorSpec::parse("dirichlet:0.1").unwrap(), PriorSpec::Dirichlet { alpha: 0.1 });
    assert_eq!(PriorSpec::parse("pda").unwrap(), PriorSpec::Pda);
    assert_eq!(PriorSpec::parse("0.5, 0.5,0").unwrap(), PriorSpec::Fixed(vec![0.5, 0.5, 0.0]));
    for (bad, why) in [
        ("dirichlet:0", "must be finite and > 0"),
        ("dirichlet:x", "needs a number"),
        ("0.5,0.6", "sum to"),
        ("0.5,-0.5,1", "negative"),
        ("uniform", "expected dirichlet"),
    ] {
        let e = PriorSpec::parse(bad).unwrap_err().to_string();
        assert!(e.contains("prior") && e.contains(why), "{bad}: {e}");
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let e = PriorSpec::Fixed(vec![0.5, 0.5]).draw(3, &mut rng).unwrap_err().to_string();
    assert!(e.contains("2 entries") && e.contains("3 classes"), "{e}");
}

#[test]
fn dirichlet_draws_are_seeded_priors_and_small_alpha_concentrates() {
    let spec = PriorSpec::Dirichlet { alpha: 0.1 };
    let a = spec.draw(10, &mut ChaCha8Rng::seed_from_u64(3)).unwrap();
    let b = spec.draw(10, &mut ChaCha8Rng::seed_from_u64(3)).unwrap();
    assert_eq!(a, b);
    assert!((a.iter().sum::<f64>() - 1.0).abs() < 1e-12 && a.iter().all(|&v| v >= 0.0));
    let max_small: f64 = (0..50)
        .map(|s| {
            spec.draw(10, &mut ChaCha8Rng::seed_from_u64(s))
                .unwrap()
                .into_iter()
                .fold(0.0, f64::max)
        })
        .sum::<f64>()
        / 50.0;
    let big = PriorSpec::Dirichlet { alpha: 10.0 };
    let max_big: f64 = (0..50)
        .map(|s| {
            big.draw(10, &mut ChaCha8Rng::seed_from_u64(s)).unwrap().into_iter().fold(0.0, f64::max)
        })
        .sum::<f64>()
        / 50.0;
    assert!(max_small > 0.5 && max_big < 0.25, "{max_small} {max_big}");
    assert_eq!(
        PriorSpec::Pda.draw(10, &mut ChaCha8Rng::seed_from_u64(0)).unwrap()[..6],
        [0.2, 0.2, 0.2, 0.2, 0.2, 0.0]
    );
}

#[test]
fn exact_counts_sum_to_n_and_follow_the_largest_remainders() {
    assert_eq!(exact_counts(&[0.5, 0.5, 0.0], 7), vec![4, 3, 0]);
    assert_eq!(exact_counts(&[0.26, 0.37, 0.37], 10), vec![2, 4, 4]);
    assert_eq!(exact_counts(&[0.1; 10], 500).iter().sum::<usize>(), 500);
}

#[test]
fn target_is_disjoint_from_the_source_part_and_has_the_exact_prior() {
    let labels: Vec<usize> = (0..300).map(|i| i % 3).collect();
    let split = split_domain(&labels, 3, 0.5, 1).unwrap();
    assert_eq!(split.source_rows.len(), 150);
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    // Class 0 needs 140 rows from a pool of 50: reused, each at most 3 times.
    let t =
        resample_to_prior(&labels, &split.pool_rows, 3, &[0.7, 0.3, 0.0], 200, &mut rng).unwrap();
    assert_eq!(t.class_counts, vec![140, 60, 0]);
    assert_eq!(t.true_prior, vec![0.7, 0.3, 0.0]);
    assert!(t.rows.iter().all(|r| split.pool_rows.contains(r) && !split.source_rows.contains(r)));
    assert_eq!(t.max_repeats, 3);
    assert_eq!(t.distinct_rows, 100);
    let mut count = std::collections::HashMap::new();
    t.rows.iter().for_each(|r| *count.entry(r).or_insert(0) += 1);
    assert!(count.values().all(|&m| m <= 3));
    // A class asked for but absent from the pool is an error naming it.
    let labels2: Vec<usize> = (0..20).map(|i| if i == 0 { 2 } else { i % 2 }).collect();
    let split2 = split_domain(&labels2, 3, 0.5, 0).unwrap();
    assert!(split2.source_rows.contains(&0));
    let e = resample_to_prior(&labels2, &split2.pool_rows, 3, &[0.2, 0.2, 0.6], 10, &mut rng)
        .unwrap_err();
    assert!(e.to_string().contains("class 2"), "{e}");
    assert!(split_domain(&labels, 3, 1.0, 0).unwrap_err().to_string().contains("source-fraction"));
}

#[test]
fn cross_domain_target_comes_from_the_other_domain_at_the_exact_prior() {
    let task = crate::synthetic::generate(&crate::synthetic::SyntheticConfig::default()).unwrap();
    let (s, t) = (&task.source, &task.target);
    let c = s.n_classes();
    let mut p = vec![0.0; c];
    p[0] = 0.75;
    p[1] = 0.25;
    let cfg = SimulateConfig {
        prior: PriorSpec::Fixed(p.clone()),
        seed: 3,
        split_seed: 0,
        source_fraction: 0.5,
        n_target: Some(40),
    };
    let (src, tgt, rep) = simulate_cross(s, t, &cfg).unwrap();
    assert_eq!(src.features, s.features, "the whole source domain is the source");
    assert_eq!(rep.target.true_prior, p);
    assert_eq!(rep.target_domain.as_deref(), Some(t.name.as_str()));
    for (row, &i) in tgt.features.rows().into_iter().zip(&rep.target.rows) {
        assert_eq!(row, t.features.row(i), "target rows are rows of the target domain");
    }
    let again = simulate_cross(s, t, &cfg).unwrap().2;
    assert_eq!(again.target.rows, rep.target.rows, "seeded");
    let mut unlabelled = t.clone();
    unlabelled.labels = None;
    assert!(simulate_cross(s, &unlabelled, &cfg).unwrap_err().to_string().contains("no labels"));
}
