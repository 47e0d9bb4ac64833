//! One indicatif progress bar on stderr for a training run (hidden when stderr is not a terminal).

use glshift::train::{Progress, Stage};
use indicatif::{ProgressBar, ProgressStyle};

pub struct TrainBar {
    bar: ProgressBar,
    clock: std::cell::RefCell<IterClock>,
}

/// Per stage: when the first and the last iteration ended, and how many ended. The time per
/// iteration, (last − first)/(count − 1), leaves out the set-up before the first iteration and
/// the scoring after the last.
#[derive(Default)]
struct IterClock {
    stages: [Option<(std::time::Instant, std::time::Instant, usize)>; 2],
}

impl IterClock {
    fn tick(&mut self, stage: Stage) {
        let now = std::time::Instant::now();
        let slot = &mut self.stages[matches!(stage, Stage::Adapt) as usize];
        *slot = Some(match *slot {
            None => (now, now, 1),
            Some((first, _, n)) => (first, now, n + 1),
        });
    }

    /// "pre-training 12.3 ms, adaptation 45.6 ms" over the stages with at least two iterations.
    fn summary(&self) -> Option<String> {
        let parts: Vec<String> = ["pre-training", "adaptation"]
            .iter()
            .zip(&self.stages)
            .filter_map(|(name, s)| {
                let (first, last, n) = (*s)?;
                (n >= 2).then(|| {
                    format!(
                        "{name} {:.1} ms ({} iterations)",
                        1e3 * (last - first).as_secs_f64() / (n - 1) as f64,
                        n
                    )
                })
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

impl TrainBar {
    pub fn new(label: &str, quiet: bool) -> TrainBar {
        let bar = if quiet { ProgressBar::hidden() } else { ProgressBar::new(0) };
        bar.set_style(
            ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg} ({elapsed})")
                .expect("static template")
                .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
        TrainBar { bar, clock: Default::default() }
    }

    pub fn update(&self, p: Progress) {
        self.clock.borrow_mut().tick(p.stage);
        self.bar.set_length(p.total as u64);
        self.bar.set_position(p.done as u64);
        let stage = match p.stage {
            Stage::Pretrain => "pretrain",
            Stage::Adapt => "adapt",
        };
        if p.done % 10 == 0 || p.done == p.total {
            self.bar.set_message(format!("{stage} loss {:.4}", p.loss));
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// Wall time per iteration of each stage (set-up and scoring left out), if measured.
    pub fn iteration_times(&self) -> Option<String> {
        self.clock.borrow().summary()
    }
}
