//! Seeded synthetic probabilities for the tests of the label-shift diagnostics and the prior
//! guard: a 3-class classifier whose output depends only on the true class y, so two draws with
//! the same strengths satisfy label shift exactly and different strengths are a conditional
//! shift.

use ndarray::Array2;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Probabilities (n × 3) of logits `strength[y]·e_y + N(0, 1)` (Box–Muller from `rng`), one
/// row per label.
pub(crate) fn rows(labels: &[usize], strength: [f32; 3], rng: &mut ChaCha8Rng) -> Array2<f32> {
    let mut p = Array2::<f32>::zeros((labels.len(), 3));
    for (i, &y) in labels.iter().enumerate() {
        let logits: Vec<f32> = (0..3)
            .map(|k| {
                let (u1, u2): (f32, f32) = (rng.random_range(1e-6..1.0), rng.random());
                let noise = (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos();
                if k == y {
                    strength[y] + noise
                } else {
                    noise
                }
            })
            .collect();
        let m = logits.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let z: f32 = logits.iter().map(|l| (l - m).exp()).sum();
        for k in 0..3 {
            p[[i, k]] = (logits[k] - m).exp() / z;
        }
    }
    p
}

/// Labels with `counts[k]` rows of class k, in class order.
pub(crate) fn draw(counts: [usize; 3]) -> Vec<usize> {
    (0..3).flat_map(|k| std::iter::repeat_n(k, counts[k])).collect()
}
