//! The network's layers as the device trains them: parameter indices, widths, the kernel's
//! activation code and dropout.

use super::Layer;
use crate::nn::{Activation, Network};

/// The kernel's code for an activation (`kernels.cu`, `act_forward`).
pub(crate) fn act_kind(a: Activation) -> i32 {
    match a {
        Activation::Relu => 0,
        Activation::LeakyRelu => 1,
        Activation::Elu => 2,
        Activation::Tanh => 3,
        Activation::Identity => 4,
    }
}

pub(super) fn layers_of(net: &Network) -> Vec<Layer> {
    let mut layers = Vec::new();
    let mut next = 0;
    for block in &net.g.blocks {
        let (w, b) = (next, next + 1);
        next += 2;
        let bn = block.bn.as_ref().map(|_| {
            next += 2;
            (next - 2, next - 1)
        });
        let (in_dim, out_dim) = (block.linear.in_dim(), block.linear.out_dim());
        layers.push(Layer {
            w,
            b,
            bn,
            in_dim,
            out_dim,
            act: act_kind(block.activation),
            dropout: block.dropout,
        });
    }
    let (in_dim, out_dim) = (net.f.in_dim(), net.f.out_dim());
    layers.push(Layer {
        w: next,
        b: next + 1,
        bn: None,
        in_dim,
        out_dim,
        act: act_kind(Activation::Identity),
        dropout: 0.0,
    });
    layers
}
