//! `study.md`: the study report as markdown tables (the JSON report is [`StudyReport`]).

use glshift::label_shift::IntervalMethod;

use super::{Coverage, StudyReport, SummaryRow};

/// `study.md`: one line per (domain, family): ℓ1 mean ± std and per-class coverage of each
/// estimator, and the ℓ1 of no correction.
pub fn study_markdown(r: &StudyReport) -> String {
    let groups = groups(r);
    let mut methods = vec![r.config.interval];
    methods.extend(IntervalMethod::ALL.iter().filter(|&&m| m != r.config.interval));
    let mut s = settings_and_domains(r);
    s.push_str(&l1_table(r, &groups));
    for m in &methods {
        s.push_str(&coverage_table(r, &groups, *m));
    }
    s.push_str(&averages_table(r, &groups, &methods));
    s
}

/// The study's settings in one sentence, and each domain's classifier.
fn settings_and_domains(r: &StudyReport) -> String {
    let mut s = String::new();
    let probs = if r.config.cross_fit >= 2 {
        format!(
            "{}-fold cross-fitted classifier (out-of-fold source probabilities)",
            r.config.cross_fit
        )
    } else {
        "one classifier with a stratified source hold-out".to_string()
    };
    s.push_str(&format!(
        "Known-truth label shift: {} draws per prior, n_target = {}, source part = {:.0}% of each class, {probs}, \
         {} bootstrap resamples, {:.0}% intervals ({} first), seed {}.\n\n",
        r.config.draws,
        r.config.n_target,
        100.0 * r.config.source_fraction,
        r.config.bootstrap,
        100.0 * r.config.level,
        r.config.interval,
        r.config.seed
    ));
    s.push_str("| domain | n source | rows seen by the estimators | their accuracy | pool acc. |\n|---|---|---|---|---|\n");
    for d in &r.domains {
        s.push_str(&format!(
            "| {} | {} | {} | {:.1}% | {:.1}% |\n",
            d.domain,
            d.n_source,
            d.n_source_holdout,
            100.0 * d.holdout_accuracy,
            100.0 * d.pool_accuracy
        ));
    }
    s
}

/// The header of a table with one column per estimator after `first` (its `|---|` row too).
fn estimator_header(r: &StudyReport, first: &str, first_cols: usize) -> String {
    let mut s = format!("| {first} |");
    for e in &r.estimators {
        s.push_str(&format!(" {e} |"));
    }
    s.push_str(&format!("\n|{}", "---|".repeat(first_cols)));
    s.push_str(&"---|".repeat(r.estimators.len()));
    s.push('\n');
    s
}

/// ℓ1 error per (domain, prior family), mean ± std over draws, beside no correction.
fn l1_table(r: &StudyReport, groups: &[(String, String)]) -> String {
    let mut s = String::from(
        "\nℓ1 error ‖p̂ᵗ − pᵗ‖₁, mean ± std over draws (no correction: ‖pˢ − pᵗ‖₁):\n\n",
    );
    s.push_str(&estimator_header(r, "domain | prior | no correction", 3));
    for (dom, fam) in groups {
        let rows: Vec<&SummaryRow> =
            r.summary.iter().filter(|x| &x.domain == dom && &x.family == fam).collect();
        s.push_str(&format!(
            "| {dom} | {fam} | {:.3} |",
            rows.first().map_or(f64::NAN, |x| x.no_correction_l1_mean)
        ));
        for x in &rows {
            let fail =
                if x.failures > 0 { format!(" ({} failed)", x.failures) } else { String::new() };
            s.push_str(&format!(" {:.3} ± {:.3}{fail} |", x.l1_mean, x.l1_std));
        }
        s.push('\n');
    }
    s
}

/// Coverage of the per-class intervals of method `m` per (domain, prior family).
fn coverage_table(r: &StudyReport, groups: &[(String, String)], m: IntervalMethod) -> String {
    let mut s = format!(
        "\nCoverage of the per-class {m} intervals: all classes / classes present in the target / classes absent \
         from it (— when none) / joint (every class of a draw at once):\n\n"
    );
    s.push_str(&estimator_header(r, "domain | prior", 2));
    for (dom, fam) in groups {
        s.push_str(&format!("| {dom} | {fam} |"));
        for x in r.summary.iter().filter(|x| &x.domain == dom && &x.family == fam) {
            let c = &x.coverage_by_interval[m.name()];
            let absent = c.coverage_absent.map_or("—".to_string(), |v| format!("{:.2}", v));
            s.push_str(&format!(
                " {:.2} / {:.2} / {absent} / {:.2} |",
                c.coverage, c.coverage_present, c.joint_coverage
            ));
        }
        s.push('\n');
    }
    s
}

/// Each estimator's ℓ1 and coverage averaged over the (domain, prior family) cells.
fn averages_table(
    r: &StudyReport,
    groups: &[(String, String)],
    methods: &[IntervalMethod],
) -> String {
    let mut s = format!(
        "\nAverages over the {} (domain, prior) cells above (absent: over the cells that have absent classes):\n\n",
        groups.len()
    );
    s.push_str("| estimator | ℓ1 |");
    for m in methods {
        s.push_str(&format!(" {m} coverage all / present / absent |"));
    }
    s.push_str("\n|---|---|");
    s.push_str(&"---|".repeat(methods.len()));
    s.push('\n');
    let avg =
        |v: Vec<f64>| if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 };
    for e in &r.estimators {
        let rows: Vec<&SummaryRow> = r.summary.iter().filter(|x| &x.estimator == e).collect();
        s.push_str(&format!("| {e} | {:.3} |", avg(rows.iter().map(|x| x.l1_mean).collect())));
        for m in methods {
            let cs: Vec<&Coverage> =
                rows.iter().map(|x| &x.coverage_by_interval[m.name()]).collect();
            s.push_str(&format!(
                " {:.2} / {:.2} / {:.2} |",
                avg(cs.iter().map(|c| c.coverage).collect()),
                avg(cs.iter().map(|c| c.coverage_present).collect()),
                avg(cs.iter().filter_map(|c| c.coverage_absent).collect())
            ));
        }
        s.push('\n');
    }
    s
}

fn groups(r: &StudyReport) -> Vec<(String, String)> {
    let mut g: Vec<(String, String)> = Vec::new();
    for x in &r.summary {
        let key = (x.domain.clone(), x.family.clone());
        if !g.contains(&key) {
            g.push(key);
        }
    }
    g
}
