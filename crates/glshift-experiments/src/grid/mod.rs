//! The grid of `glshift bench`: (task, method, seed) runs with resumable per-run records,
//! `results.json` and a `table.md` laid out like the paper's tables. `glshift ablation` runs the
//! same grid over MUL variants instead of methods ([`run_grid`], [`crate::ablation`]).

mod table;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use glshift::data;
use glshift::methods::{FitConfig, MethodKind, PretrainCache};
use glshift::output::write_files_atomically;
use glshift::pipeline;
use glshift::records::{BenchRecord, FailedRun};

use crate::protocol::{self, Protocol};
use crate::{Error, Result};

pub use table::{diverged_note, render_table};

/// What a grid runs on and where it writes (the CLI's flags).
#[derive(Clone, Debug)]
pub struct GridSpec {
    /// Folder holding the domains.
    pub data: PathBuf,
    /// uda, pda or gls.
    pub setting: String,
    /// Number of target classes kept in pda (default: half of the classes).
    pub pda_classes: Option<usize>,
    /// Tasks as SOURCE:TARGET pairs (default: every ordered pair of domains in the folder).
    pub tasks: Option<Vec<String>>,
    pub seeds: Vec<u64>,
    pub out: PathBuf,
    /// Also write each run's model beside its record (`runs/….glshift`); off by default, since
    /// a grid has hundreds of runs of a few MB each.
    pub keep_models: bool,
}

/// One row of the table: a method, or a configuration variant of one (the ablation).
pub struct Variant {
    /// File-safe name: the record file names and `results.json`'s `method`.
    pub id: String,
    /// The row label in `table.md`.
    pub label: String,
    pub cfg: FitConfig,
}

/// One variant per method, each `base` with its method set; every variant is validated.
pub fn method_variants(methods: &[MethodKind], base: &FitConfig) -> Result<Vec<Variant>> {
    let variants: Vec<Variant> = methods
        .iter()
        .map(|&method| Variant { id: method.to_string(), label: method.to_string(), cfg: FitConfig { method, ..base.clone() } })
        .collect();
    for v in &variants {
        v.cfg.validate().map_err(|e| Error::run(format!("method {}", v.id), e))?;
    }
    Ok(variants)
}

/// What the grid reports while it runs (a progress bar in the CLI).
pub trait GridObserver {
    /// Before the first run: how many runs the grid has.
    fn start(&mut self, _total: u64) {}
    /// A run begins (or is looked up for resuming): "mul amazon→webcam seed 0".
    fn run(&mut self, _what: &str) {}
    /// A run is finished or read back.
    fn done(&mut self) {}
    /// A message for the user (a record redone, a data warning).
    fn note(&mut self, _msg: &str) {}
}

/// An observer that ignores everything.
impl GridObserver for () {}

/// A finished grid.
pub struct GridOutcome {
    pub records: Vec<BenchRecord>,
    /// Runs whose training diverged (also in `failed_runs.json` and the table).
    pub failed: Vec<FailedRun>,
    /// Runs read back from `OUT/runs/`.
    pub resumed: usize,
    /// `table.md` as written.
    pub table: String,
}

/// The grid's tasks: the `SOURCE:TARGET` entries of the spec, or every ordered pair of domains.
pub fn parse_tasks(spec: &GridSpec) -> Result<Vec<(String, String)>> {
    if let Some(list) = &spec.tasks {
        return list
            .iter()
            .map(|t| match t.split_once(':') {
                Some((s, d)) if !s.is_empty() && !d.is_empty() => Ok((s.to_string(), d.to_string())),
                _ => Err(Error::BadTask { entry: t.clone() }),
            })
            .collect();
    }
    let domains = data::list_domains(&spec.data)?;
    if domains.len() < 2 {
        return Err(Error::TooFewDomains { dir: spec.data.clone(), found: domains.len() });
    }
    Ok(domains
        .iter()
        .flat_map(|s| domains.iter().filter(move |t| *t != s).map(move |t| (s.clone(), t.clone())))
        .collect())
}

fn record_path(out: &Path, setting: &str, method: &str, s: &str, t: &str, seed: u64) -> PathBuf {
    out.join("runs").join(format!("{setting}__{method}__{s}__{t}__seed{seed}.json"))
}

fn json<T: serde::Serialize + ?Sized>(path: &Path, v: &T) -> Result<Vec<u8>> {
    serde_json::to_vec_pretty(v).map_err(|e| Error::Write { path: path.to_path_buf(), reason: e.to_string() })
}

/// Where a run that diverged is kept: `…seed0.failed.json` beside the record's path.
fn failed_path(record: &Path) -> PathBuf {
    record.with_extension("failed.json")
}

/// What `OUT/runs/` holds for one run made with the settings `cfg_value`.
enum Stored {
    Done(BenchRecord),
    Failed(FailedRun),
}

/// The record (or the failure) made with the settings `cfg_value`, if `path` (or its
/// [`failed_path`]) holds one. Files are written atomically, so an existing one is complete;
/// it is reused only if it was made with the same settings (else a changed default or
/// --config would silently mix old and new runs in one table). Training is deterministic, so a
/// failure with the same settings would fail again.
fn resumable(path: &Path, cfg_value: &serde_json::Value, obs: &mut dyn GridObserver) -> Option<Stored> {
    let read = |p: &Path| std::fs::read(p).ok();
    if let Some(r) = read(path).and_then(|b| serde_json::from_slice::<BenchRecord>(&b).ok()) {
        if &r.config == cfg_value {
            return Some(Stored::Done(r));
        }
        obs.note(&format!("{}: made with other settings; running it again", path.display()));
    }
    let fpath = failed_path(path);
    let f = read(&fpath).and_then(|b| serde_json::from_slice::<FailedRun>(&b).ok())?;
    (&f.config == cfg_value).then_some(Stored::Failed(f))
}

/// Runs every (task, variant, seed), resuming from the records under `OUT/runs/`, then writes
/// `results.json` and `table.md` (with the grid's wall time).
pub fn run_grid(spec: &GridSpec, variants: &[Variant], obs: &mut dyn GridObserver) -> Result<GridOutcome> {
    let started = Instant::now();
    let tasks = parse_tasks(spec)?;
    obs.start((tasks.len() * variants.len() * spec.seeds.len()) as u64);
    let mut records = Vec::new();
    let mut failed = Vec::new();
    let mut resumed = 0usize;
    // Each data warning once per task, not once per method and seed.
    let mut warned = HashSet::new();
    for (s, t) in &tasks {
        let (src0, tgt0) = data::load_pair(&spec.data, s, t)?;
        let proto = Protocol::parse(&spec.setting, src0.n_classes(), spec.pda_classes)?;
        let (src, tgt) = protocol::apply(proto, &src0, &tgt0)?;
        // Every method of this task and seed pre-trains the same network on the same rows.
        let mut pretrained = PretrainCache::new();
        for variant in variants {
            let method = &variant.id;
            for &seed in &spec.seeds {
                let path = record_path(&spec.out, proto.name(), method, s, t, seed);
                let run = format!("{method} {s}→{t} seed {seed}");
                obs.run(&run);
                let cfg = FitConfig { seed, ..variant.cfg.clone() };
                let cfg_value = serde_json::to_value(&cfg).map_err(|e| Error::Write { path: path.clone(), reason: e.to_string() })?;
                let model_path = path.with_extension("glshift");
                let model_missing = spec.keep_models && !model_path.exists();
                match resumable(&path, &cfg_value, obs) {
                    Some(Stored::Done(r)) if !model_missing => {
                        records.push(r);
                        resumed += 1;
                        obs.done();
                        continue;
                    }
                    Some(Stored::Failed(f)) => {
                        failed.push(f);
                        resumed += 1;
                        obs.done();
                        continue;
                    }
                    _ => {}
                }
                let out = match pipeline::run_cached(&src, &tgt, &cfg, &mut pretrained, &mut |_| {}) {
                    Ok(out) => out,
                    // Divergence is a result of the method on this task, not a broken grid: it
                    // is kept and shown, and the other runs go on. Anything else stops the grid.
                    Err(e @ glshift::Error::Numerical { .. }) => {
                        let fpath = failed_path(&path);
                        obs.note(&format!("{run}: {e}; kept as a failed run ({}), the grid goes on", fpath.display()));
                        let f = FailedRun {
                            method: method.clone(),
                            setting: proto.name().to_string(),
                            source: s.clone(),
                            target: t.clone(),
                            seed,
                            error: e.to_string(),
                            config: cfg_value,
                        };
                        write_files_atomically(&[(fpath.clone(), json(&fpath, &f)?)])?;
                        failed.push(f);
                        obs.done();
                        continue;
                    }
                    Err(e) => return Err(Error::run(&run, e)),
                };
                let r = &out.report;
                for w in &r.warnings {
                    if warned.insert(format!("{s}→{t}: {w}")) {
                        obs.note(&format!("warning: {s}→{t}: {w}"));
                    }
                }
                let target_accuracy = r
                    .target_accuracy
                    .ok_or_else(|| Error::bad_data(format!("{run}: {}", tgt.path.display()), "the target has no labels to score"))?;
                let rec = BenchRecord {
                    method: method.clone(),
                    setting: proto.name().to_string(),
                    source: s.clone(),
                    target: t.clone(),
                    seed,
                    target_accuracy,
                    prior_l1_error: r.prior_l1_error,
                    source_target_prior_l1: r.source_target_prior_l1,
                    source_class_counts: protocol::class_counts(&src).unwrap_or_default(),
                    target_class_counts: protocol::class_counts(&tgt).unwrap_or_default(),
                    elapsed_seconds: r.elapsed_seconds,
                    pretraining_reused: r.pretraining_reused,
                    config: cfg_value,
                };
                let mut files = vec![(path.clone(), json(&path, &rec)?)];
                if spec.keep_models {
                    files.push((model_path, out.model.to_bytes().map_err(|e| Error::run(&run, e))?));
                }
                write_files_atomically(&files)?;
                records.push(rec);
                obs.done();
            }
        }
    }
    let rows: Vec<(&str, &str)> = variants.iter().map(|v| (v.id.as_str(), v.label.as_str())).collect();
    let mut table = render_table(&records, &failed, &tasks, &rows, &spec.seeds);
    // A resumed grid's wall time covers only this call, so the runs' own times are summed too.
    let run_seconds: f64 = records.iter().map(|r| r.elapsed_seconds).sum();
    let reused = records.iter().filter(|r| r.pretraining_reused).count();
    table.push_str(&format!(
        "\n{} runs ({resumed} read back from runs/), wall time {:.0} s for this call; the runs' own times sum to {:.0} s \
         ({reused} runs reused the pre-training of an earlier method on the same task and seed, and their times exclude it).\n",
        records.len() + failed.len(),
        started.elapsed().as_secs_f64(),
        run_seconds
    ));
    table.push_str(&table::failed_note(&failed));
    let results = spec.out.join("results.json");
    let failed_file = spec.out.join("failed_runs.json");
    write_files_atomically(&[
        (results.clone(), json(&results, &records)?),
        (failed_file.clone(), json(&failed_file, &failed)?),
        (spec.out.join("table.md"), table.clone().into_bytes()),
    ])?;
    Ok(GridOutcome { records, failed, resumed, table })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(tasks: Option<Vec<&str>>) -> GridSpec {
        GridSpec {
            data: PathBuf::from("/nonexistent"),
            setting: "uda".into(),
            pda_classes: None,
            tasks: tasks.map(|t| t.into_iter().map(String::from).collect()),
            seeds: vec![0],
            out: PathBuf::from("/nonexistent/out"),
            keep_models: false,
        }
    }

    #[test]
    fn task_entries_parse_or_name_the_bad_entry() {
        let t = parse_tasks(&spec(Some(vec!["amazon:webcam", "dslr:caltech"]))).unwrap();
        assert_eq!(t, [("amazon".to_string(), "webcam".to_string()), ("dslr".into(), "caltech".into())]);
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
        let Some(Stored::Done(r)) = resumable(&path, &cfg, &mut notes) else { panic!("same settings: resumed") };
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
        let Some(Stored::Failed(back)) = resumable(&path, &cfg, &mut ()) else { panic!("same settings: the failure is read back") };
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
        let t = render_table(&records, &failed, &tasks, &[("source", "source"), ("dann", "dann")], &[0, 1]);
        let dann = t.lines().find(|l| l.starts_with("| dann |")).unwrap();
        assert_eq!(dann, "| dann | **80.0 ± 0.0** (1 diverged) | 2 seeds diverged | — |", "{t}");
        let source = t.lines().find(|l| l.starts_with("| source |")).unwrap();
        assert_eq!(source, "| source | 60.0 ± 14.1 | **90.0 ± 0.0** | **75.0 ± 7.1** |", "{t}");
        let note = table::failed_note(&failed);
        assert!(note.starts_with("\n3 runs diverged"), "{note}");
        assert!(note.contains("- dann a→d seed 1: numerical failure"), "{note}");
        assert_eq!(table::failed_note(&[]), "");
    }
}
