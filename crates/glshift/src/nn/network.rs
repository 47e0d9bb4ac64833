//! The MUL network: feature extractor G (features → Z) and classifier F (Z → logits).

use ndarray::{Array2, ArrayView2, Axis};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::activation::Activation;
use super::batchnorm::BatchNorm;
use super::linear::{Linear, LinearGrad};
use super::loss::softmax;
use super::mlp::{Block, BlockGrad, BnStats, Mlp, MlpCache};
use crate::{Error, Real, Result};

/// Architecture of the network.
///
/// G is an MLP over `hidden` widths, each block `Linear → [BatchNorm] → activation → [dropout]`;
/// the LAST width is the dimension of Z (the representation the kernel terms act on). When
/// `activation_on_z` is false, the last block has no activation (BatchNorm and dropout, if
/// enabled, still apply). F = Linear(z_dim → c); its softmax lives in the loss.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetworkConfig {
    /// Widths of G's blocks, input side first; the last is z_dim. Default `[512, 256]`.
    pub hidden: Vec<usize>,
    /// Non-linearity of G. Default `relu`.
    pub activation: Activation,
    /// Dropout probability after each G block, in [0, 1); training mode only. Default 0.
    /// It applies to the last block as well, so in training mode Z itself is dropped out.
    pub dropout: f32,
    /// BatchNorm after each Linear of G (statistics: see [`Forward`]: always the source training
    /// rows, so target rows are normalised with source statistics). Default true.
    pub batch_norm: bool,
    /// Whether the last G block (producing Z) has the activation too. Default true.
    pub activation_on_z: bool,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig {
            hidden: vec![512, 256],
            activation: Activation::Relu,
            dropout: 0.0,
            batch_norm: true,
            activation_on_z: true,
        }
    }
}

impl NetworkConfig {
    /// Checks: `hidden` non-empty with every width ≥ 1; `dropout` finite and in [0, 1).
    pub fn validate(&self) -> Result<()> {
        if self.hidden.is_empty() {
            return Err(Error::param(
                "network.hidden",
                "[]",
                "G needs at least one layer (the last width is z_dim)",
            ));
        }
        if self.hidden.contains(&0) {
            return Err(Error::param(
                "network.hidden",
                format!("{:?}", self.hidden),
                "every width must be at least 1",
            ));
        }
        if !(self.dropout.is_finite() && (0.0..1.0).contains(&self.dropout)) {
            return Err(Error::param("network.dropout", self.dropout, "must be in [0, 1)"));
        }
        Ok(())
    }

    /// Dimension of Z (the last hidden width). Assumes a validated config.
    pub fn z_dim(&self) -> usize {
        *self.hidden.last().expect("validated config has a layer")
    }
}

/// Mode of a forward pass.
///
/// BatchNorm statistics (mean, biased variance) are taken from rows `0..stats_rows` of the input
/// and applied to ALL rows: the caller puts the source rows first (and the target rows after
/// them), so the target is normalised with source statistics (pitfall 4). `stats_rows` must be in
/// `1..=n` when the network has BatchNorm; it is ignored otherwise. `train = false` (evaluation)
/// keeps the same statistics rule and turns dropout off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Forward {
    /// Dropout on (training) or off (evaluation).
    pub train: bool,
    /// Number of leading rows whose batch statistics BatchNorm uses.
    pub stats_rows: usize,
}

impl Forward {
    /// Training mode, statistics from the first `stats_rows` rows.
    pub fn training(stats_rows: usize) -> Self {
        Forward {
            train: true,
            stats_rows,
        }
    }

    /// Evaluation mode (no dropout), statistics from the first `stats_rows` rows.
    pub fn evaluation(stats_rows: usize) -> Self {
        Forward {
            train: false,
            stats_rows,
        }
    }
}

/// Role of a parameter tensor; AdamW decays only [`ParamKind::Weight`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// Linear weight matrix.
    Weight,
    /// Linear bias.
    Bias,
    /// BatchNorm scale γ.
    BnScale,
    /// BatchNorm shift β.
    BnShift,
}

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
}

/// Parameter gradients, laid out like the parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Grads<T = f32> {
    /// One entry per G block.
    pub g: Vec<BlockGrad<T>>,
    /// Gradients of F.
    pub f: LinearGrad<T>,
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
        Ok(Network {
            input_dim,
            n_classes,
            config: cfg.clone(),
            g: Mlp { blocks },
            f,
        })
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
    /// cache for [`Network::backward`]. BatchNorm statistics follow `fw` (see [`Forward`]);
    /// dropout masks are drawn from `rng` only when `fw.train` and dropout > 0.
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
        Pass { z, logits, cache }
    }

    /// Backward through F and G. `d_logits = ∂ℓ/∂logits` (`n × c`); `d_z_extra` (`n × z_dim`) is
    /// an additional ∂ℓ/∂z from terms acting on Z directly (kernel losses), added to the part
    /// coming through F. Returns the gradients of all parameters (not accumulated across calls).
    ///
    /// # Panics
    /// If a shape does not match the pass.
    pub fn backward(
        &self,
        pass: &Pass<T>,
        d_logits: ArrayView2<T>,
        d_z_extra: Option<ArrayView2<T>>,
    ) -> Grads<T> {
        assert_eq!(
            d_logits.dim(),
            pass.logits.dim(),
            "Network::backward: d_logits shape"
        );
        let (f, dz) = self.f.backward(pass.z.view(), d_logits, true);
        let mut dz = dz.expect("dz requested");
        if let Some(extra) = d_z_extra {
            assert_eq!(
                extra.dim(),
                pass.z.dim(),
                "Network::backward: d_z_extra shape"
            );
            dz.scaled_add(T::one(), &extra);
        }
        let g = self.g.backward(&pass.cache, pass.z.view(), dz);
        Grads { g, f }
    }

    /// [`Network::backward`] without extra ∂ℓ/∂Z, also returning ∂ℓ/∂x (`n × input_dim`): for a
    /// network fed by another one (the domain discriminators of `methods::baselines`).
    ///
    /// # Panics
    /// If a shape does not match the pass.
    pub fn backward_with_input(&self, pass: &Pass<T>, d_logits: ArrayView2<T>) -> (Grads<T>, Array2<T>) {
        assert_eq!(d_logits.dim(), pass.logits.dim(), "Network::backward_with_input: d_logits shape");
        let (f, dz) = self.f.backward(pass.z.view(), d_logits, true);
        let (g, dx) = self.g.backward_with_input(&pass.cache, pass.z.view(), dz.expect("dz requested"), true);
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

    /// Evaluation-mode `(z, logits)` (`n × z_dim`, `n × c`) for `x` (`n × input_dim`) with frozen
    /// BatchNorm statistics; identical, bit for bit, to [`Network::eval_outputs`] with the rows
    /// the statistics came from.
    pub fn eval_frozen(&self, x: ArrayView2<T>, stats: &[Option<BnStats<T>>]) -> (Array2<T>, Array2<T>) {
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

    /// Parameter tensors in a fixed order (per G block: W, b, [γ, β]; then F's W, b), each as a
    /// flat row-major slice with its role. [`Grads::tensors`] uses the same order.
    pub fn params(&self) -> Vec<(ParamKind, &[T])> {
        let mut out = Vec::new();
        for b in &self.g.blocks {
            out.push((
                ParamKind::Weight,
                b.linear.w.as_slice().expect("standard layout"),
            ));
            out.push((
                ParamKind::Bias,
                b.linear.b.as_slice().expect("standard layout"),
            ));
            if let Some(bn) = &b.bn {
                out.push((
                    ParamKind::BnScale,
                    bn.gamma.as_slice().expect("standard layout"),
                ));
                out.push((
                    ParamKind::BnShift,
                    bn.beta.as_slice().expect("standard layout"),
                ));
            }
        }
        out.push((
            ParamKind::Weight,
            self.f.w.as_slice().expect("standard layout"),
        ));
        out.push((
            ParamKind::Bias,
            self.f.b.as_slice().expect("standard layout"),
        ));
        out
    }

    /// Mutable version of [`Network::params`], same order.
    pub fn params_mut(&mut self) -> Vec<(ParamKind, &mut [T])> {
        let mut out = Vec::new();
        for b in &mut self.g.blocks {
            out.push((
                ParamKind::Weight,
                b.linear.w.as_slice_mut().expect("standard layout"),
            ));
            out.push((
                ParamKind::Bias,
                b.linear.b.as_slice_mut().expect("standard layout"),
            ));
            if let Some(bn) = &mut b.bn {
                out.push((
                    ParamKind::BnScale,
                    bn.gamma.as_slice_mut().expect("standard layout"),
                ));
                out.push((
                    ParamKind::BnShift,
                    bn.beta.as_slice_mut().expect("standard layout"),
                ));
            }
        }
        out.push((
            ParamKind::Weight,
            self.f.w.as_slice_mut().expect("standard layout"),
        ));
        out.push((
            ParamKind::Bias,
            self.f.b.as_slice_mut().expect("standard layout"),
        ));
        out
    }
}

/// He (Kaiming-normal) for rectifier-like activations, Xavier (Glorot-normal) otherwise.
fn init_std(activation: Activation, fan_in: usize, fan_out: usize) -> f64 {
    match activation {
        Activation::Relu | Activation::LeakyRelu | Activation::Elu => (2.0 / fan_in as f64).sqrt(),
        Activation::Tanh | Activation::Identity => (2.0 / (fan_in + fan_out) as f64).sqrt(),
    }
}

impl<T: Real> Grads<T> {
    /// Gradient tensors as flat slices, in the order of [`Network::params`].
    pub fn tensors(&self) -> Vec<&[T]> {
        let mut out = Vec::new();
        for b in &self.g {
            out.push(b.linear.dw.as_slice().expect("standard layout"));
            out.push(b.linear.db.as_slice().expect("standard layout"));
            if let Some(bn) = &b.bn {
                out.push(bn.dgamma.as_slice().expect("standard layout"));
                out.push(bn.dbeta.as_slice().expect("standard layout"));
            }
        }
        out.push(self.f.dw.as_slice().expect("standard layout"));
        out.push(self.f.db.as_slice().expect("standard layout"));
        out
    }

    /// Mutable version of [`Grads::tensors`].
    pub fn tensors_mut(&mut self) -> Vec<&mut [T]> {
        let mut out = Vec::new();
        for b in &mut self.g {
            out.push(b.linear.dw.as_slice_mut().expect("standard layout"));
            out.push(b.linear.db.as_slice_mut().expect("standard layout"));
            if let Some(bn) = &mut b.bn {
                out.push(bn.dgamma.as_slice_mut().expect("standard layout"));
                out.push(bn.dbeta.as_slice_mut().expect("standard layout"));
            }
        }
        out.push(self.f.dw.as_slice_mut().expect("standard layout"));
        out.push(self.f.db.as_slice_mut().expect("standard layout"));
        out
    }

    /// True when no gradient entry is NaN or infinite.
    pub fn is_finite(&self) -> bool {
        self.tensors()
            .iter()
            .all(|t| t.iter().all(|v| v.is_finite()))
    }

    /// Euclidean norm of all gradient entries together, accumulated in f64.
    pub fn global_norm(&self) -> f64 {
        self.tensors()
            .iter()
            .map(|t| t.iter().map(|v| v.to_f64_() * v.to_f64_()).sum::<f64>())
            .sum::<f64>()
            .sqrt()
    }

    /// Multiplies every gradient by `s` (e.g. for clipping to a maximum global norm).
    pub fn scale(&mut self, s: f64) {
        let s = T::from_f64_(s);
        for t in self.tensors_mut() {
            t.iter_mut().for_each(|v| *v = *v * s);
        }
    }
}

/// Row-block helper: `[a; b]` stacked vertically (used by callers putting source rows first).
pub fn stack_rows<T: Real>(a: ArrayView2<T>, b: ArrayView2<T>) -> Array2<T> {
    ndarray::concatenate(Axis(0), &[a, b]).expect("stack_rows: column counts differ")
}

#[cfg(test)]
mod tests;
