//! Each candidate's label-free scores (higher is better for all) and the rule that turns them
//! into a choice. The scorers are those of [`super::scorers`] plus circular validation; their
//! inputs are a candidate's fitted outputs: source hold-out probabilities and labels, its Z of
//! the source and target rows, its target probabilities. No target label.

use crate::seeds::{stream_seed, Stream};
use ndarray::{Array2, Axis};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::linear::Linear;
use super::scorers;
use crate::pipeline::RunOutput;
use crate::{Error, Result};

/// SND's temperature (Saito et al., 2021) and the most target rows it compares (its n × n
/// similarity matrix; larger targets are subsampled, the same rows for every candidate).
pub const SND_TEMPERATURE: f64 = 0.05;
pub const SND_MAX_ROWS: usize = 4000;

/// IWCV's margin of [`SelectRule::SafeEntropy`]: a candidate whose label-shift IWCV score (minus
/// a w-weighted hold-out NLL, in nats) is more than this below the `source` candidate's is not
/// chosen. Set by the scorer study (docs/select.md "The default rule").
pub const SAFE_IWCV_MARGIN: f64 = 0.02;

/// How a selection turns scores into a choice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SelectRule {
    /// Highest label-shift IWCV score (one w for all candidates).
    Iwcv,
    /// Highest DEV score (weights from a domain classifier on the candidate's Z).
    Dev,
    /// DEV with the weights divided by their mean.
    DevNormalised,
    /// Highest soft neighbourhood density of the target predictions.
    Snd,
    /// Lowest mean entropy of the target predictions.
    Entropy,
    /// Highest circular (reverse) validation accuracy.
    Circular,
    /// Lowest mean rank over iwcv, dev-normalised, snd, entropy and circular.
    MeanRank,
    /// Lowest mean entropy among the candidates whose IWCV score is at least the `source`
    /// candidate's minus [`SAFE_IWCV_MARGIN`] (the `source` candidate always qualifies); the
    /// default, decided by the scorer study (docs/select.md).
    #[default]
    SafeEntropy,
}

impl SelectRule {
    pub const ALL: [SelectRule; 8] = [
        SelectRule::Iwcv,
        SelectRule::Dev,
        SelectRule::DevNormalised,
        SelectRule::Snd,
        SelectRule::Entropy,
        SelectRule::Circular,
        SelectRule::MeanRank,
        SelectRule::SafeEntropy,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SelectRule::Iwcv => "iwcv",
            SelectRule::Dev => "dev",
            SelectRule::DevNormalised => "dev-normalised",
            SelectRule::Snd => "snd",
            SelectRule::Entropy => "entropy",
            SelectRule::Circular => "circular",
            SelectRule::MeanRank => "mean-rank",
            SelectRule::SafeEntropy => "safe-entropy",
        }
    }

    /// The scorers whose ranks `MeanRank` averages (DEV once, in its normalised form).
    const AGGREGATED: [SelectRule; 5] = [
        SelectRule::Iwcv,
        SelectRule::DevNormalised,
        SelectRule::Snd,
        SelectRule::Entropy,
        SelectRule::Circular,
    ];
}

impl std::fmt::Display for SelectRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for SelectRule {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        SelectRule::ALL.into_iter().find(|r| r.name() == s).ok_or_else(|| {
            let known: Vec<&str> = SelectRule::ALL.iter().map(|r| r.name()).collect();
            Error::param("scorer", s, format!("unknown; one of {}", known.join(", ")))
        })
    }
}

/// A candidate's label-free scores (higher is better; `None` where the scorer failed, with the
/// reason in the candidate's warnings).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CandidateScores {
    pub iwcv: Option<f64>,
    pub dev: Option<f64>,
    pub dev_normalised: Option<f64>,
    pub snd: Option<f64>,
    pub neg_entropy: Option<f64>,
    pub circular: Option<f64>,
}

impl CandidateScores {
    /// The score a single-scorer rule reads (None for `MeanRank` and `SafeEntropy`).
    pub fn get(&self, rule: SelectRule) -> Option<f64> {
        match rule {
            SelectRule::Iwcv => self.iwcv,
            SelectRule::Dev => self.dev,
            SelectRule::DevNormalised => self.dev_normalised,
            SelectRule::Snd => self.snd,
            SelectRule::Entropy => self.neg_entropy,
            SelectRule::Circular => self.circular,
            SelectRule::MeanRank | SelectRule::SafeEntropy => None,
        }
    }
}

/// Every scorer on one candidate's outputs. `w` are the class weights of IWCV (length c);
/// `snd_rows` the target rows SND compares. Failures become `None` and a warning.
pub(super) fn score_candidate(
    out: &RunOutput,
    w: &[f64],
    snd_rows: &[usize],
    warnings: &mut Vec<String>,
) -> CandidateScores {
    let mut keep = |what: &str, r: Result<f64>| {
        r.map_err(|e| warnings.push(format!("{what} not computed: {e}"))).ok()
    };
    let dev_in = dev_inputs(out);
    let iwcv =
        keep("iwcv", scorers::iwcv_label_shift(out.holdout_probs.view(), &out.holdout_labels, w));
    let (dev, dev_normalised) = match dev_in {
        Ok((losses, weights)) => (
            keep("dev", scorers::dev(&losses, &weights, false)),
            keep("dev-normalised", scorers::dev(&losses, &weights, true)),
        ),
        Err(e) => (keep("dev", Err(e)), None),
    };
    let snd = keep(
        "snd",
        scorers::snd(out.target_probs.select(Axis(0), snd_rows).view(), SND_TEMPERATURE),
    );
    let neg_entropy = keep("entropy", scorers::neg_entropy(out.target_probs.view()));
    let circular = keep("circular", circular(out));
    CandidateScores { iwcv, dev, dev_normalised, snd, neg_entropy, circular }
}

/// The target rows SND reads: all of them, or a seeded subsample of [`SND_MAX_ROWS`] (sorted).
pub(super) fn snd_rows(n_target: usize, seed: u64) -> Vec<usize> {
    let mut rows: Vec<usize> = (0..n_target).collect();
    if n_target > SND_MAX_ROWS {
        rows.shuffle(&mut ChaCha8Rng::seed_from_u64(stream_seed(seed, Stream::SndRows)));
        rows.truncate(SND_MAX_ROWS);
        rows.sort_unstable();
    }
    rows
}

/// Source rows a candidate trained on (every source row outside the hold-out).
fn training_rows(out: &RunOutput) -> Vec<usize> {
    let mut held = vec![false; out.source_z.nrows()];
    out.holdout_rows.iter().for_each(|&i| held[i] = true);
    (0..held.len()).filter(|&i| !held[i]).collect()
}

/// DEV's per-row hold-out losses −ln p(y|x) and density ratios p_t(z)/p_s(z) from a domain
/// classifier on the candidate's Z (source training rows against target rows), evaluated on
/// the hold-out's Z: w_i = (n_s/n_t) · d(z_i)/(1 − d(z_i)).
fn dev_inputs(out: &RunOutput) -> Result<(Vec<f64>, Vec<f64>)> {
    if out.holdout_rows.len() < 2 {
        return Err(Error::bad_data("DEV", "needs a source hold-out of >= 2 rows"));
    }
    let train = training_rows(out);
    let zs = out.source_z.select(Axis(0), &train);
    let n_t = out.target_z.nrows();
    let z = ndarray::concatenate(Axis(0), &[zs.view(), out.target_z.view()])
        .map_err(|e| Error::bad_data("DEV", e.to_string()))?;
    let domain: Vec<usize> = (0..z.nrows()).map(|i| usize::from(i >= train.len())).collect();
    let clf = Linear::fit(z.view(), &domain, 2);
    let p = clf.predict_proba(out.source_z.select(Axis(0), &out.holdout_rows).view());
    let ratio = train.len() as f64 / n_t.max(1) as f64;
    let weights = p.rows().into_iter().map(|r| ratio * r[1] / r[0].max(1e-12)).collect();
    let losses = out
        .holdout_probs
        .rows()
        .into_iter()
        .zip(&out.holdout_labels)
        .map(|(r, &y)| -(r[y].max(1e-30) as f64).ln())
        .collect();
    Ok((losses, weights))
}

/// Circular (reverse) validation: a classifier trained on the candidate's target Z with its
/// own target predictions as labels, scored by its accuracy on the source hold-out's Z against
/// the true source labels. A candidate whose target labelling is consistent with the source
/// classes transfers back.
fn circular(out: &RunOutput) -> Result<f64> {
    if out.holdout_rows.is_empty() || out.target_z.nrows() == 0 {
        return Err(Error::bad_data(
            "circular validation",
            "needs a source hold-out and target rows",
        ));
    }
    let c = out.target_probs.ncols();
    let clf = Linear::fit(out.target_z.view(), &out.predictions(), c);
    let p: Array2<f64> = clf.predict_proba(out.source_z.select(Axis(0), &out.holdout_rows).view());
    let hits = p
        .rows()
        .into_iter()
        .zip(&out.holdout_labels)
        .filter(|(r, &y)| {
            r.iter().enumerate().all(|(k, &v)| k == y || v < r[y] || (v == r[y] && y < k))
        })
        .count();
    Ok(hits as f64 / out.holdout_labels.len() as f64)
}

/// The value each candidate has under `rule` (higher is better): its score; for `MeanRank`
/// minus its mean rank (1 = best; ties share the mean of their ranks; a missing score ranks
/// below every present one); for `SafeEntropy` its −entropy where its IWCV is at least
/// `reference`'s minus [`SAFE_IWCV_MARGIN`], else none (`reference`, the `source` candidate,
/// always keeps its value; without a reference the rule is `Entropy`).
pub(super) fn rule_values(
    scores: &[CandidateScores],
    rule: SelectRule,
    reference: Option<usize>,
) -> Vec<Option<f64>> {
    match rule {
        SelectRule::MeanRank => {
            let mut total = vec![0.0; scores.len()];
            for r in SelectRule::AGGREGATED {
                let values: Vec<f64> =
                    scores.iter().map(|s| s.get(r).unwrap_or(f64::NEG_INFINITY)).collect();
                ranks_descending(&values).iter().zip(&mut total).for_each(|(rk, t)| *t += rk);
            }
            total.iter().map(|t| Some(-t / SelectRule::AGGREGATED.len() as f64)).collect()
        }
        SelectRule::SafeEntropy => {
            let floor = reference.map(|r| scores[r].iwcv.map(|v| v - SAFE_IWCV_MARGIN));
            scores
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let admissible = match floor {
                        None => true,
                        Some(_) if Some(i) == reference => true,
                        // The reference has no IWCV: nothing can be compared with it.
                        Some(None) => false,
                        Some(Some(f)) => s.iwcv.is_some_and(|v| v >= f),
                    };
                    s.neg_entropy.filter(|_| admissible)
                })
                .collect()
        }
        r => scores.iter().map(|s| s.get(r)).collect(),
    }
}

/// Ranks 1..n of `v` from the largest, ties sharing the mean of their ranks.
fn ranks_descending(v: &[f64]) -> Vec<f64> {
    v.iter()
        .map(|&x| {
            let above = v.iter().filter(|&&y| y > x).count() as f64;
            let tied = v.iter().filter(|&&y| y == x).count() as f64;
            above + (tied + 1.0) / 2.0
        })
        .collect()
}

/// Index of the largest value; ties go to the earliest candidate. None when no value exists.
pub(super) fn arg_best(values: &[Option<f64>]) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, v) in values.iter().enumerate() {
        if let Some(v) = *v {
            if best.is_none_or(|(_, b)| v > b) {
                best = Some((i, v));
            }
        }
    }
    best.map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_share_ties_and_mean_rank_prefers_the_consistent_candidate() {
        assert_eq!(ranks_descending(&[3.0, 1.0, 3.0, f64::NEG_INFINITY]), vec![1.5, 3.0, 1.5, 4.0]);
        let s = |v: f64| CandidateScores {
            iwcv: Some(v),
            dev: Some(v),
            dev_normalised: Some(v),
            snd: Some(v),
            neg_entropy: Some(v),
            circular: Some(v),
        };
        let mut scores = vec![s(1.0), s(2.0), s(0.0)];
        // Candidate 2 wins one scorer by a mile but loses the other four.
        scores[2].snd = Some(100.0);
        let v = rule_values(&scores, SelectRule::MeanRank, None);
        assert_eq!(arg_best(&v), Some(1));
        assert_eq!(arg_best(&rule_values(&scores, SelectRule::Snd, None)), Some(2));
        // A missing score ranks last; a rule with no value at all chooses nothing.
        scores[1].iwcv = None;
        assert_eq!(rule_values(&scores, SelectRule::Iwcv, None)[1], None);
        assert_eq!(arg_best(&[None, None]), None);
        assert_eq!(arg_best(&[Some(1.0), Some(1.0)]), Some(0));
    }

    #[test]
    fn safe_entropy_keeps_the_lowest_entropy_within_the_iwcv_margin_of_source() {
        let s = |iwcv: Option<f64>, neg_entropy: f64| CandidateScores {
            iwcv,
            neg_entropy: Some(neg_entropy),
            ..Default::default()
        };
        let m = SAFE_IWCV_MARGIN;
        // 0 = source; 1 is the most confident but its IWCV is past the margin; 2 just within it.
        let mut scores = vec![
            s(Some(-0.5), -0.9),
            s(Some(-0.5 - 1.5 * m), -0.1),
            s(Some(-0.5 - 0.5 * m), -0.3),
            s(None, -0.2),
        ];
        let v = rule_values(&scores, SelectRule::SafeEntropy, Some(0));
        assert_eq!(v, vec![Some(-0.9), None, Some(-0.3), None]);
        assert_eq!(arg_best(&v), Some(2));
        assert_eq!(arg_best(&rule_values(&scores, SelectRule::Entropy, Some(0))), Some(1));
        // Nothing within the margin: source, however uncertain.
        scores[2].iwcv = Some(-0.5 - 2.0 * m);
        assert_eq!(arg_best(&rule_values(&scores, SelectRule::SafeEntropy, Some(0))), Some(0));
        // Source without IWCV: only source; no source candidate at all: plain entropy.
        scores[0].iwcv = None;
        assert_eq!(arg_best(&rule_values(&scores, SelectRule::SafeEntropy, Some(0))), Some(0));
        assert_eq!(arg_best(&rule_values(&scores, SelectRule::SafeEntropy, None)), Some(1));
    }

    #[test]
    fn rule_names_round_trip_and_unknown_names_list_the_known_ones() {
        for r in SelectRule::ALL {
            assert_eq!(r.name().parse::<SelectRule>().unwrap(), r);
            assert_eq!(serde_json::to_string(&r).unwrap(), format!("\"{}\"", r.name()));
        }
        let e = "best".parse::<SelectRule>().unwrap_err().to_string();
        assert!(e.contains("mean-rank") && e.contains("best"), "{e}");
    }

    #[test]
    fn snd_subsample_is_seeded_sorted_and_only_for_large_targets() {
        assert_eq!(snd_rows(5, 1), vec![0, 1, 2, 3, 4]);
        let a = snd_rows(SND_MAX_ROWS + 10, 7);
        assert_eq!(a.len(), SND_MAX_ROWS);
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(a, snd_rows(SND_MAX_ROWS + 10, 7));
    }
}
