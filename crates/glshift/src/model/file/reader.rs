//! Typed reads of a `model.glshift` file's tensors.

use std::collections::BTreeMap;
use std::path::Path;

use ndarray::{Array1, Array2};
use safetensors::tensor::{Dtype, TensorView};

use super::super::fitted::{ModelInfo, SourceHoldout};
use super::super::target_match::TargetSample;
use crate::data::{Preprocess, PreprocessStats};
use crate::nn::{BnStats, Network};
use crate::{Error, Result};

/// Typed access to a parsed file's tensors, each checked for dtype and exact shape.
pub(super) struct TensorReader<'a> {
    pub(super) path: &'a Path,
    pub(super) tensors: BTreeMap<String, TensorView<'a>>,
}

impl TensorReader<'_> {
    pub(super) fn view(
        &self,
        name: &str,
        dtype: Dtype,
        shape: &[usize],
    ) -> Result<&TensorView<'_>> {
        let t = self
            .tensors
            .get(name)
            .ok_or_else(|| Error::bad_file(self.path, format!("tensor `{name}` is missing")))?;
        if t.dtype() != dtype || t.shape() != shape {
            return Err(Error::bad_file(
                self.path,
                format!("tensor `{name}` is {:?} {:?}; the header's configuration needs {dtype:?} {shape:?}", t.dtype(), t.shape()),
            ));
        }
        Ok(t)
    }

    pub(super) fn f32s(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let t = self.view(name, Dtype::F32, shape)?;
        Ok(t.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
    }

    pub(super) fn vector(&self, name: &str, len: usize) -> Result<Array1<f32>> {
        Ok(Array1::from(self.f32s(name, &[len])?))
    }

    pub(super) fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Array2<f32>> {
        let v = self.f32s(name, &[rows, cols])?;
        Array2::from_shape_vec((rows, cols), v)
            .map_err(|e| Error::bad_file(self.path, format!("tensor `{name}`: {e}")))
    }

    /// G + F and the frozen statistics. Every tensor's shape is checked against the header's
    /// architecture (input dimension, widths, classes) before the network is allocated, so a
    /// header claiming huge sizes fails on the tensors the file does not hold.
    pub(super) fn network(&self, info: &ModelInfo) -> Result<(Network, Vec<Option<BnStats<f32>>>)> {
        let net_cfg = &info.config.network;
        let c = info.class_names.len();
        let mut widths = vec![info.input_dim];
        widths.extend(&net_cfg.hidden);
        for (l, pair) in widths.windows(2).enumerate() {
            self.view(&format!("g.{l}.weight"), Dtype::F32, pair)?;
        }
        let z_dim = *widths.last().expect("input dimension is in the list");
        self.view("f.weight", Dtype::F32, &[z_dim, c])?;
        let mut net = Network::new(info.input_dim, c, net_cfg, 0)
            .map_err(|e| Error::bad_file(self.path, format!("header architecture: {e}")))?;
        let mut stats = Vec::with_capacity(net.g.blocks.len());
        for (l, block) in net.g.blocks.iter_mut().enumerate() {
            let (fan_in, width) = (widths[l], widths[l + 1]);
            block.linear.w = self.matrix(&format!("g.{l}.weight"), fan_in, width)?;
            block.linear.b = self.vector(&format!("g.{l}.bias"), width)?;
            stats.push(match &mut block.bn {
                Some(bn) => {
                    bn.gamma = self.vector(&format!("g.{l}.bn.gamma"), width)?;
                    bn.beta = self.vector(&format!("g.{l}.bn.beta"), width)?;
                    let mean = self.vector(&format!("g.{l}.bn.mean"), width)?;
                    Some(BnStats { mean, rstd: self.vector(&format!("g.{l}.bn.rstd"), width)? })
                }
                None => None,
            });
        }
        net.f.w = self.matrix("f.weight", z_dim, c)?;
        net.f.b = self.vector("f.bias", c)?;
        Ok((net, stats))
    }

    /// The hold-out tensors of a version-2 file: both or neither (a fit without a hold-out),
    /// shaped `[n_h, c]` and `[n_h]` with `n_h` the header's `n_source_holdout`, labels in `0..c`.
    pub(super) fn holdout(&self, n_h: usize, c: usize) -> Result<Option<SourceHoldout>> {
        match (
            self.tensors.contains_key("holdout.probs"),
            self.tensors.contains_key("holdout.labels"),
        ) {
            (false, false) => return Ok(None),
            (true, true) => {}
            _ => {
                return Err(Error::bad_file(
                    self.path,
                    "one of the tensors `holdout.probs` and `holdout.labels` is missing",
                ))
            }
        }
        let probs = self.matrix("holdout.probs", n_h, c)?;
        let t = self.view("holdout.labels", Dtype::I64, &[n_h])?;
        let labels = t
            .data()
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().expect("8-byte chunk")))
            .map(|y| usize::try_from(y).ok().filter(|&y| y < c))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| {
                Error::bad_file(
                    self.path,
                    format!("tensor `holdout.labels` holds a label outside 0..{c}"),
                )
            })?;
        Ok(Some(SourceHoldout { probs, labels }))
    }

    /// The target sample of a version-3 file: both tensors or neither, shaped `[m, d]` and
    /// `[m, c]` with `m` the header's `n_target_sample` (values checked with the model).
    pub(super) fn target_sample(&self, info: &ModelInfo) -> Result<Option<TargetSample>> {
        let m = info.n_target_sample;
        match (self.tensors.contains_key("target.features"), self.tensors.contains_key("target.probs"), m) {
            (false, false, 0) => Ok(None),
            (true, true, m) if m > 0 => Ok(Some(TargetSample::new(
                self.matrix("target.features", m, info.input_dim)?,
                self.matrix("target.probs", m, info.class_names.len())?,
            ))),
            _ => Err(Error::bad_file(self.path, "the tensors `target.features` and `target.probs` and the header's `n_target_sample` do not agree (one is missing)")),
        }
    }

    pub(super) fn preprocess(&self, how: Preprocess, dim: usize) -> Result<PreprocessStats> {
        let f64s = |name: &str| -> Result<Vec<f64>> {
            let t = self.view(name, Dtype::F64, &[dim])?;
            Ok(t.data()
                .chunks_exact(8)
                .map(|b| f64::from_le_bytes(b.try_into().expect("8-byte chunk")))
                .collect())
        };
        let (mean, scale) = match how {
            Preprocess::ZScore | Preprocess::L1ZScore => {
                (f64s("preprocess.mean")?, f64s("preprocess.scale")?)
            }
            Preprocess::None | Preprocess::L2 => (Vec::new(), Vec::new()),
        };
        if scale.iter().any(|&s| !(s.is_finite() && s > 0.0)) {
            return Err(Error::bad_file(
                self.path,
                "preprocess.scale holds a value that is not finite and > 0",
            ));
        }
        Ok(PreprocessStats { how, dim, mean, scale })
    }
}
