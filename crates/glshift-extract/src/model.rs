//! EfficientNet-Lite2 inference on CPU with candle: maps a batch of preprocessed images
//! `(N, 3, 260, 260)` to their 1280-d features `(N, 1280)` (global average pool of the
//! ReLU6(BN(head conv)) output, the input of the ImageNet classifier).
//!
//! Batch norms are folded into the preceding convolutions at load time (eval mode: running
//! statistics, ε = 1e-3). Every parameter is checked against [`crate::arch`] when loading, so a
//! weights file of another architecture is an error naming the first mismatch.

use std::path::Path;

use candle_core::{DType, Device, Tensor};

use crate::arch::{self, BlockSpec, BN_EPS, FEATURE_DIM, IMAGE_SIZE, STEM_CHANNELS};
use crate::depthwise::Depthwise;
use crate::pth::StateDict;
use crate::{Error, Result};

/// A convolution with its batch norm folded in: `y = conv(pad(x), w) + b`.
struct ConvBn {
    /// `(C_out, C_in / groups, k, k)`.
    weight: Tensor,
    /// `(1, C_out, 1, 1)`.
    bias: Tensor,
    stride: usize,
    groups: usize,
    /// TensorFlow-"SAME" padding (before, after), the same on both spatial axes.
    pad: (usize, usize),
    /// A 1×1, stride-1, unpadded convolution (run as a matrix product).
    pointwise: bool,
}

impl ConvBn {
    /// Loads `<conv>.weight` and `<bn>.{weight,bias,running_mean,running_var}` and folds them.
    fn load(
        w: &Weights,
        conv: &str,
        bn: &str,
        shape: [usize; 4],
        stride: usize,
        in_size: usize,
    ) -> Result<ConvBn> {
        let kernel = w.get(&format!("{conv}.weight"), &shape)?;
        let c = shape[0];
        let gamma = w.get(&format!("{bn}.weight"), &[c])?;
        let beta = w.get(&format!("{bn}.bias"), &[c])?;
        let mean = w.get(&format!("{bn}.running_mean"), &[c])?;
        let var = w.get(&format!("{bn}.running_var"), &[c])?;
        let per_out = shape[1] * shape[2] * shape[3];
        let mut folded = Vec::with_capacity(kernel.len());
        let mut bias = Vec::with_capacity(c);
        for o in 0..c {
            let scale = gamma[o] as f64 / (var[o] as f64 + BN_EPS).sqrt();
            folded.extend(
                kernel[o * per_out..(o + 1) * per_out].iter().map(|&k| (k as f64 * scale) as f32),
            );
            bias.push((beta[o] as f64 - mean[o] as f64 * scale) as f32);
        }
        let groups = if shape[1] == 1 && c > 1 { c } else { 1 };
        Ok(ConvBn {
            weight: Tensor::from_vec(folded, &shape, &Device::Cpu)?,
            bias: Tensor::from_vec(bias, (1, c, 1, 1), &Device::Cpu)?,
            stride,
            groups,
            pad: arch::same_padding(in_size, shape[2], stride),
            pointwise: shape[2] == 1 && shape[3] == 1 && stride == 1,
        })
    }

    /// `(N, C_in, H, W)` → `(N, C_out, ceil(H/s), ceil(W/s))`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if self.groups > 1 {
            return self.forward_depthwise(x);
        }
        if self.pointwise {
            return self.forward_pointwise(x);
        }
        let (b, a) = self.pad;
        let x =
            if b + a > 0 { x.pad_with_zeros(2, b, a)?.pad_with_zeros(3, b, a)? } else { x.clone() };
        let y = x.conv2d(&self.weight, 0, self.stride, 1, self.groups)?;
        Ok(y.broadcast_add(&self.bias)?)
    }
}

impl ConvBn {
    /// The 1×1 case of [`Self::forward`] as one matrix product per image:
    /// `(C_out, C_in) · (C_in, H·W)`, without im2col copies.
    fn forward_pointwise(&self, x: &Tensor) -> Result<Tensor> {
        let (n, c, h, w) = x.dims4()?;
        let (co, ci) = (self.weight.dim(0)?, self.weight.dim(1)?);
        let w2 = self.weight.reshape((co, ci))?;
        let y = w2.broadcast_matmul(&x.reshape((n, c, h * w))?)?;
        Ok(y.reshape((n, co, h, w))?.broadcast_add(&self.bias)?)
    }

    /// The depthwise case of [`Self::forward`], with the direct loop of [`crate::depthwise`].
    fn forward_depthwise(&self, x: &Tensor) -> Result<Tensor> {
        let (n, c, h, w) = x.dims4()?;
        let k = self.weight.dim(2)?;
        let d = Depthwise { channels: c, kernel: k, stride: self.stride, pad_before: self.pad.0 };
        let (oh, ow) =
            (d.out_size(h, self.pad.0 + self.pad.1), d.out_size(w, self.pad.0 + self.pad.1));
        let data = x.flatten_all()?.to_vec1::<f32>()?;
        let wk = self.weight.flatten_all()?.to_vec1::<f32>()?;
        let bias = self.bias.flatten_all()?.to_vec1::<f32>()?;
        let y = d.run(&data, h, w, oh, ow, &wk, &bias);
        Ok(Tensor::from_vec(y, (n, c, oh, ow), &Device::Cpu)?)
    }
}

fn relu6(x: &Tensor) -> Result<Tensor> {
    Ok(x.clamp(0f32, 6f32)?)
}

/// One MBConv block with loaded weights.
struct Block {
    spec: BlockSpec,
    expand: Option<ConvBn>,
    depthwise: ConvBn,
    project: ConvBn,
}

/// EfficientNet-Lite2 feature extractor (no classifier).
pub struct EffNetLite2 {
    stem: ConvBn,
    blocks: Vec<Block>,
    head: ConvBn,
}

/// The state_dict with the file it came from, for error messages.
struct Weights<'a> {
    dict: &'a StateDict,
    path: &'a Path,
}

impl Weights<'_> {
    /// The values of parameter `name`, which must have exactly `shape`.
    fn get(&self, name: &str, shape: &[usize]) -> Result<&[f32]> {
        let wrong =
            |reason: String| Error::WrongArchitecture { path: self.path.to_path_buf(), reason };
        let t = self.dict.get(name).ok_or_else(|| wrong(format!("parameter {name} is missing")))?;
        if t.shape != shape {
            return Err(wrong(format!(
                "parameter {name} has shape {:?}, expected {shape:?}",
                t.shape
            )));
        }
        Ok(&t.data)
    }
}

impl EffNetLite2 {
    /// Builds the network from a `state_dict` read from `path` (the path only names errors).
    pub fn from_state_dict(dict: &StateDict, path: &Path) -> Result<EffNetLite2> {
        let w = Weights { dict, path };
        let specs = arch::blocks();
        let extra = format!("_blocks.{}.", specs.len());
        if let Some(k) = dict.keys().find(|k| k.starts_with(&extra)) {
            let reason = format!("unexpected parameter {k}: more than {} blocks", specs.len());
            return Err(Error::WrongArchitecture { path: path.to_path_buf(), reason });
        }
        let stem = ConvBn::load(&w, "_conv_stem", "_bn0", [STEM_CHANNELS, 3, 3, 3], 2, IMAGE_SIZE)?;
        let mut blocks = Vec::with_capacity(specs.len());
        for (i, s) in specs.into_iter().enumerate() {
            let p = format!("_blocks.{i}");
            let (mid, k) = (s.c_mid(), s.kernel);
            let expand = if s.expand != 1 {
                let shape = [mid, s.c_in, 1, 1];
                Some(ConvBn::load(
                    &w,
                    &format!("{p}._expand_conv"),
                    &format!("{p}._bn0"),
                    shape,
                    1,
                    s.in_size,
                )?)
            } else {
                None
            };
            let dw = [mid, 1, k, k];
            let depthwise = ConvBn::load(
                &w,
                &format!("{p}._depthwise_conv"),
                &format!("{p}._bn1"),
                dw,
                s.stride,
                s.in_size,
            )?;
            let pw = [s.c_out, mid, 1, 1];
            let project = ConvBn::load(
                &w,
                &format!("{p}._project_conv"),
                &format!("{p}._bn2"),
                pw,
                1,
                s.out_size(),
            )?;
            blocks.push(Block { spec: s, expand, depthwise, project });
        }
        let last = blocks.last().map_or(0, |b| b.spec.out_size());
        let head = ConvBn::load(
            &w,
            "_conv_head",
            "_bn1",
            [FEATURE_DIM, arch::head_in_channels(), 1, 1],
            1,
            last,
        )?;
        Ok(EffNetLite2 { stem, blocks, head })
    }

    /// Reads the weights file and builds the network.
    pub fn load(path: &Path) -> Result<EffNetLite2> {
        let dict = crate::pth::read_state_dict(path)?;
        Self::from_state_dict(&dict, path)
    }

    /// Features of a batch: `x` is `(N, 3, 260, 260)` f32, the result `(N, 1280)`.
    pub fn features(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_observed(x, &mut |_, _| {})
    }

    /// As [`Self::features`], calling `observe(layer, dims)` with every layer's output shape
    /// (the names of [`arch::layer_shapes`], dims including the batch axis).
    pub fn forward_observed(
        &self,
        x: &Tensor,
        observe: &mut dyn FnMut(&str, &[usize]),
    ) -> Result<Tensor> {
        let x = x.to_dtype(DType::F32)?;
        let mut x = relu6(&self.stem.forward(&x)?)?;
        observe("stem", x.dims());
        for (i, b) in self.blocks.iter().enumerate() {
            let input = x.clone();
            if let Some(e) = &b.expand {
                x = relu6(&e.forward(&x)?)?;
                observe(&format!("blocks.{i}.expand"), x.dims());
            }
            x = relu6(&b.depthwise.forward(&x)?)?;
            observe(&format!("blocks.{i}.depthwise"), x.dims());
            x = b.project.forward(&x)?;
            if b.spec.residual() {
                x = (x + input)?;
            }
            observe(&format!("blocks.{i}.project"), x.dims());
        }
        let x = relu6(&self.head.forward(&x)?)?;
        observe("head", x.dims());
        let pooled = x.mean_keepdim(3)?.mean_keepdim(2)?;
        observe("pool", pooled.dims());
        Ok(pooled.flatten_from(1)?)
    }
}
