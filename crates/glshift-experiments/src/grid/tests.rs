use super::*;

fn spec(tasks: Option<Vec<&str>>) -> GridSpec {
    GridSpec {
        data: PathBuf::from("/nonexistent"),
        setting: "uda".into(),
        pda_classes: None,
        tasks: tasks.map(|t| t.into_iter().map(String::from).collect()),
        targets: None,
        seeds: vec![0],
        out: PathBuf::from("/nonexistent/out"),
        keep_models: false,
    }
}

#[test]
fn task_entries_parse_or_name_the_bad_entry() {
    let t = parse_tasks(&spec(Some(vec!["amazon:webcam", "dslr:caltech"]))).unwrap();
    assert_eq!(
        t,
        [("amazon".to_string(), "webcam".to_string()), ("dslr".into(), "caltech".into())]
    );
    let e = parse_tasks(&spec(Some(vec!["amazon:webcam", "dslr"]))).unwrap_err().to_string();
    assert_eq!(e, "--tasks entry \"dslr\" is not SOURCE:TARGET");
}

#[test]
fn a_record_is_resumed_only_with_the_same_settings_and_old_null_shifts_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let cfg = serde_json::json!({"method": "source", "seed": 0});
    let old = serde_json::json!({"method": "source", "setting": "uda", "source": "a", "target": "w", "seed": 0,
        "target_accuracy": 0.5, "prior_l1_error": null, "source_target_prior_l1": null, "config": cfg});
    std::fs::write(&path, serde_json::to_vec(&old).unwrap()).unwrap();
    struct Notes(Vec<String>);
    impl GridObserver for Notes {
        fn note(&mut self, msg: &str) {
            self.0.push(msg.to_string());
        }
    }
    let mut notes = Notes(Vec::new());
    let Some(Stored::Done(r)) = resumable(&path, &cfg, &mut notes) else {
        panic!("same settings: resumed")
    };
    assert_eq!(r.source_target_prior_l1, None);
    assert!(notes.0.is_empty());
    assert!(resumable(&path, &serde_json::json!({"method": "mul"}), &mut notes).is_none());
    assert!(notes.0[0].contains("made with other settings"), "{:?}", notes.0);
}

#[test]
fn a_failed_run_is_read_back_only_with_the_same_settings() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("uda__dann__a__w__seed0.json");
    assert_eq!(failed_path(&path), dir.path().join("uda__dann__a__w__seed0.failed.json"));
    let cfg = serde_json::json!({"method": "dann", "seed": 0});
    let f = FailedRun {
        method: "dann".into(),
        setting: "uda".into(),
        source: "a".into(),
        target: "w".into(),
        seed: 0,
        error: "numerical failure in Adapt iteration 3: the transfer term is NaN".into(),
        config: cfg.clone(),
    };
    std::fs::write(failed_path(&path), serde_json::to_vec(&f).unwrap()).unwrap();
    let Some(Stored::Failed(back)) = resumable(&path, &cfg, &mut ()) else {
        panic!("same settings: the failure is read back")
    };
    assert_eq!(back, f);
    assert!(resumable(&path, &serde_json::json!({"method": "dann", "seed": 1}), &mut ()).is_none());
}

#[test]
fn a_diverged_run_shows_in_the_table_as_such_never_as_a_number() {
    let rec = |m: &str, t: &str, seed: u64, acc: f64| BenchRecord {
        method: m.into(),
        setting: "uda".into(),
        source: "a".into(),
        target: t.into(),
        seed,
        target_accuracy: acc,
        prior_l1_error: None,
        source_target_prior_l1: Some(0.1),
        prior_interval_coverage: None,
        prior_untrusted: false,
        source_class_counts: vec![],
        target_class_counts: vec![],
        elapsed_seconds: 1.0,
        pretraining_reused: false,
        config: serde_json::Value::Null,
    };
    let fail = |t: &str, seed: u64| FailedRun {
        method: "dann".into(),
        setting: "uda".into(),
        source: "a".into(),
        target: t.into(),
        seed,
        error: "numerical failure: the transfer term is NaN".into(),
        config: serde_json::Value::Null,
    };
    let tasks = [("a".to_string(), "w".to_string()), ("a".to_string(), "d".to_string())];
    let records = [
        rec("source", "w", 0, 0.5),
        rec("source", "w", 1, 0.7),
        rec("source", "d", 0, 0.9),
        rec("source", "d", 1, 0.9),
        rec("dann", "w", 1, 0.8),
    ];
    // dann: a→w diverged on seed 0 only, a→d on both seeds.
    let failed = [fail("w", 0), fail("d", 0), fail("d", 1)];
    let t =
        render_table(&records, &failed, &tasks, &[("source", "source"), ("dann", "dann")], &[0, 1]);
    let dann = t.lines().find(|l| l.starts_with("| dann |")).unwrap();
    assert_eq!(dann, "| dann | **80.0 ± 0.0** (1 diverged) | 2 seeds diverged | — |", "{t}");
    let source = t.lines().find(|l| l.starts_with("| source |")).unwrap();
    assert_eq!(source, "| source | 60.0 ± 14.1 | **90.0 ± 0.0** | **75.0 ± 7.1** |", "{t}");
    let note = table::failed_note(&failed);
    assert!(note.starts_with("\n3 runs diverged"), "{note}");
    assert!(note.contains("- dann a→d seed 1: numerical failure"), "{note}");
    assert_eq!(table::failed_note(&[]), "");
}

#[test]
fn pooled_sources_show_every_initial_in_the_column_names() {
    assert_eq!(table::short("caltech+dslr+webcam"), "CDW");
    assert_eq!(table::short("amazon"), "A");
}
