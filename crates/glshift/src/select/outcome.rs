//! What a selection says of its choice: the sentence of `Selection::reason`, and, after the
//! choice, every candidate's target accuracy (target labels read only here).

use super::{scores, CandidateAccuracies, ScoredCandidate, SelectRule, Selection};
use crate::pipeline::RunOutput;
use crate::{eval, Result};

/// The sentence of `Selection::reason`.
pub(super) fn reason(rule: SelectRule, cands: &[ScoredCandidate], chosen: usize) -> String {
    let what = match rule {
        SelectRule::MeanRank => "the best mean rank over iwcv, dev-normalised, snd, entropy and circular".to_string(),
        SelectRule::SafeEntropy => format!(
            "the lowest mean target entropy among the candidates whose iwcv is at least the pre-trained network's minus {}",
            scores::SAFE_IWCV_MARGIN
        ),
        r => format!("the highest {r} score"),
    };
    let show = |v: Option<f64>| match (rule, v) {
        (SelectRule::MeanRank, Some(v)) => format!("{:.2}", -v),
        (_, Some(v)) => format!("{v:.4}"),
        (_, None) => "none".to_string(),
    };
    let winner = &cands[chosen];
    let runner_up =
        cands.iter().enumerate().filter(|(i, c)| *i != chosen && c.rule_value.is_some()).max_by(
            |a, b| {
                a.1.rule_value
                    .partial_cmp(&b.1.rule_value)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(b.0.cmp(&a.0))
            },
        );
    let next = runner_up
        .map_or(String::new(), |(_, c)| format!("; next '{}' with {}", c.name, show(c.rule_value)));
    format!(
        "rule {rule}: '{}' has {what} ({}){next}; ties go to the earlier candidate",
        winner.name,
        show(winner.rule_value)
    )
}

/// After the choice: every candidate's target accuracy.
pub(super) fn evaluate(
    selection: &Selection,
    runs: &[RunOutput],
    truth: &[usize],
) -> Result<CandidateAccuracies> {
    let target_accuracy = runs
        .iter()
        .map(|r| eval::score(&r.predictions(), truth, r.report.classes.len()).map(|s| s.accuracy))
        .collect::<Result<Vec<f64>>>()?;
    let oracle = scores::arg_best(&target_accuracy.iter().map(|&a| Some(a)).collect::<Vec<_>>())
        .unwrap_or(0);
    Ok(CandidateAccuracies {
        note: "evaluation only: computed from the target labels after the choice was made".into(),
        chosen_accuracy: target_accuracy[selection.chosen],
        oracle,
        oracle_accuracy: target_accuracy[oracle],
        target_accuracy,
    })
}
