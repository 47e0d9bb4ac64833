//! A seeded synthetic generalized-label-shift task: the `glshift demo` job and a test fixture.
//!
//! Source class k draws x = μ_k + σ·ε. The target moves every class conditional (GLS's conditional
//! shift): x = R(μ_k + δ_k + σ·ε) + b, with R a rotation in a few random coordinate planes, δ_k a
//! class-specific offset and b a common offset, so a source classifier loses accuracy but the
//! class structure survives. The target's class prior is drawn from a Dirichlet(α) (label shift),
//! the source's is uniform. Everything is drawn from one ChaCha8 stream: same seed, same task.

use ndarray::{Array1, Array2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Gamma, StandardNormal};
use serde::{Deserialize, Serialize};

use crate::{Error, Result};
use glshift::data::{Domain, FileFormat, LabelRule};

/// Parameters of the generator. Defaults give a task where a source-only network loses a few
/// points of accuracy to the shift and the target prior is far from the source's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SyntheticConfig {
    pub n_classes: usize,
    pub dim: usize,
    pub n_source: usize,
    pub n_target: usize,
    /// Distance scale between class means (in units of the within-class σ = 1).
    pub separation: f64,
    /// Rotation angle (radians) applied in each rotated plane of the target.
    pub rotation: f64,
    /// Number of random coordinate planes the target is rotated in.
    pub rotated_planes: usize,
    /// Size of the class-specific target offsets δ_k (per coordinate standard deviation).
    pub class_offset: f64,
    /// Dirichlet concentration of the target prior (small = strong label shift).
    pub dirichlet_alpha: f64,
    pub seed: u64,
}

impl Default for SyntheticConfig {
    fn default() -> Self {
        SyntheticConfig {
            n_classes: 6,
            dim: 32,
            n_source: 600,
            n_target: 600,
            separation: 0.7,
            rotation: 0.6,
            rotated_planes: 8,
            class_offset: 0.3,
            dirichlet_alpha: 2.0,
            seed: 0,
        }
    }
}

impl SyntheticConfig {
    /// Checks the parameters before generating.
    pub fn validate(&self) -> Result<()> {
        if self.n_classes < 2 {
            return Err(Error::param("n_classes", self.n_classes, "needs at least 2 classes"));
        }
        if self.dim < 2 {
            return Err(Error::param("dim", self.dim, "needs at least 2 dimensions"));
        }
        if self.n_source < 2 * self.n_classes || self.n_target < 2 * self.n_classes {
            return Err(Error::param(
                "n_source/n_target",
                format!("{}/{}", self.n_source, self.n_target),
                "needs at least 2 rows per class",
            ));
        }
        // The labels of every row are held in memory (8 bytes a row): a typo of a few zeros
        // should be an error, not an allocation failure.
        if self.n_source.saturating_add(self.n_target) > MAX_ROWS {
            return Err(Error::param(
                "n_source + n_target",
                self.n_source.saturating_add(self.n_target),
                format!("at most {MAX_ROWS} rows"),
            ));
        }
        for (name, v) in [
            ("separation", self.separation),
            ("class_offset", self.class_offset),
            ("rotation", self.rotation),
        ] {
            if !v.is_finite() || v < 0.0 {
                return Err(Error::param(name, v, "must be finite and >= 0"));
            }
        }
        if !(self.dirichlet_alpha.is_finite() && self.dirichlet_alpha > 0.0) {
            return Err(Error::param("dirichlet_alpha", self.dirichlet_alpha, "must be > 0"));
        }
        Ok(())
    }
}

/// Most rows (source + target) a task may have.
pub const MAX_ROWS: usize = 100_000_000;

/// A generated task with its ground truth.
#[derive(Clone, Debug)]
pub struct SyntheticTask {
    pub source: Domain,
    /// Target with labels (for scoring only).
    pub target: Domain,
    /// The Dirichlet draw the target labels were sampled from.
    pub target_prior: Vec<f64>,
}

/// The task's parameters and labels, drawn once; rows are then drawn one at a time, source
/// rows first, from the same ChaCha8 stream. [`generate`] collects every row in memory;
/// `synthetic_files` writes them to `.npy` files in chunks, so any size fits in memory.
pub struct SyntheticStream {
    cfg: SyntheticConfig,
    rng: ChaCha8Rng,
    means: Array2<f64>,
    offsets: Array2<f64>,
    shift: Array1<f64>,
    planes: Vec<(usize, usize)>,
    /// The Dirichlet draw the target labels were sampled from.
    pub target_prior: Vec<f64>,
    /// Labels of every source and target row, in row order.
    pub ys: Vec<usize>,
    pub yt: Vec<usize>,
}

impl SyntheticStream {
    /// Draws the task's parameters and labels (`n_source + n_target` labels are kept).
    pub fn new(cfg: &SyntheticConfig) -> Result<SyntheticStream> {
        cfg.validate()?;
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        let (c, d) = (cfg.n_classes, cfg.dim);
        let means = gaussian_matrix(&mut rng, c, d, cfg.separation);
        let offsets = gaussian_matrix(&mut rng, c, d, cfg.class_offset);
        let shift: Array1<f64> = gaussian_matrix(&mut rng, 1, d, 0.5).row(0).to_owned();
        let planes: Vec<(usize, usize)> = (0..cfg.rotated_planes)
            .map(|_| {
                let i = rng.random_range(0..d);
                let j = (i + 1 + rng.random_range(0..d - 1)) % d;
                (i, j)
            })
            .collect();
        let source_prior = vec![1.0 / c as f64; c];
        let target_prior = draw_prior(&mut rng, c, cfg.dirichlet_alpha)?;
        let ys = draw_labels(&mut rng, &source_prior, cfg.n_source);
        let yt = draw_labels(&mut rng, &target_prior, cfg.n_target);
        Ok(SyntheticStream {
            cfg: cfg.clone(),
            rng,
            means,
            offsets,
            shift,
            planes,
            target_prior,
            ys,
            yt,
        })
    }

    /// Draws the next source row of class `k` into `out` (length `dim`): μ_k + ε.
    pub fn source_row(&mut self, k: usize, out: &mut [f32]) {
        for (j, o) in out.iter_mut().enumerate() {
            let e: f64 = self.rng.sample(StandardNormal);
            *o = (self.means[[k, j]] + e) as f32;
        }
    }

    /// Draws the next target row of class `k` into `out`, using `row` (length `dim`) as
    /// scratch: R(μ_k + δ_k + ε) + b. Call after every source row has been drawn.
    pub fn target_row(&mut self, k: usize, row: &mut [f64], out: &mut [f32]) {
        for (j, r) in row.iter_mut().enumerate() {
            let e: f64 = self.rng.sample(StandardNormal);
            *r = self.means[[k, j]] + self.offsets[[k, j]] + e;
        }
        for &(a, b) in &self.planes {
            let (s, co) = self.cfg.rotation.sin_cos();
            let (u, v) = (row[a], row[b]);
            row[a] = co * u - s * v;
            row[b] = s * u + co * v;
        }
        for (j, o) in out.iter_mut().enumerate() {
            *o = (row[j] + self.shift[j]) as f32;
        }
    }
}

/// Generates the task described by `cfg`, in memory.
pub fn generate(cfg: &SyntheticConfig) -> Result<SyntheticTask> {
    let mut stream = SyntheticStream::new(cfg)?;
    let (c, d) = (cfg.n_classes, cfg.dim);
    let (ys, yt) = (stream.ys.clone(), stream.yt.clone());
    let mut xs = Array2::<f32>::zeros((cfg.n_source, d));
    for (i, &k) in ys.iter().enumerate() {
        stream.source_row(k, xs.row_mut(i).as_slice_mut().expect("C-order row"));
    }
    let mut xt = Array2::<f32>::zeros((cfg.n_target, d));
    let mut row = vec![0.0f64; d];
    for (i, &k) in yt.iter().enumerate() {
        stream.target_row(k, &mut row, xt.row_mut(i).as_slice_mut().expect("C-order row"));
    }

    let class_names: Vec<String> = (0..c).map(|k| format!("class{k}")).collect();
    let domain = |name: &str, features, labels| Domain {
        name: name.to_string(),
        features,
        labels: Some(labels),
        class_names: class_names.clone(),
        path: format!("<synthetic seed {}>", cfg.seed).into(),
        format: FileFormat::Npy,
        label_rule: LabelRule::ZeroBased,
        feature_names: None,
    };
    Ok(SyntheticTask {
        source: domain("synthetic-source", xs, ys),
        target: domain("synthetic-target", xt, yt),
        target_prior: stream.target_prior,
    })
}

fn gaussian_matrix(rng: &mut ChaCha8Rng, rows: usize, cols: usize, scale: f64) -> Array2<f64> {
    Array2::from_shape_fn((rows, cols), |_| scale * rng.sample::<f64, _>(StandardNormal))
}

/// Dirichlet draw, with every class kept at ≥ 2% so each class still appears in the target
/// (an absent class is the partial-DA setting, exercised separately).
fn draw_prior(rng: &mut ChaCha8Rng, c: usize, alpha: f64) -> Result<Vec<f64>> {
    // Dirichlet(α·1) as normalised Gamma(α, 1) draws (rand_distr's Dirichlet wants a const size).
    let gamma = Gamma::new(alpha, 1.0)
        .map_err(|e| Error::param("dirichlet_alpha", alpha, e.to_string()))?;
    let g: Vec<f64> = (0..c).map(|_| gamma.sample(rng)).collect();
    let sum: f64 = g.iter().sum();
    let raw: Vec<f64> = g.iter().map(|x| x / sum).collect();
    let floored: Vec<f64> = raw.iter().map(|p| p.max(0.02)).collect();
    let total: f64 = floored.iter().sum();
    Ok(floored.into_iter().map(|p| p / total).collect())
}

/// Exactly round(p_k·n) rows per class (largest remainders), in a shuffled order, so the
/// realised prior matches the drawn one up to rounding.
fn draw_labels(rng: &mut ChaCha8Rng, prior: &[f64], n: usize) -> Vec<usize> {
    let raw: Vec<f64> = prior.iter().map(|p| p * n as f64).collect();
    let mut counts: Vec<usize> = raw.iter().map(|r| r.floor() as usize).collect();
    let mut order: Vec<usize> = (0..prior.len()).collect();
    order.sort_by(|&a, &b| {
        let (fa, fb) = (raw[a] - raw[a].floor(), raw[b] - raw[b].floor());
        fb.total_cmp(&fa).then(a.cmp(&b))
    });
    let missing = n - counts.iter().sum::<usize>();
    for &k in order.iter().take(missing) {
        counts[k] += 1;
    }
    let mut labels: Vec<usize> =
        counts.iter().enumerate().flat_map(|(k, &m)| std::iter::repeat_n(k, m)).collect();
    // Fisher–Yates with our own stream keeps the order reproducible across rand versions.
    for i in (1..labels.len()).rev() {
        let j = rng.random_range(0..=i);
        labels.swap(i, j);
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_gives_identical_task() {
        let a = generate(&SyntheticConfig::default()).unwrap();
        let b = generate(&SyntheticConfig::default()).unwrap();
        assert_eq!(a.source.features, b.source.features);
        assert_eq!(a.target.features, b.target.features);
        assert_eq!(a.target.labels, b.target.labels);
    }

    #[test]
    fn different_seeds_give_different_tasks() {
        let a = generate(&SyntheticConfig::default()).unwrap();
        let cfg = SyntheticConfig { seed: 1, ..Default::default() };
        let b = generate(&cfg).unwrap();
        assert_ne!(a.target.features, b.target.features);
    }

    #[test]
    fn realised_target_prior_matches_the_draw_and_differs_from_source() {
        let cfg = SyntheticConfig::default();
        let t = generate(&cfg).unwrap();
        let c = cfg.n_classes;
        let mut counts = vec![0usize; c];
        for &y in t.target.labels.as_ref().unwrap() {
            counts[y] += 1;
        }
        let l1_to_draw: f64 = counts
            .iter()
            .zip(&t.target_prior)
            .map(|(&m, p)| (m as f64 / cfg.n_target as f64 - p).abs())
            .sum();
        assert!(l1_to_draw < c as f64 / cfg.n_target as f64 + 1e-12, "{l1_to_draw}");
        assert!(t.target_prior.iter().all(|&p| p > 0.0));
        let l1_to_uniform: f64 = t.target_prior.iter().map(|p| (p - 1.0 / c as f64).abs()).sum();
        assert!(l1_to_uniform > 0.1, "label shift too small: {l1_to_uniform}");
    }

    #[test]
    fn shapes_and_labels_are_consistent() {
        let cfg = SyntheticConfig {
            n_classes: 4,
            dim: 8,
            n_source: 100,
            n_target: 60,
            ..Default::default()
        };
        let t = generate(&cfg).unwrap();
        assert_eq!(t.source.features.dim(), (100, 8));
        assert_eq!(t.target.features.dim(), (60, 8));
        assert!(t.source.labels.as_ref().unwrap().iter().all(|&y| y < 4));
        assert!(t.source.features.iter().all(|v| v.is_finite()));
    }

    #[test]
    fn invalid_parameters_are_rejected() {
        let bad = SyntheticConfig { n_classes: 1, ..Default::default() };
        assert!(matches!(generate(&bad), Err(Error::Param { name: "n_classes", .. })));
        let bad = SyntheticConfig { dirichlet_alpha: 0.0, ..Default::default() };
        assert!(generate(&bad).is_err());
    }
}
