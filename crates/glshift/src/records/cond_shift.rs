//! `glshift shift test`'s JSON file: the per-class MCMD² conditional two-sample test after a
//! fit (`kernel::cond_shift`), with the class names, the settings and the cost.

use serde::{Deserialize, Serialize};

use crate::kernel::cond_shift::ClassTest;

/// The whole file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShiftTestFile {
    pub glshift_version: String,
    pub source: String,
    pub target: String,
    /// The fitted method whose assignments split the rows by class.
    pub method: String,
    pub seed: u64,
    /// What was computed, in words (the statistic, the assignment, the p-value).
    pub statistic: String,
    pub assignment: String,
    pub p_value: String,
    /// Gaussian kernel bandwidth on the preprocessed features.
    pub bandwidth: f64,
    pub eps: f64,
    pub permutations: usize,
    pub alpha: f64,
    pub min_rows_per_class: usize,
    pub testable_classes: usize,
    /// One entry per class, in class order.
    pub per_class: Vec<ClassTestRecord>,
    pub reject_any: bool,
    /// The summary sentence.
    pub decision: String,
    pub seconds: TestSeconds,
}

/// One class's result with its name, and why it was not tested where it was not.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassTestRecord {
    pub class: String,
    pub class_index: usize,
    pub n_source: usize,
    pub n_target: usize,
    pub testable: bool,
    pub not_testable_reason: Option<String>,
    pub mcmd2: Option<f64>,
    pub p_value: Option<f64>,
    pub p_adjusted: Option<f64>,
    pub reject: bool,
}

/// Wall seconds of the fit and of the test, and their ratio (total / fit).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TestSeconds {
    pub fit: f64,
    pub test: f64,
    pub total_over_fit: f64,
}

impl TestSeconds {
    pub fn new(fit: f64, test: f64) -> TestSeconds {
        TestSeconds { fit, test, total_over_fit: (fit + test) / fit }
    }
}

impl ClassTestRecord {
    /// `t` named from `names` (indexed by class), with the reason it was not tested.
    pub fn new(
        t: &ClassTest,
        names: &[String],
        not_testable_reason: Option<String>,
    ) -> ClassTestRecord {
        ClassTestRecord {
            class: names[t.class].clone(),
            class_index: t.class,
            n_source: t.n_source,
            n_target: t.n_target,
            testable: t.testable,
            not_testable_reason,
            mcmd2: t.mcmd2,
            p_value: t.p_value,
            p_adjusted: t.p_adjusted,
            reject: t.reject,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::cond_shift::CondTest;

    /// A result of two classes, one testable and one not.
    fn example_cond_test() -> CondTest {
        let class = |class, n, testable, p: Option<f64>| ClassTest {
            class,
            n_source: n,
            n_target: n,
            testable,
            mcmd2: p.map(|p| p / 10.0),
            p_value: p,
            p_adjusted: p,
            reject: p.is_some_and(|p| p < 0.05),
        };
        CondTest {
            per_class: vec![class(0, 20, true, Some(0.01)), class(1, 3, false, None)],
            reject_any: true,
            alpha: 0.05,
            permutations: 200,
            testable_classes: 1,
            min_rows_per_class: 5,
        }
    }

    #[test]
    fn a_written_file_reads_back_as_the_same_record() {
        let res = example_cond_test();
        let names = vec!["cat".to_string(), "dog".to_string()];
        let per_class = res
            .per_class
            .iter()
            .map(|t| {
                ClassTestRecord::new(t, &names, (!t.testable).then(|| "3 source rows".to_string()))
            })
            .collect();
        let file = ShiftTestFile {
            glshift_version: "0".into(),
            source: "a".into(),
            target: "b".into(),
            method: "mul".into(),
            seed: 3,
            statistic: "s".into(),
            assignment: "a".into(),
            p_value: "p".into(),
            bandwidth: 1.5,
            eps: 1e-3,
            permutations: res.permutations,
            alpha: res.alpha,
            min_rows_per_class: res.min_rows_per_class,
            testable_classes: res.testable_classes,
            per_class,
            reject_any: res.reject_any,
            decision: "d".into(),
            seconds: TestSeconds::new(2.0, 1.0),
        };
        let text = serde_json::to_string_pretty(&file).unwrap();
        let back: ShiftTestFile = serde_json::from_str(&text).unwrap();
        assert_eq!(back, file);
        assert_eq!(back.per_class[1].class, "dog");
        assert_eq!(back.per_class[1].mcmd2, None);
        assert_eq!(back.seconds.total_over_fit, 1.5);
    }
}
