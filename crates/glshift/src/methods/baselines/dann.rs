//! The marginal adversarial baselines: DANN and its class-weighted variants IW-DANN and PADA.
//! All three train a domain discriminator on Z through a gradient reversal layer
//! ([`super::Discriminator`]) and differ only in the weights of the source terms.

use crate::seeds::{stream_seed, Stream};
use ndarray::{concatenate, s, Array2, ArrayView2, Axis};

use super::{grl_coefficient, reverse_gradient, row_weights, source_class_weights};
use super::{AdaptInputs, AdaptOutput, Discriminator, GRADIENT_NAME};
use crate::methods::method::{BuildContext, Method, StepOutput};
use crate::methods::method_info::ClassWeights;
use crate::{Real, Result};

/// PADA's class weights (Cao, Ma, Long & Wang, "Partial Adversarial Domain Adaptation", ECCV
/// 2018, eq. 3): γ = (1/n_t) Σⱼ ŷⱼ, the average target prediction, normalised by its maximum.
pub fn pada_class_weights<T: Real>(target_probs: ArrayView2<T>) -> Vec<f64> {
    let n = target_probs.nrows().max(1) as f64;
    let gamma: Vec<f64> = target_probs
        .columns()
        .into_iter()
        .map(|c| c.iter().map(|v| v.to_f64_()).sum::<f64>() / n)
        .collect();
    let max = gamma.iter().copied().fold(0.0f64, f64::max);
    if max > 0.0 {
        gamma.iter().map(|g| g / max).collect()
    } else {
        vec![1.0; gamma.len()]
    }
}

/// - `dann` — Ganin, Ustinova, Ajakan, Germain, Larochelle, Laviolette, Marchand & Lempitsky,
///   "Domain-Adversarial Training of Neural Networks", JMLR 17 (2016): min over G, F of
///   CE − λ_p·L_D while D minimises L_D = (1/n_s)Σ ℓ(D(zᵢ), 0) + (1/n_t)Σ ℓ(D(zⱼ), 1).
///   Defaults from the paper: D = 1024 → 1024 → 1 with ReLU and dropout 0.5 (its Office
///   set-up; the same in CDAN's released `AdversarialNetwork`), λ_p = 2/(1 + exp(−10p)) − 1,
///   mini-batch SGD with momentum 0.9 at lr₀·(1 + 10p)^−0.75 for G, F and D (`BaselineConfig`
///   names the source of each setting). D's initialisation is the reference code's
///   (N(0, 0.01) hidden weights, N(0, 0.3) logit, zero biases: `adversary::reference_init`);
///   the 2-logit softmax head stands for the 1-logit sigmoid head.
/// - `iw-dann` — Combes, Zhao, Wang & Gordon, "Domain Adaptation with Conditional Distribution
///   Matching and Generalized Label Shift", NeurIPS 2020 (IWDAN): the source terms of L_D and
///   the source CE weighted by w_{yᵢ}, w from BBSE-QP (hold-out confusion, calibrated,
///   floored, as MUL's) recomputed once per pass over the source by mini-batch, every
///   iteration full-batch. The authors' script differs (w from 1, statistics accumulated over
///   training batches, a QP every 15 passes on Office averaged with the last w at 0.5, a
///   balanced source CE): docs/baselines.md lists these departures.
/// - `pada` — Cao et al. 2018 (see [`pada_class_weights`]): source terms of L_D and source CE
///   weighted by γ_{yᵢ}, γ recomputed from all target rows every `[baselines.pada] update_interval` = 500
///   iterations by mini-batch (the `update_iter` of PADA's released script; from iteration 0,
///   where that script starts from uniform weights), every iteration full-batch.
#[derive(Clone, Debug)]
pub struct Dann<T: Real = f32> {
    /// The registry row's name and class weights (none: DANN; BBSE-QP's w: IW-DANN; γ: PADA).
    name: &'static str,
    class_weights: ClassWeights,
    disc: Discriminator<T>,
    trade_off: f64,
    gamma: f64,
    pada_interval: usize,
}

impl<T: Real> Dann<T> {
    /// DANN, IW-DANN or PADA, as the row's class weights say; a discriminator on Z (`b.z_dim`).
    pub fn new(b: &BuildContext) -> Result<Self> {
        let mut disc = Discriminator::new(
            b.z_dim,
            &b.baselines.adversarial,
            b.optimizer,
            stream_seed(b.seed, Stream::DannDiscriminator),
        )?;
        if b.minibatch() {
            disc = disc.with_sgd(b.baselines);
        }
        let s = b.baselines;
        Ok(Dann {
            name: b.name,
            class_weights: b.info.class_weights,
            disc,
            trade_off: s.trade_off,
            gamma: s.adversarial.grl_gamma,
            pada_interval: s.pada.update_interval,
        })
    }

    pub fn compute(&mut self, inp: &AdaptInputs<T>) -> Result<AdaptOutput<T>> {
        let lambda = grl_coefficient(inp.progress, self.trade_off, self.gamma);
        let class_weights = source_class_weights(self.class_weights, self.name, inp)?;
        let ws: Vec<T> = row_weights(class_weights.as_deref(), inp.ys);
        let wt = vec![T::one(); inp.zt.nrows()];
        let h = concatenate![Axis(0), inp.zs, inp.zt];
        let loss = self.disc.loss(h.view(), &ws, &wt);
        self.disc.update(&loss, inp.progress);
        let g: Array2<T> = reverse_gradient(&loss.grad_input, lambda);
        let ns = inp.zs.nrows();
        Ok(AdaptOutput {
            value: loss.value,
            objective: -lambda * loss.value,
            lambda,
            grad_zs: g.slice(s![..ns, ..]).to_owned(),
            grad_zt: g.slice(s![ns.., ..]).to_owned(),
            grad_logits_s: None,
            grad_logits_t: None,
            class_weights,
        })
    }
}

impl Method for Dann<f32> {
    fn step(&mut self, inp: &AdaptInputs) -> Result<StepOutput> {
        self.compute(inp).map(StepOutput::from)
    }

    /// The importance-weighted variant reads BBSE-QP's w (calibrated, as MUL's).
    fn needs_shift_estimate(&self) -> bool {
        self.class_weights == ClassWeights::Importance
    }

    fn calibrates(&self) -> bool {
        self.class_weights == ClassWeights::Importance
    }

    /// IW-DANN: once per pass over the source (the module docs compare the authors' schedule);
    /// PADA: every `[baselines.pada] update_interval` iterations (PADA's code).
    fn full_view_interval(&self, batches_per_pass: usize) -> Option<usize> {
        match self.class_weights {
            ClassWeights::Importance => Some(batches_per_pass),
            ClassWeights::Pada => Some(self.pada_interval),
            ClassWeights::None | ClassWeights::KernelMeanMatching => None,
        }
    }

    fn gradient_name(&self) -> &'static str {
        GRADIENT_NAME
    }
}
