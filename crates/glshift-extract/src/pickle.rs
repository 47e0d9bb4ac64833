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

/// An element of the unpickler stack: a value or a `MARK`.
enum Item {
    Mark,
    Val(Value),
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

/// The unpickler state over one byte slice.
struct Machine<'a> {
    data: &'a [u8],
    pos: usize,
    stack: Vec<Item>,
    memo: std::collections::HashMap<u32, Value>,
    /// Bytes of values still allowed (see the module docs).
    budget: usize,
}

/// Decodes one pickle starting at `data[0]`; returns the value and the number of bytes consumed.
pub fn load(data: &[u8]) -> Result<(Value, usize), String> {
    let (v, n, _) = load_counting(data)?;
    Ok((v, n))
}

/// [`load`], also returning the bytes of the budget it used.
fn load_counting(data: &[u8]) -> Result<(Value, usize, usize), String> {
    let budget = data.len().saturating_mul(BUDGET_PER_BYTE).saturating_add(BUDGET_BASE).min(BUDGET_MAX);
    let mut m = Machine { data, pos: 0, stack: Vec::new(), memo: Default::default(), budget };
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

impl<'a> Machine<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.data.len());
        let end = end.ok_or_else(|| format!("pickle truncated at byte {}", self.pos))?;
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, String> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn line(&mut self) -> Result<String, String> {
        let rest = &self.data[self.pos..];
        let n = rest.iter().position(|&c| c == b'\n').ok_or("pickle truncated in a text line")?;
        let s = String::from_utf8_lossy(&rest[..n]).into_owned();
        self.pos += n + 1;
        Ok(s)
    }
    fn text(&mut self, n: usize) -> Result<String, String> {
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| "pickle string is not UTF-8".to_string())
    }
    /// Charges `bytes` against the budget; an error once it is spent.
    fn charge(&mut self, bytes: usize) -> Result<(), String> {
        self.budget = self.budget.checked_sub(bytes).ok_or_else(|| {
            format!(
                "pickle: values would exceed {BUDGET_PER_BYTE} bytes per input byte at byte {} \
                 (repeated memo copies?)",
                self.pos
            )
        })?;
        Ok(())
    }
    /// Pushes a value the machine built (its children moved in, not copied): charges its own node
    /// and string bytes, and checks its depth.
    fn push(&mut self, v: Value) -> Result<(), String> {
        let own = match &v {
            Value::Str(s) => s.len(),
            Value::Global(m, n) => m.len() + n.len(),
            _ => 0,
        };
        self.charge(std::mem::size_of::<Value>() + own)?;
        self.check_depth(&v)?;
        self.stack.push(Item::Val(v));
        Ok(())
    }
    fn check_depth(&self, v: &Value) -> Result<(), String> {
        if depth(v) > MAX_DEPTH {
            return Err(format!("pickle: values nested deeper than {MAX_DEPTH} at byte {}", self.pos));
        }
        Ok(())
    }
    fn pop(&mut self) -> Result<Value, String> {
        match self.stack.pop() {
            Some(Item::Val(v)) => Ok(v),
            Some(Item::Mark) => Err("pickle: unexpected MARK".into()),
            None => Err("pickle: stack underflow".into()),
        }
    }
    fn top(&mut self) -> Result<&mut Value, String> {
        match self.stack.last_mut() {
            Some(Item::Val(v)) => Ok(v),
            _ => Err("pickle: no object on the stack".into()),
        }
    }
    /// Pops the values above the topmost MARK (and the MARK), in push order.
    fn pop_mark(&mut self) -> Result<Vec<Value>, String> {
        let at = self.stack.iter().rposition(|i| matches!(i, Item::Mark)).ok_or("pickle: no MARK")?;
        let items = self.stack.split_off(at + 1);
        self.stack.pop();
        Ok(items.into_iter().filter_map(|i| if let Item::Val(v) = i { Some(v) } else { None }).collect())
    }
    /// `PUT`: the memo keeps a copy of the top value, charged to the budget.
    fn memo_put(&mut self, key: u32) -> Result<(), String> {
        let bytes = cost(self.top()?);
        self.charge(bytes)?;
        let v = self.top()?.clone();
        self.memo.insert(key, v);
        Ok(())
    }
    /// `GET`: pushes a copy of a memo entry, charged to the budget (its depth was checked when
    /// it was built).
    fn memo_get(&mut self, key: u32) -> Result<(), String> {
        let v = self.memo.get(&key).ok_or_else(|| format!("pickle: memo key {key} unset"))?;
        let bytes = cost(v);
        self.charge(bytes)?;
        let v = self.memo[&key].clone();
        self.stack.push(Item::Val(v));
        Ok(())
    }
    fn tuple(&mut self, n: usize) -> Result<(), String> {
        let mut t = Vec::with_capacity(n);
        for _ in 0..n {
            t.push(self.pop()?);
        }
        t.reverse();
        self.push(Value::Tuple(t))?;
        Ok(())
    }
    /// Values about to be put inside the top container must leave it within [`MAX_DEPTH`].
    fn check_children(&self, items: &[Value]) -> Result<(), String> {
        if items.iter().any(|v| depth(v) + 1 > MAX_DEPTH) {
            return Err(format!("pickle: values nested deeper than {MAX_DEPTH} at byte {}", self.pos));
        }
        Ok(())
    }
    fn set_items(&mut self, pairs: Vec<Value>) -> Result<(), String> {
        if pairs.len() % 2 != 0 {
            return Err("pickle: odd number of dict items".into());
        }
        self.check_children(&pairs)?;
        let Value::Dict(d) = self.top()? else { return Err("pickle: SETITEMS on a non-dict".into()) };
        let mut it = pairs.into_iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            d.push((k, v));
        }
        Ok(())
    }
    fn append(&mut self, items: Vec<Value>) -> Result<(), String> {
        self.check_children(&items)?;
        let Value::List(l) = self.top()? else { return Err("pickle: APPEND on a non-list".into()) };
        l.extend(items);
        Ok(())
    }
    fn reduce(&mut self) -> Result<(), String> {
        let args = match self.pop()? {
            Value::Tuple(t) => t,
            _ => return Err("pickle: REDUCE arguments are not a tuple".into()),
        };
        let f = self.pop()?;
        // An OrderedDict() call is an empty dict that SETITEMS then fills.
        if f == Value::Global("collections".into(), "OrderedDict".into()) && args.is_empty() {
            self.push(Value::Dict(Vec::new()))?;
        } else {
            self.push(Value::Call(Box::new(f), args))?;
        }
        Ok(())
    }
    fn long1(&mut self) -> Result<(), String> {
        let n = self.u8()? as usize;
        let b = self.take(n)?;
        // Values wider than i64 (torch's magic number) are kept as their low 64 bits.
        let mut v: i64 = 0;
        for (i, &byte) in b.iter().take(8).enumerate() {
            v |= (byte as i64) << (8 * i);
        }
        if n > 0 && n < 8 && b[n - 1] & 0x80 != 0 {
            v -= 1i64 << (8 * n);
        }
        self.push(Value::Int(v))?;
        Ok(())
    }

    fn run(&mut self) -> Result<Value, String> {
        loop {
            let op = self.u8()?;
            match op {
                0x80 => {
                    self.u8()?; // PROTO
                }
                b'.' => return self.pop(), // STOP
                b'(' => self.stack.push(Item::Mark),
                b'N' => self.push(Value::None)?,
                0x88 => self.push(Value::Bool(true))?,
                0x89 => self.push(Value::Bool(false))?,
                b'J' => {
                    let v = self.u32()? as i32 as i64;
                    self.push(Value::Int(v))?
                }
                b'K' => {
                    let v = self.u8()? as i64;
                    self.push(Value::Int(v))?
                }
                b'M' => {
                    let v = self.u16()? as i64;
                    self.push(Value::Int(v))?
                }
                0x8a => self.long1()?,
                b'G' => {
                    let b = self.take(8)?;
                    let v = f64::from_be_bytes(b.try_into().map_err(|_| "pickle float")?);
                    self.push(Value::Float(v))?
                }
                b'X' => {
                    let n = self.u32()? as usize;
                    let s = self.text(n)?;
                    self.push(Value::Str(s))?
                }
                0x8c | b'U' => {
                    let n = self.u8()? as usize;
                    let s = self.text(n)?;
                    self.push(Value::Str(s))?
                }
                b'T' => {
                    let n = self.u32()? as usize;
                    let s = self.text(n)?;
                    self.push(Value::Str(s))?
                }
                b'}' => self.push(Value::Dict(Vec::new()))?,
                b']' => self.push(Value::List(Vec::new()))?,
                b')' => self.push(Value::Tuple(Vec::new()))?,
                0x85 => self.tuple(1)?,
                0x86 => self.tuple(2)?,
                0x87 => self.tuple(3)?,
                b't' => {
                    let items = self.pop_mark()?;
                    self.push(Value::Tuple(items))?
                }
                b's' => {
                    let v = self.pop()?;
                    let k = self.pop()?;
                    self.set_items(vec![k, v])?
                }
                b'u' => {
                    let items = self.pop_mark()?;
                    self.set_items(items)?
                }
                b'a' => {
                    let v = self.pop()?;
                    self.append(vec![v])?
                }
                b'e' => {
                    let items = self.pop_mark()?;
                    self.append(items)?
                }
                b'q' => {
                    let k = self.u8()? as u32;
                    self.memo_put(k)?
                }
                b'r' => {
                    let k = self.u32()?;
                    self.memo_put(k)?
                }
                b'h' => {
                    let k = self.u8()? as u32;
                    self.memo_get(k)?
                }
                b'j' => {
                    let k = self.u32()?;
                    self.memo_get(k)?
                }
                b'c' => {
                    let module = self.line()?;
                    let name = self.line()?;
                    self.push(Value::Global(module, name))?
                }
                b'R' => self.reduce()?,
                b'b' => {
                    self.pop()?; // BUILD: the state (e.g. `_metadata`) is not needed.
                }
                b'Q' => {
                    let pid = self.pop()?;
                    self.push(Value::Persistent(Box::new(pid)))?
                }
                other => {
                    return Err(format!("pickle: unsupported opcode 0x{other:02x} at byte {}", self.pos - 1))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_a_small_dict_and_reports_consumed_bytes() {
        // pickle.dumps({'a': 1, 'b': (2, None)}, protocol=2) + one trailing byte
        let bytes = b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01K\x01X\x01\x00\x00\x00bq\x02K\x02N\x86q\x03u.Z";
        let (v, n) = load(bytes).unwrap();
        assert_eq!(n, bytes.len() - 1);
        let want = Value::Dict(vec![
            (Value::Str("a".into()), Value::Int(1)),
            (Value::Str("b".into()), Value::Tuple(vec![Value::Int(2), Value::None])),
        ]);
        assert_eq!(v, want);
    }

    #[test]
    fn truncated_pickle_is_an_error() {
        let bytes = b"\x80\x02}q\x00(X\x05\x00\x00\x00ab";
        assert!(load(bytes).unwrap_err().contains("truncated"));
    }

    #[test]
    fn nesting_deeper_than_the_limit_is_an_error_not_a_stack_overflow() {
        // None wrapped in 100 000 one-element tuples (TUPLE1): dropping or printing such a value
        // would recurse 100 000 deep.
        let mut bytes = b"\x80\x02N".to_vec();
        bytes.extend(std::iter::repeat_n(0x85u8, 100_000));
        bytes.push(b'.');
        assert!(load(&bytes).unwrap_err().contains("nested deeper than 64"));
        // At the limit it still loads.
        let mut ok = b"\x80\x02N".to_vec();
        ok.extend(std::iter::repeat_n(0x85u8, MAX_DEPTH));
        ok.push(b'.');
        assert_eq!(depth(&load(&ok).unwrap().0), MAX_DEPTH);
    }

    #[test]
    fn memo_copies_that_double_a_value_stop_at_the_budget() {
        // PUT 0, then 60 rounds of (GET 0, GET 0, TUPLE2, PUT 0): 2^60 nodes if copied freely.
        let mut bytes = b"\x80\x02Nq\x00".to_vec();
        for _ in 0..60 {
            bytes.extend(b"h\x00h\x00\x86q\x00");
        }
        bytes.push(b'.');
        let e = load(&bytes).unwrap_err();
        assert!(e.contains("bytes per input byte"), "{e}");
    }

    #[test]
    fn a_describe_of_a_large_value_stays_short() {
        let v = Value::List(vec![Value::Str("x".repeat(10_000)); 1000]);
        assert_eq!(describe(&v), "a list of 1000");
        assert!(describe(&Value::Str("y".repeat(10_000))).len() < 80);
    }

    #[test]
    fn a_state_dict_pickle_uses_a_fraction_of_its_budget() {
        // The weights seed of fuzz/make_extract_seeds.py: its fourth pickle is the state_dict.
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fuzz_seeds/pth_reader/two_tensors.pth");
        let bytes = std::fs::read(path).unwrap();
        let mut pos = 0;
        for _ in 0..3 {
            pos += load(&bytes[pos..]).unwrap().1;
        }
        let (v, len, used) = load_counting(&bytes[pos..]).unwrap();
        assert!(matches!(v, Value::Dict(ref d) if d.len() == 3));
        let per_byte = used as f64 / len as f64;
        eprintln!("state_dict pickle: {len} bytes, {used} bytes of values ({per_byte:.1} per byte)");
        assert!(per_byte < BUDGET_PER_BYTE as f64 / 2.0, "{per_byte}");
    }
}
