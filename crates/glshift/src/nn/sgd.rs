//! Stochastic gradient descent with momentum (PyTorch's `torch.optim.SGD`), the optimiser of the
//! adversarial and MMD baselines' papers, and [`Optimizer`], the choice between it and AdamW.
//!
//! Step with gradient g of parameter θ, learning rate η (set per step by the schedule), momentum
//! μ, weight decay λ (coupled, an L2 term added to the gradient; Linear weights only, as the
//! AdamW here):
//!
//! g ← g + λθ,  b ← μb + g (b = g at the first step),  d = g + μb (Nesterov) or b,  θ ← θ − η·d.

use super::adam::Adam;
use super::network::{Grads, Network, ParamKind};
use crate::Real;

/// SGD state for one [`Network`]: a momentum buffer per parameter tensor.
#[derive(Clone, Debug)]
pub struct Sgd<T = f32> {
    pub lr: f64,
    momentum: f64,
    nesterov: bool,
    weight_decay: f64,
    started: bool,
    buf: Vec<Vec<T>>,
}

impl<T: Real> Sgd<T> {
    /// Zero momentum buffers shaped like `net`'s parameters.
    pub fn new(
        net: &Network<T>,
        lr: f64,
        momentum: f64,
        nesterov: bool,
        weight_decay: f64,
    ) -> Self {
        let buf = net.params().iter().map(|(_, p)| vec![T::zero(); p.len()]).collect();
        Sgd { lr, momentum, nesterov, weight_decay, started: false, buf }
    }

    /// One SGD update of `net` with `grads` at the current `lr`.
    ///
    /// # Panics
    /// If `grads` or `net` are not laid out like the network the optimiser was built for.
    pub fn step(&mut self, net: &mut Network<T>, grads: &Grads<T>) {
        let (mu, lr, wd) = (self.momentum, self.lr, self.weight_decay);
        let first = !self.started;
        self.started = true;
        let params = net.params_mut();
        let gs = grads.tensors();
        assert!(
            params.len() == self.buf.len() && gs.len() == self.buf.len(),
            "Sgd::step: layout changed"
        );
        for (((kind, p), g), b) in params.into_iter().zip(gs).zip(self.buf.iter_mut()) {
            assert!(p.len() == g.len() && p.len() == b.len(), "Sgd::step: tensor size mismatch");
            let decay = if kind == ParamKind::Weight { wd } else { 0.0 };
            // One loop per (first step, Nesterov) pair: the branches leave the inner loop, which
            // then vectorises; the arithmetic, and so every bit of the result, is unchanged.
            let h = Hyper { lr, mu, decay };
            match (first, self.nesterov) {
                (true, true) => update::<T, true, true>(p, g, b, h),
                (true, false) => update::<T, true, false>(p, g, b, h),
                (false, true) => update::<T, false, true>(p, g, b, h),
                (false, false) => update::<T, false, false>(p, g, b, h),
            }
        }
    }
}

/// The scalars of one SGD step of one tensor.
#[derive(Clone, Copy)]
struct Hyper {
    lr: f64,
    mu: f64,
    decay: f64,
}

/// θ, b ← the step of the module docs on one tensor, in f64 per element.
#[inline]
fn update<T: Real, const FIRST: bool, const NESTEROV: bool>(
    p: &mut [T],
    g: &[T],
    b: &mut [T],
    h: Hyper,
) {
    let Hyper { lr, mu, decay } = h;
    for ((p, &g), b) in p.iter_mut().zip(g).zip(b.iter_mut()) {
        let theta = p.to_f64_();
        let g = g.to_f64_() + decay * theta;
        let bn = if FIRST { g } else { mu * b.to_f64_() + g };
        *b = T::from_f64_(bn);
        let d = if NESTEROV { g + mu * bn } else { bn };
        *p = T::from_f64_(theta - lr * d);
    }
}

/// The optimiser of a network: AdamW (the loop's default, MUL's) or SGD (the baselines' papers).
#[derive(Clone, Debug)]
pub enum Optimizer<T = f32> {
    Adam(Adam<T>),
    Sgd(Sgd<T>),
}

impl<T: Real> Optimizer<T> {
    pub fn step(&mut self, net: &mut Network<T>, grads: &Grads<T>) {
        match self {
            Optimizer::Adam(a) => a.step(net, grads),
            Optimizer::Sgd(s) => s.step(net, grads),
        }
    }

    /// Sets the learning rate of the following steps (schedules).
    pub fn set_lr(&mut self, lr: f64) {
        match self {
            Optimizer::Adam(a) => a.set_lr(lr),
            Optimizer::Sgd(s) => s.lr = lr,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::{weighted_cross_entropy, Forward, NetworkConfig};
    use ndarray::Array2;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn tiny() -> (Network<f64>, Array2<f64>, Vec<usize>) {
        let cfg = NetworkConfig { hidden: vec![4], batch_norm: false, ..Default::default() };
        let net = Network::<f64>::new_generic(3, 2, &cfg, 1).unwrap();
        let x = Array2::from_shape_fn((6, 3), |(i, j)| ((i * 3 + j) as f64 * 0.37).sin());
        (net, x, vec![0, 1, 0, 1, 1, 0])
    }

    fn grads(net: &Network<f64>, x: &Array2<f64>, y: &[usize]) -> Grads<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let pass = net.forward(x.view(), &Forward::training(x.nrows()), &mut rng);
        let (_, d) = weighted_cross_entropy(pass.logits.view(), y, &vec![1.0; y.len()]);
        net.backward(x.view(), &pass, d.view(), None)
    }

    #[test]
    fn plain_sgd_is_theta_minus_lr_times_gradient_and_momentum_accumulates() {
        let (mut net, x, y) = tiny();
        let before: Vec<Vec<f64>> = net.params().iter().map(|(_, p)| p.to_vec()).collect();
        let g = grads(&net, &x, &y);
        let mut sgd = Sgd::new(&net, 0.1, 0.9, false, 0.0);
        sgd.step(&mut net, &g);
        for ((_, p), (b, gt)) in net.params().iter().zip(before.iter().zip(g.tensors())) {
            for ((&p, &b), &gv) in p.iter().zip(b).zip(gt) {
                assert!((p - (b - 0.1 * gv)).abs() < 1e-14);
            }
        }
        // Second step with the same gradient: buffer μg + g, so the step is 1.9·lr·g.
        let mid: Vec<Vec<f64>> = net.params().iter().map(|(_, p)| p.to_vec()).collect();
        sgd.step(&mut net, &g);
        for ((_, p), (b, gt)) in net.params().iter().zip(mid.iter().zip(g.tensors())) {
            for ((&p, &b), &gv) in p.iter().zip(b).zip(gt) {
                assert!((p - (b - 0.19 * gv)).abs() < 1e-13);
            }
        }
    }

    #[test]
    fn sgd_steps_decrease_the_loss_and_decay_only_weights() {
        let (mut net, x, y) = tiny();
        let loss = |net: &Network<f64>| {
            let mut rng = ChaCha8Rng::seed_from_u64(0);
            let pass = net.forward(x.view(), &Forward::training(6), &mut rng);
            weighted_cross_entropy(pass.logits.view(), &y, &[1.0; 6]).0
        };
        let l0 = loss(&net);
        let mut opt = Optimizer::Sgd(Sgd::new(&net, 0.05, 0.9, true, 1e-3));
        for _ in 0..30 {
            let g = grads(&net, &x, &y);
            opt.step(&mut net, &g);
        }
        assert!(loss(&net) < l0, "{} !< {l0}", loss(&net));
        // Zero gradient: weights shrink by lr·λ, biases stay.
        let (mut net, _, _) = tiny();
        let mut zero = grads(&net, &x, &y);
        zero.tensors_mut().into_iter().for_each(|t| t.iter_mut().for_each(|v| *v = 0.0));
        let before: Vec<(ParamKind, Vec<f64>)> =
            net.params().iter().map(|(k, p)| (*k, p.to_vec())).collect();
        Sgd::new(&net, 0.5, 0.0, false, 0.1).step(&mut net, &zero);
        for ((_, p), (k, b)) in net.params().iter().zip(&before) {
            let want = if *k == ParamKind::Weight { 0.95 } else { 1.0 };
            p.iter().zip(b).for_each(|(&p, &b)| assert!((p - want * b).abs() < 1e-14));
        }
    }
}
