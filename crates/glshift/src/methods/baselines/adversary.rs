//! The domain discriminator of the adversarial baselines, its loss, and the gradient reversal
//! layer (Ganin et al. 2016, "Domain-Adversarial Training of Neural Networks", JMLR 17).
//!
//! D is a second network (an MLP with a 2-logit head, i.e. logistic regression on the last
//! hidden layer: source = class 0, target = class 1) with its own AdamW. Each iteration D takes
//! one step down its domain loss L_D while the feature network receives −λ_p·∂L_D/∂input: the
//! gradient reversal layer, which turns the minimax min_G max_D −L_D into one backward pass.
//!
//! Optimiser: under `baselines.schedule = "paper"` (the default) D steps with SGD at the
//! annealed learning rate of G and F (`BaselineConfig::annealed_lr`; CDAN's code gives the
//! discriminator the same ×10 multiplier as the new layers). Under `full-batch`, D steps with
//! the loop's AdamW settings. Known behaviour of the full-batch AdamW path: Adam normalises the
//! step, so when the source CE is ≈ 0 after pre-training (a tiny source such as DSLR) the first
//! adversarial steps are full-size whatever λ_p: L_D spikes (≈ 35–55 at p ≈ 0.05 on partial DA
//! D→A, seed 0) and the target representation is wrecked; λ = 0.1 spikes alike.

use crate::seeds::{stream_seed, Stream};
use ndarray::{Array2, ArrayView2};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use super::{AdversarialConfig, BaselineConfig};
use crate::nn::{
    weighted_cross_entropy, Activation, Adam, AdamConfig, Forward, Network, NetworkConfig,
    Optimizer, Sgd,
};
use crate::{Real, Result};

/// λ_p = λ·(2/(1 + exp(−γp)) − 1) (Ganin et al. 2016, sec. 5.2.2): the reversal starts at 0,
/// while the discriminator is still random, and rises to λ.
pub fn grl_coefficient(progress: f64, trade_off: f64, gamma: f64) -> f64 {
    trade_off * (2.0 / (1.0 + (-gamma * progress).exp()) - 1.0)
}

/// The gradient reversal layer's backward: identity forward, −λ times the gradient backward.
pub fn reverse_gradient<T: Real>(grad: &Array2<T>, lambda: f64) -> Array2<T> {
    let s = T::from_f64_(-lambda);
    grad.mapv(|g| g * s)
}

/// Standard deviation of D's hidden-layer weights at initialisation (`ad_layer1`, `ad_layer2`).
pub const HIDDEN_INIT_STD: f64 = 0.01;
/// Standard deviation of the logit of D's 1-logit head at initialisation (`ad_layer3`).
pub const HEAD_INIT_STD: f64 = 0.3;

/// Re-draws D's weights as the reference code initialises its `AdversarialNetwork` (thuml/CDAN
/// `pytorch/network.py`, the same class in the IWDAN/IWCDAN code): hidden weights
/// N(0, [`HIDDEN_INIT_STD`]²), head N(0, [`HEAD_INIT_STD`]²), biases 0. The head here has two
/// logits whose difference is the reference's one logit, so each column is drawn with std
/// `HEAD_INIT_STD/√2` and the difference has the reference's distribution. Before, D took the
/// network's He/Xavier rule: hidden weights 4–9 times larger on Z of 256 columns (std √(2/256) ≈
/// 0.09 and √(2/1024) ≈ 0.04) and a head 5 times smaller; with it DANN lagged skada's by 0.7
/// points on the reference check (docs/baselines.md, "Why DANN lagged skada's": that diagnosis
/// read three tasks' target labels; the values here are the reference code's, not tuned).
fn reference_init<T: Real>(net: &mut Network<T>, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(stream_seed(seed, Stream::DiscriminatorInit));
    let mut draw = |lin: &mut crate::nn::Linear<T>, std: f64| {
        let normal = Normal::new(0.0, std).expect("a positive, finite std");
        lin.w.mapv_inplace(|_| T::from_f64_(normal.sample(&mut rng)));
        lin.b.fill(T::from_f64_(0.0));
    };
    for block in &mut net.g.blocks {
        draw(&mut block.linear, HIDDEN_INIT_STD);
    }
    draw(&mut net.f, HEAD_INIT_STD / std::f64::consts::SQRT_2);
}

/// A domain discriminator with its optimiser and dropout stream.
#[derive(Clone, Debug)]
pub struct Discriminator<T: Real = f32> {
    net: Network<T>,
    opt: Optimizer<T>,
    /// The SGD schedule (`paper` training), `None` for AdamW at a constant rate.
    schedule: Option<BaselineConfig>,
    rng: ChaCha8Rng,
}

/// L_D, its gradient wrt the input rows and D's parameter gradients (see [`Discriminator::loss`]).
pub struct DomainLoss<T: Real> {
    pub value: f64,
    pub grad_input: Array2<T>,
    /// ∂L_D/∂ω of every row's weight (source rows first).
    pub grad_weights: Vec<f64>,
    grads: crate::nn::Grads<T>,
}

impl<T: Real> Discriminator<T> {
    /// A discriminator on `input_dim` columns: `cfg.discriminator_hidden` ReLU layers with
    /// dropout `cfg.discriminator_dropout`, then a 2-logit head; AdamW as `optimizer`.
    pub fn new(
        input_dim: usize,
        cfg: &AdversarialConfig,
        optimizer: &AdamConfig,
        seed: u64,
    ) -> Result<Self> {
        let arch = NetworkConfig {
            hidden: cfg.discriminator_hidden.clone(),
            activation: Activation::Relu,
            dropout: cfg.discriminator_dropout,
            batch_norm: false,
            activation_on_z: true,
        };
        let mut net = Network::new_generic(input_dim, 2, &arch, seed)?;
        reference_init(&mut net, seed);
        let opt = Optimizer::Adam(Adam::new(optimizer, &net));
        Ok(Discriminator {
            net,
            opt,
            schedule: None,
            rng: ChaCha8Rng::seed_from_u64(stream_seed(seed, Stream::DiscriminatorDropout)),
        })
    }

    /// The network D (read-only).
    pub fn network(&self) -> &Network<T> {
        &self.net
    }

    /// The same discriminator stepping with SGD at `cfg`'s annealed learning rate (the papers'
    /// training, `baselines.schedule = "paper"`).
    pub fn with_sgd(mut self, cfg: &BaselineConfig) -> Self {
        self.opt = Optimizer::Sgd(Sgd::new(
            &self.net,
            cfg.lr,
            cfg.momentum,
            cfg.nesterov,
            cfg.weight_decay,
        ));
        self.schedule = Some(cfg.clone());
        self
    }

    /// L_D = (1/n_s) Σᵢ ωᵢ ℓ(D(hᵢ), source) + (1/n_t) Σⱼ ωⱼ ℓ(D(hⱼ), target) on the rows
    /// `h = [source rows; target rows]` (the first `weights_s.len()` rows are the source), ℓ the
    /// logistic loss, ω the row weights (1 for DANN; w_y, γ_y or 1 + e^{−H} for the variants).
    /// Dropout draws from the discriminator's own stream; nothing is updated.
    pub fn loss(&mut self, h: ArrayView2<T>, weights_s: &[T], weights_t: &[T]) -> DomainLoss<T> {
        let (ns, nt) = (weights_s.len(), weights_t.len());
        assert_eq!(h.nrows(), ns + nt, "Discriminator::loss: rows vs weights");
        let pass = self.net.forward(h, &Forward::training(h.nrows()), &mut self.rng);
        let labels: Vec<usize> = (0..ns + nt).map(|i| usize::from(i >= ns)).collect();
        // Per-row coefficients ω/n of the two domain means; `weighted_cross_entropy` divides by
        // their sum, which is multiplied back so that L_D is the plain sum of the two means.
        let (inv_s, inv_t) = (T::from_f64_(1.0 / ns as f64), T::from_f64_(1.0 / nt as f64));
        let coef: Vec<T> = weights_s
            .iter()
            .map(|&w| w * inv_s)
            .chain(weights_t.iter().map(|&w| w * inv_t))
            .collect();
        let total: f64 = coef.iter().map(|c| c.to_f64_()).sum();
        let (mean, mut d_logits) = weighted_cross_entropy(pass.logits.view(), &labels, &coef);
        d_logits.mapv_inplace(|v| v * T::from_f64_(total));
        let (grads, grad_input) = self.net.backward_with_input(h, &pass, d_logits.view());
        // ∂L_D/∂ωᵢ = ℓᵢ/n_domain, with ℓᵢ = log(e^{l₀} + e^{l₁}) − l_{label} computed stably.
        let grad_weights = pass
            .logits
            .rows()
            .into_iter()
            .zip(&labels)
            .enumerate()
            .map(|(i, (l, &lab))| {
                let (a, b) = (l[0].to_f64_(), l[1].to_f64_());
                let m = a.max(b);
                let lse = m + ((a - m).exp() + (b - m).exp()).ln();
                (lse - l[lab].to_f64_()) / if i < ns { ns as f64 } else { nt as f64 }
            })
            .collect();
        DomainLoss { value: mean * total, grad_input, grad_weights, grads }
    }

    /// One step of D down the gradient of a loss from [`Discriminator::loss`], at adaptation
    /// progress `progress` ∈ [0, 1] (which sets the SGD learning rate).
    pub fn update(&mut self, loss: &DomainLoss<T>, progress: f64) {
        if let Some(s) = &self.schedule {
            self.opt.set_lr(s.annealed_lr(progress));
        }
        self.opt.step(&mut self.net, &loss.grads);
    }
}
