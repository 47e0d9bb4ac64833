//! A minimal Python pickle reader (protocol ≤ 2 opcodes): decodes one pickle from a byte slice
//! into a [`Value`] tree, for the restricted subset `torch.save` writes for a `state_dict`.
//!
//! Nothing is executed: `GLOBAL` yields a name, `REDUCE` a [`Value::Call`] record. The caller
//! interprets the few calls it knows (`OrderedDict`, `_rebuild_tensor_v2`). Unknown opcodes and
//! truncated input are errors, never panics.
//!
//! **Bounds** (a weights file is what users download from strangers):
//! - nesting: no value is deeper than [`MAX_DEPTH`] containers, so that building, comparing,
//!   printing and dropping a value (all recursive) cannot overflow the stack;
//! - memory: every value the machine creates or copies is charged its size (a `Value` per node
//!   plus its string bytes) against a budget of [`BUDGET_PER_BYTE`] × the input's length (from
//!   the pickle's first byte to the end of the slice given) + [`BUDGET_BASE`], at most
//!   [`BUDGET_MAX`]. Without it, `GET` (which copies a memo entry) doubles a value every few
//!   input bytes; with it, such a file stops at the budget with an error. Memo entries are
//!   copies, not shared, so a `GET` costs the entry's size: the budget, not sharing, is what
//!   bounds them. A `torch.save` `state_dict` pickle of tensor records (about 15 values per
//!   record, every object also memoised) needs about 31 bytes per byte (measured by the test
//!   `a_state_dict_pickle_uses_a_fraction_of_its_budget`), half the budget; the whole real
//!   weights file, whose slice includes its storages, uses a small fraction.

mod machine;

use machine::Machine;

/// A decoded pickle value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Tuple(Vec<Value>),
    List(Vec<Value>),
    /// Insertion-ordered key/value pairs (`dict` and `collections.OrderedDict`).
    Dict(Vec<(Value, Value)>),
    /// `module.name` from a `GLOBAL` opcode.
    Global(String, String),
    /// `callable(*args)` from `REDUCE`, not evaluated.
    Call(Box<Value>, Vec<Value>),
    /// A persistent id (`BINPERSID`): in torch files, a storage reference tuple.
    Persistent(Box<Value>),
}

/// Deepest nesting of containers (tuple, list, dict, call, persistent id) in a value; a torch
/// `state_dict` needs 5.
pub const MAX_DEPTH: usize = 64;
/// Bytes of values the machine may create or copy per byte of pickle input.
pub const BUDGET_PER_BYTE: usize = 64;
/// Bytes of values allowed on top of the per-byte budget (small pickles).
pub const BUDGET_BASE: usize = 1 << 20;
/// Ceiling of the budget whatever the pickle's length (a `state_dict` pickle of a model with
/// thousands of tensors is about a megabyte).
pub const BUDGET_MAX: usize = 256 << 20;

/// Decodes one pickle starting at `data[0]`; returns the value and the number of bytes consumed.
pub fn load(data: &[u8]) -> Result<(Value, usize), String> {
    let (v, n, _) = load_counting(data)?;
    Ok((v, n))
}

/// [`load`], also returning the bytes of the budget it used.
fn load_counting(data: &[u8]) -> Result<(Value, usize, usize), String> {
    let budget =
        data.len().saturating_mul(BUDGET_PER_BYTE).saturating_add(BUDGET_BASE).min(BUDGET_MAX);
    let mut m = Machine::new(data, budget);
    let v = m.run()?;
    Ok((v, m.pos, budget - m.budget))
}

/// Containers from `v` down to its deepest leaf (0 for a leaf). Recursion is bounded: every
/// value the machine holds is at most [`MAX_DEPTH`] deep.
fn depth(v: &Value) -> usize {
    match v {
        Value::Tuple(t) | Value::List(t) => 1 + t.iter().map(depth).max().unwrap_or(0),
        Value::Dict(d) => 1 + d.iter().map(|(k, v)| depth(k).max(depth(v))).max().unwrap_or(0),
        Value::Call(f, a) => 1 + a.iter().map(depth).max().unwrap_or(0).max(depth(f)),
        Value::Persistent(p) => 1 + depth(p),
        _ => 0,
    }
}

/// Bytes a copy of `v` allocates, about: one `Value` per node plus string bytes.
fn cost(v: &Value) -> usize {
    let own = std::mem::size_of::<Value>();
    match v {
        Value::Str(s) => own + s.len(),
        Value::Global(m, n) => own + m.len() + n.len(),
        Value::Tuple(t) | Value::List(t) => own + t.iter().map(cost).sum::<usize>(),
        Value::Dict(d) => own + d.iter().map(|(k, v)| cost(k) + cost(v)).sum::<usize>(),
        Value::Call(f, a) => own + cost(f) + a.iter().map(cost).sum::<usize>(),
        Value::Persistent(p) => own + cost(p),
        _ => own,
    }
}

/// A short description of `v` for error messages (never the whole value, which may be large).
pub fn describe(v: &Value) -> String {
    match v {
        Value::Global(m, n) => format!("{}.{}", clip(m), clip(n)),
        Value::Str(s) => format!("the string {:?}", clip(s)),
        Value::Int(i) => format!("the integer {i}"),
        Value::None => "None".into(),
        Value::Bool(b) => format!("the bool {b}"),
        Value::Float(f) => format!("the float {f}"),
        Value::Tuple(t) => format!("a tuple of {}", t.len()),
        Value::List(l) => format!("a list of {}", l.len()),
        Value::Dict(d) => format!("a dict of {}", d.len()),
        Value::Call(f, _) => format!("a call of {}", describe_callable(f)),
        Value::Persistent(_) => "a persistent id".into(),
    }
}

fn describe_callable(f: &Value) -> String {
    match f {
        Value::Global(m, n) => format!("{}.{}", clip(m), clip(n)),
        _ => "a computed callable".into(),
    }
}

fn clip(s: &str) -> &str {
    match s.char_indices().nth(60) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests;
