//! The MUL network: feature extractor G (features → Z) and classifier F (Z → logits).
//!
//! Its architecture lives in `config` (the forward mode in `super::forward`), its parameter and gradient tensors in
//! `params`; both are re-exported here.

use ndarray::{Array2, ArrayView2, Axis};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::activation::Activation;
use super::batchnorm::BatchNorm;
use super::linear::Linear;
use super::loss::softmax;
use super::mlp::{Block, BnStats, Mlp, MlpCache};
use crate::{Error, Real, Result};

mod config;
mod params;

pub use super::forward::Forward;
pub use config::NetworkConfig;
pub use params::{Grads, ParamKind};

/// G (an [`Mlp`]) followed by F (a [`Linear`] z_dim → c), in precision `T` (f32 for training;
/// f64 is used by the finite-difference tests).
///
/// Initialisation (from `ChaCha8Rng::seed_from_u64(seed)`, layers in order, weights row-major):
/// weights ~ N(0, σ²) with He (Kaiming-normal) σ² = 2/fan_in before a ReLU / LeakyReLU / ELU,
/// and Xavier (Glorot-normal) σ² = 2/(fan_in + fan_out) before tanh / identity and for F;
/// biases 0, BatchNorm γ = 1, β = 0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Network<T = f32> {
    input_dim: usize,
    n_classes: usize,
    config: NetworkConfig,
    /// Feature extractor G.
    pub g: Mlp<T>,
    /// Classifier F.
    pub f: Linear<T>,
}

/// Result of [`Network::forward`]: the outputs and the cache for [`Network::backward`].
#[derive(Clone, Debug)]
pub struct Pass<T = f32> {
    /// Representation Z = G(x), `n × z_dim` (after dropout in training mode).
    pub z: Array2<T>,
    /// Logits F(Z), `n × c`.
    pub logits: Array2<T>,
    cache: MlpCache<T>,
    /// Where the forward's input was (address and shape): the backward is given the input again
    /// (the pass keeps no copy of it) and checks it is the same array.
    input: (usize, (usize, usize)),
}

impl<T> Pass<T> {
    /// Panics unless `x` is the array the forward read (the same address and shape).
    fn check_input(&self, x: &ArrayView2<T>, what: &str) {
        assert!(
            (x.as_ptr() as usize, x.dim()) == self.input,
            "{what}: x is not the array the forward pass read"
        );
    }
}

impl Network<f32> {
    /// A new f32 network for `input_dim` features and `n_classes` classes (see the type's docs
    /// for the initialisation). Deterministic in `seed`.
    ///
    /// Errors: invalid `cfg`, `input_dim = 0` or `n_classes < 2`.
    pub fn new(input_dim: usize, n_classes: usize, cfg: &NetworkConfig, seed: u64) -> Result<Self> {
        Self::new_generic(input_dim, n_classes, cfg, seed)
    }
}

impl<T: Real> Network<T> {
    /// [`Network::new`] in any precision; the same seed gives the same values up to rounding.
    pub fn new_generic(
        input_dim: usize,
        n_classes: usize,
        cfg: &NetworkConfig,
        seed: u64,
    ) -> Result<Self> {
        cfg.validate()?;
        if input_dim == 0 {
            return Err(Error::param("input_dim", input_dim, "must be at least 1"));
        }
        if n_classes < 2 {
            return Err(Error::param("n_classes", n_classes, "must be at least 2"));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let nb = cfg.hidden.len();
        let mut blocks = Vec::with_capacity(nb);
        let mut fan_in = input_dim;
        for (l, &width) in cfg.hidden.iter().enumerate() {
            let activation = if l + 1 == nb && !cfg.activation_on_z {
                Activation::Identity
            } else {
                cfg.activation
            };
            let std = init_std(activation, fan_in, width);
            blocks.push(Block {
                linear: Linear::init_normal(fan_in, width, std, &mut rng),
                bn: cfg.batch_norm.then(|| BatchNorm::new(width)),
                activation,
                dropout: cfg.dropout,
            });
            fan_in = width;
        }
        let f = Linear::init_normal(
            fan_in,
            n_classes,
            init_std(Activation::Identity, fan_in, n_classes),
            &mut rng,
        );
        Ok(Network { input_dim, n_classes, config: cfg.clone(), g: Mlp { blocks }, f })
    }

    /// Number of input features.
    pub fn input_dim(&self) -> usize {
        self.input_dim
    }

    /// Number of classes c.
    pub fn n_classes(&self) -> usize {
        self.n_classes
    }

    /// Dimension of Z.
    pub fn z_dim(&self) -> usize {
        self.f.in_dim()
    }

    /// The architecture this network was built from.
    pub fn config(&self) -> &NetworkConfig {
        &self.config
    }

    /// Total number of scalar parameters (weights, biases, γ, β).
    pub fn n_params(&self) -> usize {
        self.params().iter().map(|(_, p)| p.len()).sum()
    }

    /// Forward on `x` (`n × input_dim`). Returns `z` (`n × z_dim`), `logits` (`n × c`) and the
    /// cache for [`Network::backward`], which is given the same `x` again. BatchNorm statistics
    /// follow `fw` (see [`Forward`]); dropout masks are drawn from `rng` only when `fw.train`
    /// and dropout > 0.
    ///
    /// # Panics
    /// If `x` has the wrong number of columns, or the network has BatchNorm and
    /// `fw.stats_rows ∉ 1..=n`.
    pub fn forward(&self, x: ArrayView2<T>, fw: &Forward, rng: &mut ChaCha8Rng) -> Pass<T> {
        assert_eq!(
            x.ncols(),
            self.input_dim,
            "Network::forward: x has {} columns, network expects {}",
            x.ncols(),
            self.input_dim
        );
        let (z, cache) = self.g.forward(x, fw, rng);
        let logits = self.f.forward(z.view());
        Pass { z, logits, cache, input: (x.as_ptr() as usize, x.dim()) }
    }

    /// Backward through F and G of the pass `pass` of [`Network::forward`] on `x`
    /// (`n × input_dim`, the same array). `d_logits = ∂ℓ/∂logits` (`n × c`); `d_z_extra`
    /// (`n × z_dim`) is an additional ∂ℓ/∂z from terms acting on Z directly (kernel losses),
    /// added to the part coming through F. Returns the gradients of all parameters (not
    /// accumulated across calls).
    ///
    /// # Panics
    /// If a shape does not match the pass, or `x` is not the array the pass read.
    pub fn backward(
        &self,
        x: ArrayView2<T>,
        pass: &Pass<T>,
        d_logits: ArrayView2<T>,
        d_z_extra: Option<ArrayView2<T>>,
    ) -> Grads<T> {
        assert_eq!(d_logits.dim(), pass.logits.dim(), "Network::backward: d_logits shape");
        pass.check_input(&x, "Network::backward");
        let (f, dz) = self.f.backward(pass.z.view(), d_logits, true);
        let mut dz = dz.expect("dz requested");
        if let Some(extra) = d_z_extra {
            assert_eq!(extra.dim(), pass.z.dim(), "Network::backward: d_z_extra shape");
            dz.scaled_add(T::one(), &extra);
        }
        let g = self.g.backward(&pass.cache, x, pass.z.view(), dz);
        Grads { g, f }
    }

    /// [`Network::backward`] when only the leading r rows of the pass have a non-zero
    /// ∂ℓ/∂logits (`d_logits`: `r × c`, r ≥ the BatchNorm statistics rows): the same gradients,
    /// bit for bit, without the work on the zero rows (pre-training's hold-out rows, 20% of a
    /// source, only feed the stopping rule).
    ///
    /// # Panics
    /// If `d_logits` has the wrong width or more rows than the pass, or fewer rows than the
    /// BatchNorm statistics, or `x` is not the array the pass read.
    pub fn backward_leading(
        &self,
        x: ArrayView2<T>,
        pass: &Pass<T>,
        d_logits: ArrayView2<T>,
    ) -> Grads<T> {
        let r = d_logits.nrows();
        assert!(
            r <= pass.logits.nrows() && d_logits.ncols() == pass.logits.ncols(),
            "Network::backward_leading: d_logits shape"
        );
        pass.check_input(&x, "Network::backward_leading");
        let z = pass.z.slice(ndarray::s![..r, ..]);
        let (f, dz) = self.f.backward(z, d_logits, true);
        let g = self.g.backward(&pass.cache, x, pass.z.view(), dz.expect("dz requested"));
        Grads { g, f }
    }

    /// [`Network::backward`] without extra ∂ℓ/∂Z, also returning ∂ℓ/∂x (`n × input_dim`): for a
    /// network fed by another one (the domain discriminators of `methods::baselines`).
    ///
    /// # Panics
    /// If a shape does not match the pass, or `x` is not the array the pass read.
    pub fn backward_with_input(
        &self,
        x: ArrayView2<T>,
        pass: &Pass<T>,
        d_logits: ArrayView2<T>,
    ) -> (Grads<T>, Array2<T>) {
        assert_eq!(
            d_logits.dim(),
            pass.logits.dim(),
            "Network::backward_with_input: d_logits shape"
        );
        pass.check_input(&x, "Network::backward_with_input");
        let (f, dz) = self.f.backward(pass.z.view(), d_logits, true);
        let (g, dx) = self.g.backward_with_input(
            &pass.cache,
            x,
            pass.z.view(),
            dz.expect("dz requested"),
            true,
        );
        (Grads { g, f }, dx.expect("dx requested"))
    }

    /// Evaluation-mode `(z, logits)` for `x` (`n × input_dim`): no dropout; every BatchNorm uses
    /// the statistics of `stats_x` (`m × input_dim`, e.g. the full source) propagated through the
    /// same layers, or of `x` itself when `None`. Outputs: `n × z_dim`, `n × c`.
    pub fn eval_outputs(
        &self,
        x: ArrayView2<T>,
        stats_x: Option<ArrayView2<T>>,
    ) -> (Array2<T>, Array2<T>) {
        assert_eq!(
            x.ncols(),
            self.input_dim,
            "Network: x has {} columns, network expects {}",
            x.ncols(),
            self.input_dim
        );
        if let Some(s) = &stats_x {
            assert_eq!(
                s.ncols(),
                self.input_dim,
                "Network: stats_x has {} columns, network expects {}",
                s.ncols(),
                self.input_dim
            );
        }
        let z = self.g.eval(x, stats_x);
        let logits = self.f.forward(z.view());
        (z, logits)
    }

    /// Per block of G, the BatchNorm statistics of the rows `stats_x` (`m × input_dim`), to be
    /// frozen into a model ([`Network::eval_frozen`]); `None` for blocks without BatchNorm.
    pub fn batch_norm_stats(&self, stats_x: ArrayView2<T>) -> Vec<Option<BnStats<T>>> {
        self.g.batch_norm_stats(stats_x)
    }

    /// [`Network::batch_norm_stats`] of the rows `rows` of `x` (`n × input_dim`), bit for bit,
    /// without gathering them into a copy (the first layer runs on blocks of them).
    pub fn batch_norm_stats_rows(
        &self,
        x: ArrayView2<T>,
        rows: &[usize],
    ) -> Vec<Option<BnStats<T>>> {
        self.g.batch_norm_stats_rows(x, rows)
    }

    /// Evaluation-mode `(z, logits)` (`n × z_dim`, `n × c`) for `x` (`n × input_dim`) with frozen
    /// BatchNorm statistics; identical, bit for bit, to [`Network::eval_outputs`] with the rows
    /// the statistics came from.
    pub fn eval_frozen(
        &self,
        x: ArrayView2<T>,
        stats: &[Option<BnStats<T>>],
    ) -> (Array2<T>, Array2<T>) {
        let z = self.g.eval_frozen(x, stats);
        let logits = self.f.forward(z.view());
        (z, logits)
    }

    /// Evaluation-mode class probabilities (`n × c`, softmax of the logits) for `x`, with
    /// BatchNorm statistics from `stats_x` (see [`Network::eval_outputs`]). Used for predictions
    /// and pseudo-labels.
    pub fn predict_proba(&self, x: ArrayView2<T>, stats_x: Option<ArrayView2<T>>) -> Array2<T> {
        softmax(self.eval_outputs(x, stats_x).1.view())
    }
}

/// He (Kaiming-normal) for rectifier-like activations, Xavier (Glorot-normal) otherwise.
fn init_std(activation: Activation, fan_in: usize, fan_out: usize) -> f64 {
    match activation {
        Activation::Relu | Activation::LeakyRelu | Activation::Elu => (2.0 / fan_in as f64).sqrt(),
        Activation::Tanh | Activation::Identity => (2.0 / (fan_in + fan_out) as f64).sqrt(),
    }
}

/// Row-block helper: `[a; b]` stacked vertically (used by callers putting source rows first).
pub fn stack_rows<T: Real>(a: ArrayView2<T>, b: ArrayView2<T>) -> Array2<T> {
    ndarray::concatenate(Axis(0), &[a, b]).expect("stack_rows: column counts differ")
}

#[cfg(test)]
mod tests;
