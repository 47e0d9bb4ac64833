//! Reads a PyTorch `state_dict` saved by `torch.save` in the legacy (non-zip) serialization:
//! maps each parameter name to its float32 values in C order with its shape.
//!
//! Layout of the file: four pickles (magic number, protocol version, system info, the
//! `state_dict` whose tensors point at storages by key), then the list of storage keys, then
//! each storage in that order as `u64 element count` + raw little-endian elements. Tensors may
//! have any strides (the EfficientNet-Lite weights were converted from TensorFlow and are stored
//! channels-last); they are gathered into C order here.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::pickle::{self, Value};
use crate::{Error, Result};

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
    parse_state_dict(&bytes).map_err(|reason| Error::WeightsFormat { path: path.to_path_buf(), reason })
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
    let mut out = StateDict::new();
    for (name, r) in refs {
        if r.dtype != "FloatStorage" {
            continue;
        }
        let storage = storages.get(&r.key).ok_or_else(|| format!("{name}: storage {} missing", r.key))?;
        let data = gather(storage, &r).map_err(|e| format!("{name}: {e}"))?;
        out.insert(name, RawTensor { shape: r.shape, data });
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
    if !matches!(f.as_ref(), Value::Global(m, n) if m == "torch._utils" && n == "_rebuild_tensor_v2") {
        return Err(format!("not a tensor (built by {f:?})"));
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
    let dtype_of: HashMap<&str, &str> = refs.iter().map(|(_, r)| (r.key.as_str(), r.dtype.as_str())).collect();
    let mut out = HashMap::new();
    for k in keys {
        let Value::Str(key) = k else { return Err("a storage key is not a string".into()) };
        let dtype = dtype_of.get(key.as_str()).ok_or_else(|| format!("storage {key} is used by no tensor"))?;
        let size = elem_size(dtype)?;
        if rest.len() < 8 {
            return Err(format!("file truncated before storage {key}"));
        }
        let count = u64::from_le_bytes(rest[..8].try_into().expect("8 bytes"));
        let len = (count as usize).checked_mul(size).filter(|&l| l <= rest.len() - 8);
        let len = len.ok_or_else(|| format!("file truncated inside storage {key} ({count} elements)"))?;
        out.insert(key.clone(), &rest[8..8 + len]);
        rest = &rest[8 + len..];
    }
    Ok(out)
}

/// Gathers a strided float32 view of `storage` into a C-order vector.
fn gather(storage: &[u8], r: &TensorRef) -> std::result::Result<Vec<f32>, String> {
    let n: usize = r.shape.iter().product();
    let elems = storage.len() / 4;
    if n > 0 {
        let last: usize = r.offset + r.shape.iter().zip(&r.stride).map(|(d, s)| (d - 1) * s).sum::<usize>();
        if last >= elems {
            return Err(format!("view reaches element {last} of a storage of {elems}"));
        }
    }
    let read = |i: usize| f32::from_le_bytes(storage[4 * i..4 * i + 4].try_into().expect("4 bytes"));
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
    Ok(out)
}
