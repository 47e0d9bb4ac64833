//! The unpickler: a stack machine over one byte slice, every value charged to the budget and
//! checked for depth as it is built (module docs of [`super`]).

use super::{cost, depth, Value, BUDGET_PER_BYTE, MAX_DEPTH};

/// An element of the unpickler stack: a value or a `MARK`.
enum Item {
    Mark,
    Val(Value),
}

/// The unpickler state over one byte slice.
pub(super) struct Machine<'a> {
    data: &'a [u8],
    pub(super) pos: usize,
    stack: Vec<Item>,
    memo: std::collections::HashMap<u32, Value>,
    /// Bytes of values still allowed (see the module docs).
    pub(super) budget: usize,
}

impl<'a> Machine<'a> {
    pub(super) fn new(data: &'a [u8], budget: usize) -> Machine<'a> {
        Machine { data, pos: 0, stack: Vec::new(), memo: Default::default(), budget }
    }

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
            return Err(format!(
                "pickle: values nested deeper than {MAX_DEPTH} at byte {}",
                self.pos
            ));
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
        let at =
            self.stack.iter().rposition(|i| matches!(i, Item::Mark)).ok_or("pickle: no MARK")?;
        let items = self.stack.split_off(at + 1);
        self.stack.pop();
        Ok(items
            .into_iter()
            .filter_map(|i| if let Item::Val(v) = i { Some(v) } else { None })
            .collect())
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
            return Err(format!(
                "pickle: values nested deeper than {MAX_DEPTH} at byte {}",
                self.pos
            ));
        }
        Ok(())
    }
    fn set_items(&mut self, pairs: Vec<Value>) -> Result<(), String> {
        if pairs.len() % 2 != 0 {
            return Err("pickle: odd number of dict items".into());
        }
        self.check_children(&pairs)?;
        let Value::Dict(d) = self.top()? else {
            return Err("pickle: SETITEMS on a non-dict".into());
        };
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
    fn long1(&mut self) -> Result<Value, String> {
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
        Ok(Value::Int(v))
    }

    pub(super) fn run(&mut self) -> Result<Value, String> {
        loop {
            match self.u8()? {
                b'.' => return self.pop(), // STOP
                op => self.step(op)?,
            }
        }
    }

    /// One opcode other than `STOP`.
    fn step(&mut self, op: u8) -> Result<(), String> {
        match op {
            0x80 => {
                self.u8()?; // PROTO
            }
            b'(' => self.stack.push(Item::Mark),
            b'N' | 0x88 | 0x89 | b'J' | b'K' | b'M' | 0x8a | b'G' | b'X' | 0x8c | b'U' | b'T'
            | b'c' => {
                let v = self.scalar(op)?;
                self.push(v)?
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
            b'q' | b'r' => {
                let k = if op == b'q' { self.u8()? as u32 } else { self.u32()? };
                self.memo_put(k)?
            }
            b'h' | b'j' => {
                let k = if op == b'h' { self.u8()? as u32 } else { self.u32()? };
                self.memo_get(k)?
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
                return Err(format!(
                    "pickle: unsupported opcode 0x{other:02x} at byte {}",
                    self.pos - 1
                ))
            }
        }
        Ok(())
    }

    /// The value of an opcode that reads one (`None`, bools, ints, floats, strings, `GLOBAL`).
    fn scalar(&mut self, op: u8) -> Result<Value, String> {
        Ok(match op {
            b'N' => Value::None,
            0x88 => Value::Bool(true),
            0x89 => Value::Bool(false),
            b'J' => Value::Int(self.u32()? as i32 as i64),
            b'K' => Value::Int(self.u8()? as i64),
            b'M' => Value::Int(self.u16()? as i64),
            0x8a => self.long1()?,
            b'G' => {
                let b = self.take(8)?;
                Value::Float(f64::from_be_bytes(b.try_into().map_err(|_| "pickle float")?))
            }
            b'X' | b'T' => {
                let n = self.u32()? as usize;
                Value::Str(self.text(n)?)
            }
            0x8c | b'U' => {
                let n = self.u8()? as usize;
                Value::Str(self.text(n)?)
            }
            b'c' => {
                let module = self.line()?;
                let name = self.line()?;
                Value::Global(module, name)
            }
            other => {
                return Err(format!(
                    "pickle: opcode 0x{other:02x} at byte {} reads no value",
                    self.pos - 1
                ))
            }
        })
    }
}
