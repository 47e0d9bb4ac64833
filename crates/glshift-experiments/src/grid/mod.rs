//! The grid of `glshift bench`: (task, method, seed) runs with resumable per-run records,
//! `results.json` and a `table.md` laid out like the paper's tables. `glshift ablation` runs the
//! same grid over MUL variants instead of methods ([`run_grid`], [`crate::ablation`]).

mod table;
mod tasks;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use glshift::config::FitConfig;
use glshift::data;
use glshift::methods::MethodKind;
use glshift::output::write_files_atomically;
use glshift::pipeline;
use glshift::records::{BenchRecord, FailedRun};
use glshift::train::PretrainCache;

use crate::protocol::{self, Protocol};
use crate::{Error, Result};

pub use table::{diverged_note, render_table};
use tasks::load_task;
pub use tasks::{parse_tasks, SOURCE_SEPARATOR};

/// What a grid runs on and where it writes (the CLI's flags).
#[derive(Clone, Debug)]
pub struct GridSpec {
    /// Folder holding the domains.
    pub data: PathBuf,
    /// uda, pda or gls.
    pub setting: String,
    /// Number of target classes kept in pda (default: half of the classes).
    pub pda_classes: Option<usize>,
    /// Tasks as SOURCE:TARGET pairs (default: every ordered pair of domains in the folder);
    /// not with `msda`.
    pub tasks: Option<Vec<String>>,
    /// `msda` only: the targets (default: every domain), each with every other domain pooled.
    pub targets: Option<Vec<String>>,
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
        .map(|&method| Variant {
            id: method.to_string(),
            label: method.to_string(),
            cfg: FitConfig { method, ..base.clone() },
        })
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

fn record_path(out: &Path, setting: &str, method: &str, s: &str, t: &str, seed: u64) -> PathBuf {
    out.join("runs").join(format!("{setting}__{method}__{s}__{t}__seed{seed}.json"))
}

fn json<T: serde::Serialize + ?Sized>(path: &Path, v: &T) -> Result<Vec<u8>> {
    serde_json::to_vec_pretty(v)
        .map_err(|e| Error::Write { path: path.to_path_buf(), reason: e.to_string() })
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
fn resumable(
    path: &Path,
    cfg_value: &serde_json::Value,
    obs: &mut dyn GridObserver,
) -> Option<Stored> {
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
pub fn run_grid(
    spec: &GridSpec,
    variants: &[Variant],
    obs: &mut dyn GridObserver,
) -> Result<GridOutcome> {
    let started = Instant::now();
    let tasks = parse_tasks(spec)?;
    obs.start((tasks.len() * variants.len() * spec.seeds.len()) as u64);
    let mut acc = Collected::default();
    for (s, t) in &tasks {
        let (sources, tgt, proto) = load_task(spec, s, t)?;
        // Every method of this task and seed pre-trains the same network on the same rows.
        let mut task = Task {
            spec,
            s,
            t,
            proto,
            sources: sources.as_sources(),
            tgt: &tgt,
            pretrained: PretrainCache::new(),
        };
        for variant in variants {
            for &seed in &spec.seeds {
                let run = format!("{} {s}→{t} seed {seed}", variant.id);
                obs.run(&run);
                task.run_one(variant, seed, &run, &mut acc, obs)?;
                obs.done();
            }
        }
    }
    let table = write_results(spec, &acc, &tasks, variants, started)?;
    Ok(GridOutcome { records: acc.records, failed: acc.failed, resumed: acc.resumed, table })
}

/// What the grid has gathered so far.
#[derive(Default)]
struct Collected {
    records: Vec<BenchRecord>,
    failed: Vec<FailedRun>,
    /// Runs read back from `OUT/runs/`.
    resumed: usize,
    /// Each data warning once per task, not once per method and seed.
    warned: HashSet<String>,
}

/// One task of the grid: its domains under the protocol and the pre-training its runs share.
struct Task<'g> {
    spec: &'g GridSpec,
    s: &'g str,
    t: &'g str,
    proto: Protocol,
    /// One domain, or (`msda`) several pooled, their hold-out stratified by domain.
    sources: pipeline::Sources<'g>,
    tgt: &'g data::Domain,
    pretrained: PretrainCache,
}

impl Task<'_> {
    /// The record of a finished run: its report's scores (`run` names it in errors).
    fn record(
        &self,
        variant: &Variant,
        seed: u64,
        run: &str,
        r: &pipeline::FitReport,
        config: serde_json::Value,
    ) -> Result<BenchRecord> {
        let target_accuracy = r.target_accuracy.ok_or_else(|| {
            Error::bad_data(
                format!("{run}: {}", self.tgt.path.display()),
                "the target has no labels to score",
            )
        })?;
        Ok(BenchRecord {
            method: variant.id.clone(),
            setting: self.proto.name().to_string(),
            source: self.s.to_string(),
            target: self.t.to_string(),
            seed,
            target_accuracy,
            prior_l1_error: r.prior_l1_error,
            source_target_prior_l1: r.source_target_prior_l1,
            prior_interval_coverage: r.prior_interval_coverage(),
            prior_untrusted: r.estimated_target_prior_untrusted.is_some(),
            source_class_counts: protocol::class_counts(self.sources.domain()).unwrap_or_default(),
            target_class_counts: protocol::class_counts(self.tgt).unwrap_or_default(),
            elapsed_seconds: r.elapsed_seconds,
            pretraining_reused: r.pretraining_reused,
            config,
        })
    }

    /// Fits `cfg` on the task, sharing its pre-training with the task's other runs.
    fn fit(&mut self, cfg: &FitConfig) -> glshift::Result<pipeline::RunOutput> {
        pipeline::run_sources_cached(self.sources, self.tgt, cfg, &mut self.pretrained, &mut |_| {})
    }

    /// One (variant, seed): read back from `OUT/runs/` when made with the same settings, else
    /// fitted and stored. A run that diverges is kept as a failed run and the grid goes on.
    fn run_one(
        &mut self,
        variant: &Variant,
        seed: u64,
        run: &str,
        acc: &mut Collected,
        obs: &mut dyn GridObserver,
    ) -> Result<()> {
        let (s, t) = (self.s, self.t);
        let path = record_path(&self.spec.out, self.proto.name(), &variant.id, s, t, seed);
        let cfg = FitConfig { seed, ..variant.cfg.clone() };
        let cfg_value = serde_json::to_value(&cfg)
            .map_err(|e| Error::Write { path: path.clone(), reason: e.to_string() })?;
        let model_path = path.with_extension("glshift");
        let model_missing = self.spec.keep_models && !model_path.exists();
        match resumable(&path, &cfg_value, obs) {
            Some(Stored::Done(r)) if !model_missing => {
                acc.records.push(r);
                acc.resumed += 1;
                return Ok(());
            }
            Some(Stored::Failed(f)) => {
                acc.failed.push(f);
                acc.resumed += 1;
                return Ok(());
            }
            _ => {}
        }
        let out = match self.fit(&cfg) {
            Ok(out) => out,
            // Divergence is a result of the method on this task, not a broken grid: it is kept
            // and shown, and the other runs go on. Anything else stops the grid.
            Err(e @ glshift::Error::Numerical { .. }) => {
                let fpath = failed_path(&path);
                obs.note(&format!(
                    "{run}: {e}; kept as a failed run ({}), the grid goes on",
                    fpath.display()
                ));
                let f = FailedRun {
                    method: variant.id.clone(),
                    setting: self.proto.name().to_string(),
                    source: s.to_string(),
                    target: t.to_string(),
                    seed,
                    error: e.to_string(),
                    config: cfg_value,
                };
                write_files_atomically(&[(fpath.clone(), json(&fpath, &f)?)])?;
                acc.failed.push(f);
                return Ok(());
            }
            Err(e) => return Err(Error::run(run, e)),
        };
        let r = &out.report;
        for w in &r.warnings {
            if acc.warned.insert(format!("{s}→{t}: {w}")) {
                obs.note(&format!("warning: {s}→{t}: {w}"));
            }
        }
        let rec = self.record(variant, seed, run, r, cfg_value)?;
        let mut files = vec![(path.clone(), json(&path, &rec)?)];
        if self.spec.keep_models {
            files.push((model_path, out.model.to_bytes().map_err(|e| Error::run(run, e))?));
        }
        write_files_atomically(&files)?;
        acc.records.push(rec);
        Ok(())
    }
}

/// Writes `results.json`, `failed_runs.json` and `table.md` (with this call's wall time and
/// the runs' own times); returns the table.
fn write_results(
    spec: &GridSpec,
    acc: &Collected,
    tasks: &[(String, String)],
    variants: &[Variant],
    started: Instant,
) -> Result<String> {
    let (records, failed) = (&acc.records, &acc.failed);
    let rows: Vec<(&str, &str)> =
        variants.iter().map(|v| (v.id.as_str(), v.label.as_str())).collect();
    let mut table = render_table(records, failed, tasks, &rows, &spec.seeds);
    // A resumed grid's wall time covers only this call, so the runs' own times are summed too.
    let run_seconds: f64 = records.iter().map(|r| r.elapsed_seconds).sum();
    let reused = records.iter().filter(|r| r.pretraining_reused).count();
    table.push_str(&format!(
        "\n{} runs ({} read back from runs/), wall time {:.0} s for this call; the runs' own times sum to {:.0} s \
         ({reused} runs reused the pre-training of an earlier method on the same task and seed, and their times exclude it).\n",
        records.len() + failed.len(),
        acc.resumed,
        started.elapsed().as_secs_f64(),
        run_seconds
    ));
    table.push_str(&table::failed_note(failed));
    let results = spec.out.join("results.json");
    let failed_file = spec.out.join("failed_runs.json");
    write_files_atomically(&[
        (results.clone(), json(&results, records)?),
        (failed_file.clone(), json(&failed_file, failed)?),
        (spec.out.join("table.md"), table.clone().into_bytes()),
    ])?;
    Ok(table)
}

#[cfg(test)]
mod tests;
