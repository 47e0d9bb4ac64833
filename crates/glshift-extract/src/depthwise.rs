//! Depthwise k×k convolution with TensorFlow-"SAME" zero padding on `(N, C, H, W)` f32 data:
//! `y[n,c,oy,ox] = b[c] + Σ_{ky,kx} w[c,ky,kx] · x[n,c,oy·s+ky−p, ox·s+kx−p]`.
//!
//! candle runs a grouped convolution as one convolution per group, which costs more than the
//! rest of the network for EfficientNet's 1 248-channel layers; this direct loop is parallel
//! over the N·C planes (rayon) and sums each output in a fixed order, so its result does not
//! depend on the thread count.

use rayon::prelude::*;

/// Geometry of one depthwise convolution.
#[derive(Debug, Clone, Copy)]
pub struct Depthwise {
    pub channels: usize,
    pub kernel: usize,
    pub stride: usize,
    /// Zero padding before (top/left); the padding after only shapes the output size.
    pub pad_before: usize,
}

impl Depthwise {
    /// Output side for an input side `n` and total padding `pad_total`.
    pub fn out_size(&self, n: usize, pad_total: usize) -> usize {
        (n + pad_total - self.kernel) / self.stride + 1
    }

    /// `x`: `(N, C, h, w)` flattened; `weight`: `(C, k, k)`; `bias`: `(C)`.
    /// Returns `(N, C, oh, ow)` flattened.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        x: &[f32],
        h: usize,
        w: usize,
        oh: usize,
        ow: usize,
        weight: &[f32],
        bias: &[f32],
    ) -> Vec<f32> {
        let planes = x.len() / (h * w);
        let mut out = vec![0f32; planes * oh * ow];
        out.par_chunks_mut(oh * ow).enumerate().for_each(|(p, o)| {
            let c = p % self.channels;
            let k = self.kernel;
            let plane = &x[p * h * w..(p + 1) * h * w];
            self.plane(plane, h, w, ow, &weight[c * k * k..(c + 1) * k * k], bias[c], o);
        });
        out
    }

    /// One channel plane: fills `o` (`oh × ow`).
    #[allow(clippy::too_many_arguments)] // the plane's geometry, passed flat in the hot loop
    fn plane(&self, x: &[f32], h: usize, w: usize, ow: usize, wk: &[f32], b: f32, o: &mut [f32]) {
        let (k, s, p) = (self.kernel, self.stride, self.pad_before as isize);
        // Valid output column range per kernel column: 0 <= ox*s + kx - p < w.
        let cols: Vec<(usize, usize)> = (0..k)
            .map(|kx| {
                let off = kx as isize - p;
                let lo = if off >= 0 { 0 } else { ((-off) as usize).div_ceil(s) };
                let hi = if (w as isize - off) <= 0 {
                    0
                } else {
                    ((w as isize - off - 1) as usize / s + 1).min(ow)
                };
                (lo, hi.max(lo))
            })
            .collect();
        for (oy, row) in o.chunks_mut(ow).enumerate() {
            row.fill(b);
            for ky in 0..k {
                let iy = (oy * s + ky) as isize - p;
                if iy < 0 || iy >= h as isize {
                    continue;
                }
                let src = &x[iy as usize * w..(iy as usize + 1) * w];
                for (kx, &(lo, hi)) in cols.iter().enumerate() {
                    let wv = wk[ky * k + kx];
                    let off = kx as isize - p;
                    if s == 1 {
                        let start = (lo as isize + off) as usize;
                        for (r, &v) in row[lo..hi].iter_mut().zip(&src[start..start + hi - lo]) {
                            *r += wv * v;
                        }
                    } else {
                        for (ox, r) in row.iter_mut().enumerate().take(hi).skip(lo) {
                            *r += wv * src[((ox * s) as isize + off) as usize];
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Naive reference with explicit padding.
    #[allow(clippy::too_many_arguments)]
    fn naive(
        x: &[f32],
        h: usize,
        w: usize,
        k: usize,
        s: usize,
        pb: usize,
        oh: usize,
        ow: usize,
        wk: &[f32],
    ) -> Vec<f32> {
        let mut o = vec![0f32; oh * ow];
        for oy in 0..oh {
            for ox in 0..ow {
                for ky in 0..k {
                    for kx in 0..k {
                        let (iy, ix) = (
                            (oy * s + ky) as isize - pb as isize,
                            (ox * s + kx) as isize - pb as isize,
                        );
                        if iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < w {
                            o[oy * ow + ox] += wk[ky * k + kx] * x[iy as usize * w + ix as usize];
                        }
                    }
                }
            }
        }
        o
    }

    #[test]
    fn matches_a_naive_convolution_for_each_stride_and_padding() {
        for &(n, k, s) in &[(9usize, 3usize, 1usize), (10, 3, 2), (9, 5, 2), (8, 5, 1)] {
            let x: Vec<f32> = (0..n * n).map(|i| ((i * 37 % 11) as f32) - 5.0).collect();
            let wk: Vec<f32> = (0..k * k).map(|i| (i as f32) * 0.1 - 0.7).collect();
            let out = n.div_ceil(s);
            let total = ((out - 1) * s + k).saturating_sub(n);
            let d = Depthwise { channels: 1, kernel: k, stride: s, pad_before: total / 2 };
            assert_eq!(d.out_size(n, total), out);
            let got = d.run(&x, n, n, out, out, &wk, &[0.0]);
            let want = naive(&x, n, n, k, s, total / 2, out, out, &wk);
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-4, "n={n} k={k} s={s}: {g} vs {w}");
            }
        }
    }
}
