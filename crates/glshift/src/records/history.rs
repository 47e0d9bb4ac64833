//! Reading the iteration log (`history`) of `report.json` back into
//! [`IterRecord`](crate::methods::IterRecord)s.
//!
//! TODO(merge): the training loop's record types derive only `Serialize`; these mirrors (serde's
//! remote derive, checked field by field against the real types at compile time) give them a
//! `Deserialize`. Once `methods::train` derives `Deserialize` on `Stage`, `IterRecord` and
//! `TransferRecord`, drop this file and the `deserialize_with` on `FitReport::history`.

use serde::{Deserialize, Deserializer};

use crate::methods::train::{IterRecord, Stage, TransferRecord};

#[derive(Deserialize)]
#[serde(remote = "Stage", rename_all = "kebab-case")]
enum StageDef {
    Pretrain,
    Adapt,
}

#[derive(Deserialize)]
#[serde(remote = "TransferRecord")]
struct TransferRecordDef {
    value: f64,
    lambda: f64,
}

#[derive(Deserialize)]
#[serde(remote = "IterRecord")]
struct IterRecordDef {
    #[serde(with = "StageDef")]
    stage: Stage,
    iter: usize,
    ce: f64,
    j_tu: f64,
    j_du: f64,
    total: f64,
    lambda_du: f64,
    n_confident: usize,
    du_pooled: bool,
    temperature: f64,
    #[serde(default)]
    target_prior: Option<Vec<f64>>,
    #[serde(default, deserialize_with = "transfer")]
    transfer: Option<TransferRecord>,
}

#[derive(Deserialize)]
struct Transfer(#[serde(with = "TransferRecordDef")] TransferRecord);

fn transfer<'de, D: Deserializer<'de>>(d: D) -> Result<Option<TransferRecord>, D::Error> {
    Ok(Option::<Transfer>::deserialize(d)?.map(|t| t.0))
}

#[derive(Deserialize)]
struct Row(#[serde(with = "IterRecordDef")] IterRecord);

/// `deserialize_with` of `FitReport::history`.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<IterRecord>, D::Error> {
    Ok(Vec::<Row>::deserialize(d)?.into_iter().map(|r| r.0).collect())
}
