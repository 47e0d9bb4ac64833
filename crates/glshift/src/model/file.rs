//! The model file (`model.glshift`): a [safetensors] file, so any safetensors reader (Python's
//! `safetensors`, candle, …) can open it, with glshift's header in its string metadata.
//!
//! Metadata: `__metadata__` holds one key, `glshift`, whose value is a JSON object ([`Header`];
//! one key, so the file's bytes do not depend on a map's iteration order):
//! - `format` = `"glshift-model"`, `format_version` = 3 (this reader accepts 1 to 3; version 1
//!   lacks the hold-out tensors below, so its models predict but cannot adapt to a batch, and
//!   versions 1 and 2 lack the target sample, so a batch cannot be tested against the target);
//! - `info`: [`ModelInfo`] as a JSON text (glshift version, configuration, class names, input
//!   dimension, priors, importance weights, iteration history);
//! - `preprocess`: the preprocessing kind (`none`, `z-score`, `l2`, `l1-z-score`);
//! - `checksum`: CRC-32 (IEEE) in hex over the `info` text's bytes followed by every tensor's
//!   name and little-endian bytes, tensors in name order, so a damaged byte anywhere is detected.
//!
//! Tensors (little-endian; f32 unless noted), for G's blocks `l = 0, 1, …` and F:
//! `g.{l}.weight` `[in, out]`, `g.{l}.bias` `[out]`, with BatchNorm also `g.{l}.bn.gamma`,
//! `g.{l}.bn.beta`, `g.{l}.bn.mean`, `g.{l}.bn.rstd` `[out]` (the frozen statistics: column mean
//! and (σ² + ε)^(−1/2) of the source training rows); `f.weight` `[z_dim, c]`, `f.bias` `[c]`;
//! with a z-score preprocessing `preprocess.mean`, `preprocess.scale` `[d]` (f64); from version 2,
//! for a fit with a source hold-out, `holdout.probs` `[n_h, c]` (the final model's probabilities
//! on the hold-out rows) and `holdout.labels` `[n_h]` (i64, each in `0..c`); from version 3,
//! `target.features` `[m, d]` and `target.probs` `[m, c]`, a seeded sample of the fitted
//! target's preprocessed feature rows and the model's probabilities of them (`m` = the header's
//! `n_target_sample`). A model file therefore holds up to 1 000 rows of its target's features.
//!
//! A truncated, damaged, foreign, wrong-version or inconsistent file is an error naming the
//! file and the problem; shapes are checked against the configuration before any allocation.
//!
//! [safetensors]: https://huggingface.co/docs/safetensors

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use serde::{Deserialize, Serialize};

use super::fitted::{FittedModel, ModelInfo};
use crate::data::Preprocess;
use crate::{Error, Result};

/// Value of the `format` metadata key.
pub const FORMAT_NAME: &str = "glshift-model";
/// The model file version this build writes (it reads it and every version down to 1).
pub const FORMAT_VERSION: u32 = 3;

/// The oldest version this build reads.
pub const OLDEST_READABLE_VERSION: u32 = 1;

/// The key of glshift's header in the safetensors metadata.
pub const META_KEY: &str = "glshift";

/// glshift's header (module docs).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Header {
    pub format: String,
    pub format_version: u32,
    pub preprocess: Preprocess,
    pub checksum: String,
    /// [`ModelInfo`] as JSON text, kept as text so the checksum covers its exact bytes.
    pub info: String,
}

/// One tensor to write: dtype, shape, little-endian bytes.
pub(super) type Entry = (Dtype, Vec<usize>, Vec<u8>);

impl FittedModel {
    /// Writes the model to `path` atomically (a temporary sibling, then a rename): the file is
    /// complete or absent.
    pub fn save(&self, path: &Path) -> Result<()> {
        crate::output::write_files_atomically(&[(path.to_path_buf(), self.to_bytes()?)])
    }

    /// Reads a model written by [`FittedModel::save`]. Errors name `path` and the problem.
    pub fn load(path: &Path) -> Result<FittedModel> {
        let bytes =
            std::fs::read(path).map_err(|e| Error::Io { path: path.to_path_buf(), source: e })?;
        Self::from_bytes(&bytes, path)
    }

    /// The file's bytes (the same model always gives the same bytes).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        self.to_bytes_as(FORMAT_VERSION)
    }

    /// The file's bytes under format `version` (version 1 leaves the hold-out out, versions 1
    /// and 2 the target sample); tests write earlier versions' files with it.
    pub(super) fn to_bytes_as(&self, version: u32) -> Result<Vec<u8>> {
        let mut tensors = self.tensor_entries();
        tensors.retain(|name, _| {
            (version >= 2 || !name.starts_with("holdout."))
                && (version >= 3 || !name.starts_with("target."))
        });
        if version < 3 && self.info.n_target_sample > 0 {
            let info = ModelInfo { n_target_sample: 0, ..self.info.clone() };
            return FittedModel { info, target: None, ..self.clone() }
                .to_bytes_from(version, tensors);
        }
        self.to_bytes_from(version, tensors)
    }

    /// The file of format `version` holding `tensors` (tests build damaged files with it).
    pub(super) fn to_bytes_from(
        &self,
        version: u32,
        tensors: BTreeMap<String, Entry>,
    ) -> Result<Vec<u8>> {
        let info = serde_json::to_string(&self.info).map_err(|e| json_err("info", e))?;
        let header = Header {
            format: FORMAT_NAME.to_string(),
            format_version: version,
            preprocess: self.preprocess.how,
            checksum: checksum(
                &info,
                tensors.iter().map(|(k, (_, _, b))| (k.as_str(), b.as_slice())),
            ),
            info,
        };
        let meta = HashMap::from([(
            META_KEY.to_string(),
            serde_json::to_string(&header).map_err(|e| json_err("header", e))?,
        )]);
        let views: Vec<(String, TensorView)> = tensors
            .iter()
            .map(|(name, (dt, shape, bytes))| {
                Ok((name.clone(), TensorView::new(*dt, shape.clone(), bytes).map_err(st_err)?))
            })
            .collect::<Result<_>>()?;
        safetensors::serialize(views, Some(meta)).map_err(st_err)
    }

    /// Parses a model file's bytes; `path` names the file in errors.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<FittedModel> {
        Self::parse(bytes, path, true)
    }

    /// [`FittedModel::from_bytes`] without the checksum comparison, so that a fuzzer, which
    /// cannot forge checksums, reaches the checks behind it. Not for reading models.
    #[doc(hidden)]
    pub fn from_bytes_unverified(bytes: &[u8], path: &Path) -> Result<FittedModel> {
        Self::parse(bytes, path, false)
    }

    fn parse(bytes: &[u8], path: &Path, verify_checksum: bool) -> Result<FittedModel> {
        let bad = |reason: String| Error::bad_file(path, reason);
        let file = SafeTensors::deserialize(bytes).map_err(|e| {
            bad(format!(
                "not a readable glshift model (truncated or damaged safetensors file: {e})"
            ))
        })?;
        let (_, meta) = SafeTensors::read_metadata(bytes).map_err(|e| bad(e.to_string()))?;
        let text = meta.metadata().as_ref().and_then(|m| m.get(META_KEY)).ok_or_else(|| {
            bad(format!(
                "no `{META_KEY}` entry in the safetensors metadata: not a glshift model file"
            ))
        })?;
        let header: Header =
            serde_json::from_str(text).map_err(|e| bad(format!("invalid glshift header: {e}")))?;
        if header.format != FORMAT_NAME {
            return Err(bad(format!("format is {:?}, not {FORMAT_NAME:?}", header.format)));
        }
        if !(OLDEST_READABLE_VERSION..=FORMAT_VERSION).contains(&header.format_version) {
            return Err(bad(format!(
                "model format version {}; this glshift ({}) reads versions {OLDEST_READABLE_VERSION} to {FORMAT_VERSION}",
                header.format_version,
                env!("CARGO_PKG_VERSION")
            )));
        }
        let mut names: Vec<String> = file.names().into_iter().map(String::from).collect();
        names.sort();
        let tensors: Vec<(String, TensorView)> = names
            .into_iter()
            .map(|n| file.tensor(&n).map(|t| (n, t)).map_err(st_err))
            .collect::<Result<_>>()?;
        if verify_checksum
            && header.checksum
                != checksum(&header.info, tensors.iter().map(|(n, t)| (n.as_str(), t.data())))
        {
            return Err(bad("checksum mismatch: the file is damaged".into()));
        }
        let info: ModelInfo = serde_json::from_str(&header.info)
            .map_err(|e| bad(format!("invalid header `info`: {e}")))?;
        info.config
            .validate()
            .map_err(|e| bad(format!("invalid configuration in the header: {e}")))?;
        let reader = TensorReader { path, tensors: tensors.into_iter().collect() };
        let (network, bn_stats) = reader.network(&info)?;
        let preprocess = reader.preprocess(header.preprocess, info.input_dim)?;
        let holdout = if header.format_version >= 2 {
            reader.holdout(info.n_source_holdout, info.class_names.len())?
        } else {
            None
        };
        let target = if header.format_version >= 3 { reader.target_sample(&info)? } else { None };
        let model = FittedModel { info, preprocess, network, bn_stats, holdout, target };
        model.check_consistent(&path.display().to_string())?;
        Ok(model)
    }

    /// Every tensor of the file by name (sorted), with its dtype, shape and bytes.
    pub(super) fn tensor_entries(&self) -> BTreeMap<String, Entry> {
        let mut out = BTreeMap::new();
        let f32_entry = |shape: Vec<usize>, v: &[f32]| {
            (Dtype::F32, shape, v.iter().flat_map(|x| x.to_le_bytes()).collect())
        };
        for (l, (block, st)) in self.network.g.blocks.iter().zip(&self.bn_stats).enumerate() {
            let w = &block.linear.w;
            out.insert(
                format!("g.{l}.weight"),
                f32_entry(w.shape().to_vec(), &w.iter().copied().collect::<Vec<_>>()),
            );
            out.insert(format!("g.{l}.bias"), f32_entry(vec![w.ncols()], &block.linear.b.to_vec()));
            if let (Some(bn), Some(st)) = (&block.bn, st) {
                for (part, v) in [
                    ("gamma", &bn.gamma),
                    ("beta", &bn.beta),
                    ("mean", &st.mean),
                    ("rstd", &st.rstd),
                ] {
                    out.insert(format!("g.{l}.bn.{part}"), f32_entry(vec![v.len()], &v.to_vec()));
                }
            }
        }
        let fw = &self.network.f.w;
        out.insert(
            "f.weight".into(),
            f32_entry(fw.shape().to_vec(), &fw.iter().copied().collect::<Vec<_>>()),
        );
        out.insert("f.bias".into(), f32_entry(vec![fw.ncols()], &self.network.f.b.to_vec()));
        if let Some(h) = &self.holdout {
            out.insert(
                "holdout.probs".into(),
                f32_entry(h.probs.shape().to_vec(), &h.probs.iter().copied().collect::<Vec<_>>()),
            );
            let labels = h.labels.iter().flat_map(|&y| (y as i64).to_le_bytes()).collect();
            out.insert("holdout.labels".into(), (Dtype::I64, vec![h.labels.len()], labels));
        }
        if let Some(t) = &self.target {
            out.insert(
                "target.features".into(),
                f32_entry(t.x().shape().to_vec(), &t.x().iter().copied().collect::<Vec<_>>()),
            );
            out.insert(
                "target.probs".into(),
                f32_entry(
                    t.probs().shape().to_vec(),
                    &t.probs().iter().copied().collect::<Vec<_>>(),
                ),
            );
        }
        let p = &self.preprocess;
        if !p.mean.is_empty() {
            for (part, v) in [("mean", &p.mean), ("scale", &p.scale)] {
                out.insert(
                    format!("preprocess.{part}"),
                    (Dtype::F64, vec![v.len()], v.iter().flat_map(|x| x.to_le_bytes()).collect()),
                );
            }
        }
        out
    }
}

fn json_err(what: &str, e: serde_json::Error) -> Error {
    Error::numerical(format!("model {what}"), format!("cannot encode as JSON: {e}"))
}

fn st_err(e: safetensors::SafeTensorError) -> Error {
    Error::numerical("model file (safetensors)", e.to_string())
}

/// CRC-32 over the header text and the tensors' bytes in the given (name) order, as hex.
pub(super) fn checksum<'a>(
    info: &str,
    tensors: impl Iterator<Item = (&'a str, &'a [u8])>,
) -> String {
    let mut h = crc32fast::Hasher::new();
    h.update(info.as_bytes());
    for (name, bytes) in tensors {
        h.update(name.as_bytes());
        h.update(bytes);
    }
    format!("{:08x}", h.finalize())
}

mod reader;
use reader::TensorReader;
