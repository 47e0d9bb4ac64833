//! `table.md` of a grid: tasks as columns, methods (or variants) as rows, like the paper's
//! tables.

use glshift::eval::mean_std;
use glshift::records::{BenchRecord, FailedRun};

/// A domain's initial, upper case; pooled sources (`a+b`, `msda`) give each domain's: `AB`.
pub(super) fn short(name: &str) -> String {
    name.split(super::SOURCE_SEPARATOR)
        .filter_map(|d| d.chars().next())
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

/// Tasks as columns, methods as rows (`(id, label)`: records are matched on the id, the row
/// shows the label), mean ± std over seeds (in %), an Avg column whose std is over the per-seed
/// averages, the ‖pˢ − pᵗ‖₁ row, and the best mean of each column in bold. A run in `failed`
/// (it diverged) has no accuracy: its cell says how many seeds diverged ("diverged" alone when
/// all did), and the Avg column averages only the seeds where every task has an accuracy
/// ("—" when none has; "over k of n seeds" when some lack one).
pub fn render_table(
    records: &[BenchRecord],
    failed: &[FailedRun],
    tasks: &[(String, String)],
    methods: &[(&str, &str)],
    seeds: &[u64],
) -> String {
    let initials: Vec<String> =
        tasks.iter().map(|(s, t)| format!("{}→{}", short(s), short(t))).collect();
    let unique = initials.iter().collect::<std::collections::BTreeSet<_>>().len() == initials.len();
    let headers: Vec<String> =
        if unique { initials } else { tasks.iter().map(|(s, t)| format!("{s}→{t}")).collect() };
    let acc = |m: &str, s: &str, t: &str, seed: u64| {
        records
            .iter()
            .find(|r| r.method == m && r.source == s && r.target == t && r.seed == seed)
            .map(|r| 100.0 * r.target_accuracy)
    };
    let diverged = |m: &str, s: &str, t: &str| {
        failed.iter().filter(|f| f.method == m && f.source == s && f.target == t).count()
    };
    // cells[method][task]; last column = average over tasks.
    let mut cells: Vec<Vec<Cell>> = Vec::new();
    for &(m, _) in methods {
        let mut row: Vec<Cell> = tasks
            .iter()
            .map(|(s, t)| {
                let v: Vec<f64> = seeds.iter().filter_map(|&sd| acc(m, s, t, sd)).collect();
                let note = diverged_note(diverged(m, s, t), !v.is_empty());
                Cell::of(&v, note)
            })
            .collect();
        let per_seed_avg: Vec<f64> = seeds
            .iter()
            .filter_map(|&sd| {
                let v: Vec<f64> = tasks.iter().filter_map(|(s, t)| acc(m, s, t, sd)).collect();
                (v.len() == tasks.len()).then(|| v.iter().sum::<f64>() / v.len() as f64)
            })
            .collect();
        let short = (!per_seed_avg.is_empty() && per_seed_avg.len() < seeds.len())
            .then(|| format!("over {} of {} seeds", per_seed_avg.len(), seeds.len()));
        row.push(Cell::of(&per_seed_avg, short));
        cells.push(row);
    }
    let ncol = tasks.len() + 1;
    let best: Vec<f64> = (0..ncol)
        .map(|j| cells.iter().filter_map(|r| r[j].mean).fold(f64::NEG_INFINITY, f64::max))
        .collect();
    let mut out =
        format!("| method | {} | Avg |\n|---|{}\n", headers.join(" | "), "---|".repeat(ncol));
    for ((_, m), row) in methods.iter().zip(&cells) {
        let fmt: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(j, c)| {
                c.render(methods.len() > 1 && c.mean.is_some_and(|m| (m - best[j]).abs() < 1e-9))
            })
            .collect();
        out.push_str(&format!("| {m} | {} |\n", fmt.join(" | ")));
    }
    let shifts: Vec<String> = tasks
        .iter()
        .map(|(s, t)| {
            records
                .iter()
                .find(|r| &r.source == s && &r.target == t)
                .map(|r| format!("{:.2}", r.source_target_prior_l1.unwrap_or(f64::NAN)))
                .unwrap_or_default()
        })
        .collect();
    let all: Vec<f64> = shifts.iter().filter_map(|v| v.parse().ok()).collect();
    let avg = if all.is_empty() {
        String::new()
    } else {
        format!("{:.2}", all.iter().sum::<f64>() / all.len() as f64)
    };
    out.push_str(&format!("| ‖pˢ − pᵗ‖₁ | {} | {avg} |\n", shifts.join(" | ")));
    out
}

/// One cell: mean ± std over the values it has (none: no mean), and a note on what is missing.
struct Cell {
    mean: Option<f64>,
    sd: f64,
    note: Option<String>,
}

impl Cell {
    fn of(values: &[f64], note: Option<String>) -> Cell {
        let (mean, sd) = mean_std(values);
        Cell { mean: (!values.is_empty()).then_some(mean), sd, note }
    }

    fn render(&self, bold: bool) -> String {
        let body = match self.mean {
            Some(m) if bold => format!("**{m:.1} ± {:.1}**", self.sd),
            Some(m) => format!("{m:.1} ± {:.1}", self.sd),
            None => String::new(),
        };
        match (&self.note, body.is_empty()) {
            (Some(n), true) => n.clone(),
            (Some(n), false) => format!("{body} ({n})"),
            (None, true) => "—".to_string(),
            (None, false) => body,
        }
    }
}

/// What a cell of `k` diverged seeds says (`None` when none did), beside its accuracy when some
/// seeds have one (`has_accuracy`) or alone: the one wording of table.md and the HTML report.
pub fn diverged_note(k: usize, has_accuracy: bool) -> Option<String> {
    match k {
        0 => None,
        1 if !has_accuracy => Some("diverged".to_string()),
        k if !has_accuracy => Some(format!("{k} seeds diverged")),
        k => Some(format!("{k} diverged")),
    }
}

/// The lines under the table that list every run that diverged, with its error.
pub fn failed_note(failed: &[FailedRun]) -> String {
    if failed.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\n{} run{} diverged (no accuracy; kept in failed_runs.json, not retried with the same settings):\n",
        failed.len(),
        if failed.len() == 1 { "" } else { "s" }
    );
    for f in failed {
        out.push_str(&format!(
            "- {} {}→{} seed {}: {}\n",
            f.method, f.source, f.target, f.seed, f.error
        ));
    }
    out
}
