//! The network's parameters and their gradients as flat tensors in one fixed order, which is
//! what the optimiser ([`crate::nn::Adam`]) and gradient clipping work on.

use super::super::linear::LinearGrad;
use super::super::mlp::BlockGrad;
use super::Network;
use crate::Real;

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

/// Parameter gradients, laid out like the parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Grads<T = f32> {
    /// One entry per G block.
    pub g: Vec<BlockGrad<T>>,
    /// Gradients of F.
    pub f: LinearGrad<T>,
}

impl<T: Real> Network<T> {
    /// Parameter tensors in a fixed order (per G block: W, b, [γ, β]; then F's W, b), each as a
    /// flat row-major slice with its role. [`Grads::tensors`] uses the same order.
    pub fn params(&self) -> Vec<(ParamKind, &[T])> {
        let mut out = Vec::new();
        for b in &self.g.blocks {
            out.push((ParamKind::Weight, b.linear.w.as_slice().expect("standard layout")));
            out.push((ParamKind::Bias, b.linear.b.as_slice().expect("standard layout")));
            if let Some(bn) = &b.bn {
                out.push((ParamKind::BnScale, bn.gamma.as_slice().expect("standard layout")));
                out.push((ParamKind::BnShift, bn.beta.as_slice().expect("standard layout")));
            }
        }
        out.push((ParamKind::Weight, self.f.w.as_slice().expect("standard layout")));
        out.push((ParamKind::Bias, self.f.b.as_slice().expect("standard layout")));
        out
    }

    /// Mutable version of [`Network::params`], same order.
    pub fn params_mut(&mut self) -> Vec<(ParamKind, &mut [T])> {
        let mut out = Vec::new();
        for b in &mut self.g.blocks {
            out.push((ParamKind::Weight, b.linear.w.as_slice_mut().expect("standard layout")));
            out.push((ParamKind::Bias, b.linear.b.as_slice_mut().expect("standard layout")));
            if let Some(bn) = &mut b.bn {
                out.push((ParamKind::BnScale, bn.gamma.as_slice_mut().expect("standard layout")));
                out.push((ParamKind::BnShift, bn.beta.as_slice_mut().expect("standard layout")));
            }
        }
        out.push((ParamKind::Weight, self.f.w.as_slice_mut().expect("standard layout")));
        out.push((ParamKind::Bias, self.f.b.as_slice_mut().expect("standard layout")));
        out
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
        self.tensors().iter().all(|t| t.iter().all(|v| v.is_finite()))
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
