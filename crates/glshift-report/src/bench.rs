//! `glshift report BENCH_DIR`: tables and per-method bars from a bench grid's `results.json`
//! (read as the type that wrote it, [`BenchRecord`]), and the runs that diverged from
//! `failed_runs.json` ([`FailedRun`]; grids of older versions have none).

use std::path::{Path, PathBuf};

use glshift::eval::mean_std;
use glshift::records::{BenchRecord, FailedRun};
use glshift_experiments::grid::diverged_note;

use crate::error::{Error, Result};
use crate::figure::Figure;
use crate::figures::MethodBars;
use crate::html::{num, Page};
use crate::run::{figure_files, Written};

/// Reads and checks `results.json`.
pub fn read_results(path: &Path) -> Result<Vec<BenchRecord>> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::Read { path: path.to_path_buf(), reason: e.to_string() })?;
    let records: Vec<BenchRecord> = serde_json::from_slice(&bytes)
        .map_err(|e| Error::bad_file(path, format!("not a glshift bench results file ({e})")))?;
    if records.is_empty() {
        return Err(Error::bad_file(path, "holds no run"));
    }
    if let Some(r) = records.iter().find(|r| !(0.0..=1.0).contains(&r.target_accuracy)) {
        return Err(Error::bad_file(
            path,
            format!(
                "accuracy {} of {} {}→{} is outside [0, 1]",
                r.target_accuracy, r.method, r.source, r.target
            ),
        ));
    }
    Ok(records)
}

/// Reads `failed_runs.json`: the runs of the grid that diverged (none when the file is absent,
/// as in grids written before it existed).
pub fn read_failed(path: &Path) -> Result<Vec<FailedRun>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::Read { path: path.to_path_buf(), reason: e.to_string() }),
    };
    serde_json::from_slice(&bytes)
        .map_err(|e| Error::bad_file(path, format!("not a glshift bench failed-runs file ({e})")))
}

fn unique<T: PartialEq + Clone>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for x in it {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

fn task_names(tasks: &[(String, String)]) -> Vec<String> {
    let initial =
        |s: &str| s.chars().next().map(|c| c.to_ascii_uppercase().to_string()).unwrap_or_default();
    let short: Vec<String> =
        tasks.iter().map(|(s, t)| format!("{}→{}", initial(s), initial(t))).collect();
    if unique(short.iter()).len() == short.len() {
        short
    } else {
        tasks.iter().map(|(s, t)| format!("{s}→{t}")).collect()
    }
}

/// One setting's grid: per method, (mean, std) accuracy in % per task and for the average.
struct Grid {
    tasks: Vec<(String, String)>,
    methods: Vec<String>,
    acc: Vec<Vec<Option<(f64, f64)>>>,
    prior_err: Vec<Vec<Option<f64>>>,
    shift: Vec<Option<f64>>,
}

fn grid(records: &[&BenchRecord]) -> Grid {
    let tasks = unique(records.iter().map(|r| (r.source.clone(), r.target.clone())));
    let methods = unique(records.iter().map(|r| r.method.clone()));
    let seeds = unique(records.iter().map(|r| r.seed));
    let find = |m: &str, (s, t): &(String, String), seed: u64| {
        records.iter().find(|r| r.method == m && &r.source == s && &r.target == t && r.seed == seed)
    };
    let stat = |v: Vec<f64>| (!v.is_empty()).then(|| mean_std(&v));
    let mut acc = Vec::new();
    let mut prior_err = Vec::new();
    for m in &methods {
        let mut row: Vec<Option<(f64, f64)>> = tasks
            .iter()
            .map(|task| {
                stat(
                    seeds
                        .iter()
                        .filter_map(|&sd| find(m, task, sd))
                        .map(|r| 100.0 * r.target_accuracy)
                        .collect(),
                )
            })
            .collect();
        let per_seed: Vec<f64> = seeds
            .iter()
            .filter_map(|&sd| {
                let v: Vec<f64> = tasks
                    .iter()
                    .filter_map(|task| find(m, task, sd))
                    .map(|r| 100.0 * r.target_accuracy)
                    .collect();
                (v.len() == tasks.len()).then(|| v.iter().sum::<f64>() / v.len() as f64)
            })
            .collect();
        row.push(stat(per_seed));
        acc.push(row);
        prior_err.push(
            tasks
                .iter()
                .map(|task| {
                    stat(seeds.iter().filter_map(|&sd| find(m, task, sd)?.prior_l1_error).collect())
                        .map(|s| s.0)
                })
                .collect(),
        );
    }
    let shift = tasks
        .iter()
        .map(|(s, t)| {
            records
                .iter()
                .find(|r| &r.source == s && &r.target == t)
                .and_then(|r| r.source_target_prior_l1)
        })
        .collect();
    Grid { tasks, methods, acc, prior_err, shift }
}

/// The bench page and its bar figures (one per setting).
pub fn bench_report(
    dir: &Path,
    records: &[BenchRecord],
    failed: &[FailedRun],
) -> Result<(String, Vec<Figure>)> {
    let mut page = Page::new(&format!("glshift bench: {}", dir.display()));
    let n_seeds = unique(records.iter().map(|r| r.seed)).len();
    write_overview(&mut page, records, failed);
    let mut figures = Vec::new();
    for setting in unique(records.iter().map(|r| r.setting.clone())) {
        let rs: Vec<&BenchRecord> = records.iter().filter(|r| r.setting == setting).collect();
        figures.push(write_setting(&mut page, &setting, &rs, failed, n_seeds)?);
    }
    Ok((page.finish(), figures))
}

/// The page's opening paragraphs: how many runs and how to read the tables, then the runs
/// that diverged when there are any.
fn write_overview(page: &mut Page, records: &[BenchRecord], failed: &[FailedRun]) {
    page.para(
        &format!("{} runs. Accuracies in %, mean ± std over seeds (Avg: mean ± std over seeds of the task average, only seeds with every task). Target labels were read only to score.", records.len()),
        None,
    );
    if !failed.is_empty() {
        let list: Vec<String> = failed
            .iter()
            .map(|f| {
                format!(
                    "{} {} {}→{} seed {}: {}",
                    f.setting, f.method, f.source, f.target, f.seed, f.error
                )
            })
            .collect();
        page.para(
            &format!("{} run(s) diverged and have no accuracy (\"diverged\" in the tables; their averages use only the seeds where every task has one): {}.", failed.len(), list.join("; ")),
            None,
        );
    }
}

/// One setting's section of the page (its `records` only): the accuracy table with the shift
/// row, the target-prior error table when a method estimates one, and the bar figure, which
/// it returns.
fn write_setting(
    page: &mut Page,
    setting: &str,
    records: &[&BenchRecord],
    failed: &[FailedRun],
    n_seeds: usize,
) -> Result<Figure> {
    let g = grid(records);
    let names = task_names(&g.tasks);
    page.h2(&format!("Setting {setting}"));
    let mut header = vec!["method".to_string()];
    header.extend(names.iter().cloned());
    header.push("Avg".into());
    let mut rows = accuracy_rows(&g, setting, failed);
    rows.push(shift_row(&g));
    page.table(&header, &rows);
    write_prior_errors(page, &g, &header);
    let mut groups = names.clone();
    groups.push("Avg".into());
    let bars = MethodBars {
        title: format!("Target accuracy by task, setting {setting} ({n_seeds} seed(s))"),
        groups,
        methods: g.methods.clone(),
        values: g.acc.clone(),
    };
    let fig = bars.render(&format!("bench_bars_{setting}"), &format!("Mean target accuracy per task and method, setting {setting}; whiskers ± std over seeds"))?;
    page.figure(&fig, &format!("figures/{}.svg", fig.name));
    Ok(fig)
}

/// The accuracy table's rows, one per method: its name, then "mean ± std" per task and for
/// the average, each cell noting how many of its runs in `failed` diverged.
fn accuracy_rows(g: &Grid, setting: &str, failed: &[FailedRun]) -> Vec<Vec<String>> {
    g.methods
        .iter()
        .zip(&g.acc)
        .map(|(m, row)| {
            // As table.md: a cell says how many of its seeds diverged (the Avg cell has no task).
            let diverged = |j: usize| {
                g.tasks.get(j).map_or(0, |(s, t)| {
                    failed
                        .iter()
                        .filter(|f| {
                            f.setting == setting
                                && &f.method == m
                                && &f.source == s
                                && &f.target == t
                        })
                        .count()
                })
            };
            let mut r = vec![m.clone()];
            r.extend(row.iter().enumerate().map(|(j, v)| {
                match (v, diverged_note(diverged(j), v.is_some())) {
                    (Some((a, s)), None) => format!("{a:.1} ± {s:.1}"),
                    (Some((a, s)), Some(note)) => format!("{a:.1} ± {s:.1} ({note})"),
                    (None, None) => "–".into(),
                    (None, Some(note)) => note,
                }
            }));
            r
        })
        .collect()
}

/// The accuracy table's last row: the ℓ1 distance between source and target priors per task
/// (empty under Avg).
fn shift_row(g: &Grid) -> Vec<String> {
    let mut shift_row = vec!["‖pˢ − pᵗ‖₁".to_string()];
    shift_row.extend(g.shift.iter().map(|v| num(*v, 2)));
    shift_row.push(String::new());
    shift_row
}

/// The target-prior ℓ1 error table (mean over seeds per task), for the methods that estimate
/// a prior; nothing when none does.
fn write_prior_errors(page: &mut Page, g: &Grid, header: &[String]) {
    let with_prior: Vec<usize> =
        (0..g.methods.len()).filter(|&m| g.prior_err[m].iter().any(Option::is_some)).collect();
    if !with_prior.is_empty() {
        page.para("Target-prior ℓ1 error ‖p̂ᵗ − pᵗ‖₁ (mean over seeds):", None);
        let rows: Vec<Vec<String>> = with_prior
            .iter()
            .map(|&m| {
                let mut r = vec![g.methods[m].clone()];
                r.extend(g.prior_err[m].iter().map(|v| num(*v, 3)));
                r.push(String::new());
                r
            })
            .collect();
        page.table(header, &rows);
    }
}

/// Reads `dir/results.json` and writes `dir/figures/*` and `dir/report.html` atomically.
pub fn write_bench_report(dir: &Path) -> Result<Written> {
    let records = read_results(&dir.join("results.json"))?;
    let failed = read_failed(&dir.join("failed_runs.json"))?;
    let (html, figures) = bench_report(dir, &records, &failed)?;
    let mut files = figure_files(dir, &figures);
    let paths: Vec<PathBuf> = files.iter().map(|f| f.0.clone()).collect();
    let html_path = dir.join("report.html");
    files.push((html_path.clone(), html.into_bytes()));
    glshift::output::write_files_atomically(&files)?;
    Ok(Written { html: html_path, figures: paths, notes: Vec::new() })
}
