//! The EfficientNet-Lite2 architecture as data: the 21 MBConv blocks (channels, kernel, stride,
//! expansion), TensorFlow-"SAME" padding per convolution, and the (C, H, W) output shape of
//! every layer for a 260×260 input.
//!
//! Lite2 = EfficientNet-B0's seven stages scaled by width 1.1 and depth 1.2 (divisor 8), with
//! the stem (32) and head (1280) channels and the first and last stage's repeats left unscaled,
//! ReLU6 activations and no squeeze-excitation (PyPI `efficientnet-lite-pytorch` 0.1.0).

/// Input resolution (square) the network and its static padding are built for.
pub const IMAGE_SIZE: usize = 260;
/// Stem output channels (fixed, not width-scaled in Lite models).
pub const STEM_CHANNELS: usize = 32;
/// Head conv channels = feature dimension (fixed in Lite models).
pub const FEATURE_DIM: usize = 1280;
/// Batch-norm epsilon of the TensorFlow original.
pub const BN_EPS: f64 = 1e-3;
const WIDTH: f64 = 1.1;
const DEPTH: f64 = 1.2;

/// One MBConv block: expand 1×1 (when `expand > 1`) → depthwise k×k stride s → project 1×1,
/// with a residual connection when `stride == 1 && c_in == c_out`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockSpec {
    pub c_in: usize,
    pub c_out: usize,
    pub expand: usize,
    pub kernel: usize,
    pub stride: usize,
    /// Spatial size (square) of the block's input, which fixes its static padding.
    pub in_size: usize,
}

impl BlockSpec {
    /// Channels after the expansion conv (`c_in * expand`).
    pub fn c_mid(&self) -> usize {
        self.c_in * self.expand
    }
    /// Spatial size of the block's output: `ceil(in_size / stride)`.
    pub fn out_size(&self) -> usize {
        self.in_size.div_ceil(self.stride)
    }
    /// Whether the block adds its input to its output.
    pub fn residual(&self) -> bool {
        self.stride == 1 && self.c_in == self.c_out
    }
}

/// TensorFlow "SAME" padding (before, after) of a k×k, stride-s conv on an `size`-wide input:
/// the output is `ceil(size / s)` wide and the odd pixel of padding goes after.
pub fn same_padding(size: usize, kernel: usize, stride: usize) -> (usize, usize) {
    let out = size.div_ceil(stride);
    let total = ((out - 1) * stride + kernel).saturating_sub(size);
    (total / 2, total - total / 2)
}

/// Width scaling of the reference implementation: round `c * 1.1` to a multiple of 8, never
/// more than 10 % below.
fn round_filters(c: usize) -> usize {
    let f = c as f64 * WIDTH;
    let mut n = (((f + 4.0) as usize) / 8 * 8).max(8);
    if (n as f64) < 0.9 * f {
        n += 8;
    }
    n
}

/// The 21 blocks of EfficientNet-Lite2 in order, for a [`IMAGE_SIZE`] input.
pub fn blocks() -> Vec<BlockSpec> {
    // EfficientNet-B0 stages: (repeats, kernel, stride, expand, c_in, c_out).
    const STAGES: [(usize, usize, usize, usize, usize, usize); 7] = [
        (1, 3, 1, 1, 32, 16),
        (2, 3, 2, 6, 16, 24),
        (2, 5, 2, 6, 24, 40),
        (3, 3, 2, 6, 40, 80),
        (3, 5, 1, 6, 80, 112),
        (4, 5, 2, 6, 112, 192),
        (1, 3, 1, 6, 192, 320),
    ];
    let mut out = Vec::new();
    let mut size = IMAGE_SIZE.div_ceil(2); // after the stride-2 stem
    for (i, &(r, k, s, e, ci, co)) in STAGES.iter().enumerate() {
        let fixed = i == 0 || i == STAGES.len() - 1;
        let repeats = if fixed { r } else { (DEPTH * r as f64).ceil() as usize };
        let c_in = if i == 0 { STEM_CHANNELS } else { round_filters(ci) };
        let c_out = round_filters(co);
        for j in 0..repeats {
            let (c_in, stride) = if j == 0 { (c_in, s) } else { (c_out, 1) };
            let b = BlockSpec { c_in, c_out, expand: e, kernel: k, stride, in_size: size };
            size = b.out_size();
            out.push(b);
        }
    }
    out
}

/// Channels entering the head conv (the last block's output).
pub fn head_in_channels() -> usize {
    blocks().last().map_or(0, |b| b.c_out)
}

/// The expected output shape `(name, [C, H, W])` of every layer for one [`IMAGE_SIZE`] image:
/// `stem`, then per block `blocks.i.expand` (if any), `blocks.i.depthwise`, `blocks.i.project`,
/// then `head`; the pooled feature is `[FEATURE_DIM, 1, 1]`.
pub fn layer_shapes() -> Vec<(String, [usize; 3])> {
    let s0 = IMAGE_SIZE.div_ceil(2);
    let mut out = vec![("stem".to_string(), [STEM_CHANNELS, s0, s0])];
    let mut last = s0;
    for (i, b) in blocks().iter().enumerate() {
        if b.expand != 1 {
            out.push((format!("blocks.{i}.expand"), [b.c_mid(), b.in_size, b.in_size]));
        }
        out.push((format!("blocks.{i}.depthwise"), [b.c_mid(), b.out_size(), b.out_size()]));
        out.push((format!("blocks.{i}.project"), [b.c_out, b.out_size(), b.out_size()]));
        last = b.out_size();
    }
    out.push(("head".to_string(), [FEATURE_DIM, last, last]));
    out.push(("pool".to_string(), [FEATURE_DIM, 1, 1]));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lite2_has_21_blocks_with_the_published_widths() {
        let b = blocks();
        assert_eq!(b.len(), 21);
        let outs: Vec<usize> = b.iter().map(|b| b.c_out).collect();
        let want = [
            16, 24, 24, 24, 48, 48, 48, 88, 88, 88, 88, 120, 120, 120, 120, 208, 208, 208, 208,
            208, 352,
        ];
        assert_eq!(outs, want);
        assert_eq!(b[20].c_mid(), 1248);
        assert_eq!(b[20].out_size(), 9);
        assert_eq!(head_in_channels(), 352);
    }

    #[test]
    fn same_padding_puts_the_odd_pixel_after() {
        assert_eq!(same_padding(260, 3, 2), (0, 1));
        assert_eq!(same_padding(65, 5, 2), (2, 2));
        assert_eq!(same_padding(130, 5, 1), (2, 2));
        assert_eq!(same_padding(17, 1, 1), (0, 0));
    }
}
