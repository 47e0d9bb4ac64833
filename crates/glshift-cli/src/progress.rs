//! One indicatif progress bar on stderr for a training run (hidden when stderr is not a terminal).

use glshift::methods::{Progress, Stage};
use indicatif::{ProgressBar, ProgressStyle};

pub struct TrainBar {
    bar: ProgressBar,
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
        TrainBar { bar }
    }

    pub fn update(&self, p: Progress) {
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
}
