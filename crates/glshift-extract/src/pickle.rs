//! A minimal Python pickle reader (protocol ≤ 2 opcodes): decodes one pickle from a byte slice
//! into a [`Value`] tree, for the restricted subset `torch.save` writes for a `state_dict`.
//!
//! Nothing is executed: `GLOBAL` yields a name, `REDUCE` a [`Value::Call`] record. The caller
//! interprets the few calls it knows (`OrderedDict`, `_rebuild_tensor_v2`). Unknown opcodes and
//! truncated input are errors, never panics.

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

/// The unpickler state over one byte slice.
struct Machine<'a> {
    data: &'a [u8],
    pos: usize,
    stack: Vec<Item>,
    memo: std::collections::HashMap<u32, Value>,
}

/// Decodes one pickle starting at `data[0]`; returns the value and the number of bytes consumed.
pub fn load(data: &[u8]) -> Result<(Value, usize), String> {
    let mut m = Machine { data, pos: 0, stack: Vec::new(), memo: Default::default() };
    let v = m.run()?;
    Ok((v, m.pos))
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
    fn push(&mut self, v: Value) {
        self.stack.push(Item::Val(v));
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
    fn memo_put(&mut self, key: u32) -> Result<(), String> {
        let v = self.top()?.clone();
        self.memo.insert(key, v);
        Ok(())
    }
    fn memo_get(&mut self, key: u32) -> Result<(), String> {
        let v = self.memo.get(&key).cloned().ok_or_else(|| format!("pickle: memo key {key} unset"))?;
        self.push(v);
        Ok(())
    }
    fn tuple(&mut self, n: usize) -> Result<(), String> {
        let mut t = Vec::with_capacity(n);
        for _ in 0..n {
            t.push(self.pop()?);
        }
        t.reverse();
        self.push(Value::Tuple(t));
        Ok(())
    }
    fn set_items(&mut self, pairs: Vec<Value>) -> Result<(), String> {
        if pairs.len() % 2 != 0 {
            return Err("pickle: odd number of dict items".into());
        }
        let Value::Dict(d) = self.top()? else { return Err("pickle: SETITEMS on a non-dict".into()) };
        let mut it = pairs.into_iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            d.push((k, v));
        }
        Ok(())
    }
    fn append(&mut self, items: Vec<Value>) -> Result<(), String> {
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
            self.push(Value::Dict(Vec::new()));
        } else {
            self.push(Value::Call(Box::new(f), args));
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
        self.push(Value::Int(v));
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
                b'N' => self.push(Value::None),
                0x88 => self.push(Value::Bool(true)),
                0x89 => self.push(Value::Bool(false)),
                b'J' => {
                    let v = self.u32()? as i32 as i64;
                    self.push(Value::Int(v))
                }
                b'K' => {
                    let v = self.u8()? as i64;
                    self.push(Value::Int(v))
                }
                b'M' => {
                    let v = self.u16()? as i64;
                    self.push(Value::Int(v))
                }
                0x8a => self.long1()?,
                b'G' => {
                    let b = self.take(8)?;
                    let v = f64::from_be_bytes(b.try_into().map_err(|_| "pickle float")?);
                    self.push(Value::Float(v))
                }
                b'X' => {
                    let n = self.u32()? as usize;
                    let s = self.text(n)?;
                    self.push(Value::Str(s))
                }
                0x8c | b'U' => {
                    let n = self.u8()? as usize;
                    let s = self.text(n)?;
                    self.push(Value::Str(s))
                }
                b'T' => {
                    let n = self.u32()? as usize;
                    let s = self.text(n)?;
                    self.push(Value::Str(s))
                }
                b'}' => self.push(Value::Dict(Vec::new())),
                b']' => self.push(Value::List(Vec::new())),
                b')' => self.push(Value::Tuple(Vec::new())),
                0x85 => self.tuple(1)?,
                0x86 => self.tuple(2)?,
                0x87 => self.tuple(3)?,
                b't' => {
                    let items = self.pop_mark()?;
                    self.push(Value::Tuple(items))
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
                    self.push(Value::Global(module, name))
                }
                b'R' => self.reduce()?,
                b'b' => {
                    self.pop()?; // BUILD: the state (e.g. `_metadata`) is not needed.
                }
                b'Q' => {
                    let pid = self.pop()?;
                    self.push(Value::Persistent(Box::new(pid)))
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
}
