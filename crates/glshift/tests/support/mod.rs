//! What the integration tests of the training loop share: a seeded synthetic task as `FitData`.

use glshift::train::FitData;
use glshift_experiments::synthetic::{generate, SyntheticConfig, SyntheticTask};

/// The synthetic generalized-label-shift task with these sizes and seed (defaults otherwise).
pub fn synthetic_task(n_source: usize, n_target: usize, seed: u64) -> SyntheticTask {
    generate(&SyntheticConfig { n_source, n_target, seed, ..Default::default() }).unwrap()
}

/// The task's source rows (with labels) and target rows, the default stratified hold-out.
pub fn fit_data(task: &SyntheticTask) -> FitData<'_> {
    FitData {
        source_x: glshift::data::Rows::Memory(task.source.features.view()),
        source_y: task.source.labels.as_deref().unwrap(),
        target_x: glshift::data::Rows::Memory(task.target.features.view()),
        n_classes: task.source.n_classes(),
        holdout: None,
    }
}
