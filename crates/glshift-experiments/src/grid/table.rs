//! `table.md` of a grid: tasks as columns, methods (or variants) as rows, like the paper's
//! tables.

use glshift::eval::mean_std;
use glshift::records::BenchRecord;

fn short(name: &str) -> String {
    name.chars().next().map(|c| c.to_ascii_uppercase().to_string()).unwrap_or_default()
}

/// Tasks as columns, methods as rows (`(id, label)`: records are matched on the id, the row
/// shows the label), mean ± std over seeds (in %), an Avg column whose std is over the per-seed
/// averages, the ‖pˢ − pᵗ‖₁ row, and the best mean of each column in bold.
pub fn render_table(records: &[BenchRecord], tasks: &[(String, String)], methods: &[(&str, &str)], seeds: &[u64]) -> String {
    let initials: Vec<String> = tasks.iter().map(|(s, t)| format!("{}→{}", short(s), short(t))).collect();
    let unique = initials.iter().collect::<std::collections::BTreeSet<_>>().len() == initials.len();
    let headers: Vec<String> = if unique { initials } else { tasks.iter().map(|(s, t)| format!("{s}→{t}")).collect() };
    let acc = |m: &str, s: &str, t: &str, seed: u64| {
        records
            .iter()
            .find(|r| r.method == m && r.source == s && r.target == t && r.seed == seed)
            .map(|r| 100.0 * r.target_accuracy)
    };
    // cells[method][task] = (mean, std); last column = average over tasks.
    let mut cells: Vec<Vec<(f64, f64)>> = Vec::new();
    for &(m, _) in methods {
        let mut row: Vec<(f64, f64)> = tasks
            .iter()
            .map(|(s, t)| mean_std(&seeds.iter().filter_map(|&sd| acc(m, s, t, sd)).collect::<Vec<_>>()))
            .collect();
        let per_seed_avg: Vec<f64> = seeds
            .iter()
            .filter_map(|&sd| {
                let v: Vec<f64> = tasks.iter().filter_map(|(s, t)| acc(m, s, t, sd)).collect();
                (v.len() == tasks.len()).then(|| v.iter().sum::<f64>() / v.len() as f64)
            })
            .collect();
        row.push(mean_std(&per_seed_avg));
        cells.push(row);
    }
    let ncol = tasks.len() + 1;
    let best: Vec<f64> = (0..ncol)
        .map(|j| cells.iter().map(|r| r[j].0).filter(|v| v.is_finite()).fold(f64::NEG_INFINITY, f64::max))
        .collect();
    let mut out = format!("| method | {} | Avg |\n|---|{}\n", headers.join(" | "), "---|".repeat(ncol));
    for ((_, m), row) in methods.iter().zip(&cells) {
        let fmt: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(j, &(mean, sd))| {
                let s = format!("{mean:.1} ± {sd:.1}");
                if (mean - best[j]).abs() < 1e-9 && methods.len() > 1 { format!("**{s}**") } else { s }
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
    let avg = if all.is_empty() { String::new() } else { format!("{:.2}", all.iter().sum::<f64>() / all.len() as f64) };
    out.push_str(&format!("| ‖pˢ − pᵗ‖₁ | {} | {avg} |\n", shifts.join(" | ")));
    out
}
