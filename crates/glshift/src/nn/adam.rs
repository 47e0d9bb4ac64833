//! Adam (Kingma & Ba 2015) with decoupled weight decay (AdamW, Loshchilov & Hutter 2019).

use serde::{Deserialize, Serialize};

use super::adam_update::update;
pub(crate) use super::adam_update::Step;
use super::network::{Grads, Network, ParamKind};
use crate::{Error, Real, Result};

/// Optimiser hyper-parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdamConfig {
    /// Learning rate η > 0. Default 1e-3.
    pub lr: f64,
    /// First-moment decay β₁ ∈ [0, 1). Default 0.9.
    pub beta1: f64,
    /// Second-moment decay β₂ ∈ [0, 1). Default 0.999.
    pub beta2: f64,
    /// ε > 0 added to √v̂. Default 1e-8.
    pub eps: f64,
    /// Decoupled weight decay λ ≥ 0, applied to Linear weights only (not to biases, γ, β).
    /// Default 1e-2 (PyTorch's AdamW default).
    pub weight_decay: f64,
}

impl Default for AdamConfig {
    fn default() -> Self {
        AdamConfig { lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 1e-2 }
    }
}

impl AdamConfig {
    /// Checks the ranges documented on the fields (all values finite).
    pub fn validate(&self) -> Result<()> {
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return Err(Error::param("optimizer.lr", self.lr, "must be finite and > 0"));
        }
        if !(0.0..1.0).contains(&self.beta1) {
            return Err(Error::param("optimizer.beta1", self.beta1, "must be in [0, 1)"));
        }
        if !(0.0..1.0).contains(&self.beta2) {
            return Err(Error::param("optimizer.beta2", self.beta2, "must be in [0, 1)"));
        }
        if !(self.eps.is_finite() && self.eps > 0.0) {
            return Err(Error::param("optimizer.eps", self.eps, "must be finite and > 0"));
        }
        if !(self.weight_decay.is_finite() && self.weight_decay >= 0.0) {
            return Err(Error::param(
                "optimizer.weight_decay",
                self.weight_decay,
                "must be finite and >= 0",
            ));
        }
        Ok(())
    }
}

/// AdamW state for one [`Network`]: first and second moments per parameter, step count.
///
/// Step t (from 1), for each parameter θ with gradient g:
/// m ← β₁m + (1−β₁)g,  v ← β₂v + (1−β₂)g²,  m̂ = m/(1−β₁ᵗ),  v̂ = v/(1−β₂ᵗ),
/// θ ← θ − η·λ·θ [weights only] − η·m̂/(√v̂ + ε)
/// (PyTorch's `AdamW`; the decay uses θ before the step, so its order does not matter).
#[derive(Clone, Debug)]
pub struct Adam<T = f32> {
    cfg: AdamConfig,
    t: u64,
    m: Vec<Vec<T>>,
    v: Vec<Vec<T>>,
}

impl<T: Real> Adam<T> {
    /// Zero moments shaped like `net`'s parameters. `cfg` should have passed
    /// [`AdamConfig::validate`] (checked in debug builds).
    pub fn new(cfg: &AdamConfig, net: &Network<T>) -> Self {
        debug_assert!(cfg.validate().is_ok(), "invalid AdamConfig {cfg:?}");
        let shapes: Vec<usize> = net.params().iter().map(|(_, p)| p.len()).collect();
        Adam {
            cfg: cfg.clone(),
            t: 0,
            m: shapes.iter().map(|&n| vec![T::zero(); n]).collect(),
            v: shapes.iter().map(|&n| vec![T::zero(); n]).collect(),
        }
    }

    /// One AdamW update of `net` with `grads` (from `net.backward`).
    ///
    /// # Panics
    /// If `grads` or `net` are not laid out like the network the optimiser was built for.
    pub fn step(&mut self, net: &mut Network<T>, grads: &Grads<T>) {
        self.advance();
        let params = net.params_mut();
        let gs = grads.tensors();
        assert_eq!(params.len(), self.m.len(), "Adam::step: network layout changed");
        assert_eq!(gs.len(), self.m.len(), "Adam::step: gradient layout does not match");
        for (((kind, p), g), (m, v)) in
            params.into_iter().zip(gs).zip(self.m.iter_mut().zip(self.v.iter_mut()))
        {
            update(p, g, m, v, Self::constants(&self.cfg, self.t, kind));
        }
    }

    /// Counts one more step (the `t` of the update's bias corrections); [`Adam::step`] and the
    /// GPU's step (`device`) call it first.
    pub(crate) fn advance(&mut self) {
        self.t += 1;
    }

    /// The update's constants at the current step for a tensor of `kind`: what the CPU loop and
    /// the GPU kernel read, so that both take them from here.
    pub(crate) fn step_constants(&self, kind: ParamKind) -> Step {
        Self::constants(&self.cfg, self.t, kind)
    }

    fn constants(c: &AdamConfig, t: u64, kind: ParamKind) -> Step {
        let t = i32::try_from(t).unwrap_or(i32::MAX);
        let decay = kind == ParamKind::Weight && c.weight_decay > 0.0;
        let keep = if decay { 1.0 - c.lr * c.weight_decay } else { 1.0 };
        Step {
            beta1: c.beta1,
            beta2: c.beta2,
            lr: c.lr,
            eps: c.eps,
            bias1: 1.0 - c.beta1.powi(t),
            bias2: 1.0 - c.beta2.powi(t),
            keep,
        }
    }

    /// The first and second moments, one vector per parameter tensor in [`Network::params`]'s
    /// order (read and replaced by the GPU's training, which keeps its own copy meanwhile).
    pub(crate) fn moments_mut(&mut self) -> (&mut [Vec<T>], &mut [Vec<T>]) {
        (&mut self.m, &mut self.v)
    }

    /// [`Adam::moments_mut`], read only.
    pub(crate) fn moments(&self) -> (&[Vec<T>], &[Vec<T>]) {
        (&self.m, &self.v)
    }

    /// Changes the learning rate for the following steps (schedules).
    pub fn set_lr(&mut self, lr: f64) {
        self.cfg.lr = lr;
    }

    /// Current learning rate.
    pub fn lr(&self) -> f64 {
        self.cfg.lr
    }

    /// Number of steps taken.
    pub fn steps(&self) -> u64 {
        self.t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::{weighted_cross_entropy, Forward, NetworkConfig};
    use ndarray::Array2;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use rand_distr::{Distribution, StandardNormal};

    fn small_net(batch_norm: bool) -> Network<f64> {
        let cfg = NetworkConfig { hidden: vec![3], batch_norm, ..Default::default() };
        Network::<f64>::new_generic(2, 2, &cfg, 0).unwrap()
    }

    /// Gradients of ½‖θ − c‖² with c = 0.25 for every entry: g = θ − 0.25.
    fn quadratic_grads(net: &Network<f64>, pass_net: &Network<f64>) -> Grads<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let x = Array2::<f64>::zeros((2, 2));
        let pass = pass_net.forward(x.view(), &Forward::training(2), &mut rng);
        let mut grads = pass_net.backward(x.view(), &pass, Array2::zeros((2, 2)).view(), None);
        for (g, (_, p)) in grads.tensors_mut().into_iter().zip(net.params()) {
            for (g, &p) in g.iter_mut().zip(p) {
                *g = p - 0.25;
            }
        }
        grads
    }

    #[test]
    fn adam_steps_on_a_quadratic_match_the_hand_computed_update() {
        let cfg = AdamConfig { lr: 0.1, beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.0 };
        let mut net = small_net(true);
        // Distinct, non-zero starting values.
        for (_, p) in net.params_mut() {
            for (i, v) in p.iter_mut().enumerate() {
                *v = 1.0 + 0.5 * i as f64;
            }
        }
        let theta0: Vec<Vec<f64>> = net.params().iter().map(|(_, p)| p.to_vec()).collect();
        let mut adam = Adam::new(&cfg, &net);

        // Step 1: m̂ = g, v̂ = g² ⇒ θ₁ = θ₀ − η·g/(|g| + ε) ≈ θ₀ − 0.1 (g > 0 here).
        let g1 = quadratic_grads(&net, &net.clone());
        adam.step(&mut net, &g1);
        for ((_, p), p0) in net.params().iter().zip(&theta0) {
            for (&p, &p0) in p.iter().zip(p0) {
                let g = p0 - 0.25;
                assert!((p - (p0 - 0.1 * g / (g.abs() + 1e-8))).abs() < 1e-12);
                assert!((p - (p0 - 0.1)).abs() < 1e-7);
            }
        }

        // Step 2: m = 0.9·0.1·g₁ + 0.1·g₂, v = 0.999·0.001·g₁² + 0.001·g₂²,
        // m̂ = m/(1 − 0.81), v̂ = v/(1 − 0.998001).
        let theta1: Vec<Vec<f64>> = net.params().iter().map(|(_, p)| p.to_vec()).collect();
        let g2 = quadratic_grads(&net, &net.clone());
        adam.step(&mut net, &g2);
        for (((_, p), p0), p1) in net.params().iter().zip(&theta0).zip(&theta1) {
            for ((&p, &p0), &p1) in p.iter().zip(p0).zip(p1) {
                let (ga, gb) = (p0 - 0.25, p1 - 0.25);
                let m = (0.9 * 0.1 * ga + 0.1 * gb) / 0.19;
                let v = (0.999 * 0.001 * ga * ga + 0.001 * gb * gb) / 0.001999;
                let expected = p1 - 0.1 * m / (v.sqrt() + 1e-8);
                assert!((p - expected).abs() < 1e-12, "{p} vs {expected}");
            }
        }
        assert_eq!(adam.steps(), 2);
    }

    #[test]
    fn adam_weight_decay_applies_to_weights_only() {
        let cfg = AdamConfig { lr: 0.1, weight_decay: 0.1, ..Default::default() };
        let mut net = small_net(true);
        for (_, p) in net.params_mut() {
            p.iter_mut().for_each(|v| *v = 2.0);
        }
        let mut adam = Adam::new(&cfg, &net);
        let mut grads = quadratic_grads(&net, &net.clone());
        grads.scale(0.0); // zero gradients: only the decay can move parameters
        adam.step(&mut net, &grads);
        let mut seen = [false; 4];
        for (kind, p) in net.params() {
            let expected = if kind == ParamKind::Weight { 2.0 * (1.0 - 0.1 * 0.1) } else { 2.0 };
            seen[kind as usize] = true;
            for &v in p {
                assert!((v - expected).abs() < 1e-12, "{kind:?}: {v} vs {expected}");
            }
        }
        assert_eq!(seen, [true; 4]);
    }

    #[test]
    fn adam_set_lr_changes_the_step_size() {
        let mut net = small_net(false);
        let mut adam = Adam::new(&AdamConfig { weight_decay: 0.0, ..Default::default() }, &net);
        adam.set_lr(0.5);
        assert_eq!(adam.lr(), 0.5);
        let before: Vec<f64> = net.params()[1].1.to_vec(); // bias of block 0
        let grads = quadratic_grads(&net, &net.clone());
        adam.step(&mut net, &grads);
        for (&a, &b) in net.params()[1].1.iter().zip(&before) {
            assert!(((b - a) - 0.5 * (b - 0.25).signum()).abs() < 1e-6);
        }
    }

    #[test]
    fn adam_config_validation_rejects_bad_values() {
        assert!(AdamConfig::default().validate().is_ok());
        for bad in [
            AdamConfig { lr: 0.0, ..Default::default() },
            AdamConfig { lr: -1e-3, ..Default::default() },
            AdamConfig { lr: f64::NAN, ..Default::default() },
            AdamConfig { beta1: 1.0, ..Default::default() },
            AdamConfig { beta2: -0.1, ..Default::default() },
            AdamConfig { eps: 0.0, ..Default::default() },
            AdamConfig { weight_decay: -1.0, ..Default::default() },
        ] {
            assert!(bad.validate().is_err(), "{bad:?} accepted");
        }
        let parsed: AdamConfig = toml::from_str("lr = 0.01").unwrap();
        assert_eq!(parsed, AdamConfig { lr: 0.01, ..Default::default() });
        assert!(toml::from_str::<AdamConfig>("learning_rate = 0.01").is_err());
    }

    #[test]
    fn adam_trains_a_separable_problem_to_full_accuracy() {
        // Three Gaussian blobs in 5 dimensions, well separated.
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let (n_per, d, c) = (30, 5, 3);
        let mut x = Array2::<f32>::zeros((n_per * c, d));
        let mut labels = Vec::new();
        for k in 0..c {
            for i in 0..n_per {
                let row = k * n_per + i;
                for j in 0..d {
                    let centre = if j == k { 4.0 } else { 0.0 };
                    let e: f32 = StandardNormal.sample(&mut rng);
                    x[[row, j]] = centre + e;
                }
                labels.push(k);
            }
        }
        let weights = vec![1.0f32; labels.len()];
        let cfg = NetworkConfig { hidden: vec![16, 8], batch_norm: true, ..Default::default() };
        let mut net = Network::new(d, c, &cfg, 5).unwrap();
        let mut adam = Adam::new(&AdamConfig { lr: 1e-2, ..Default::default() }, &net);
        let fw = Forward::training(x.nrows());
        let mut losses = Vec::new();
        for _ in 0..150 {
            let pass = net.forward(x.view(), &fw, &mut rng);
            let (loss, dl) = weighted_cross_entropy(pass.logits.view(), &labels, &weights);
            losses.push(loss);
            let grads = net.backward(x.view(), &pass, dl.view(), None);
            assert!(grads.is_finite());
            adam.step(&mut net, &grads);
        }
        assert!(losses[149] < 0.2 * losses[0], "loss {} → {}", losses[0], losses[149]);
        let p = net.predict_proba(x.view(), None);
        let correct = p
            .rows()
            .into_iter()
            .zip(&labels)
            .filter(|(row, &y)| row.iter().enumerate().all(|(k, &v)| k == y || v < row[y]))
            .count();
        assert_eq!(correct, labels.len(), "train accuracy {correct}/{}", labels.len());
    }
}
