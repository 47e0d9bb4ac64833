use super::*;

#[test]
fn decodes_a_small_dict_and_reports_consumed_bytes() {
    // pickle.dumps({'a': 1, 'b': (2, None)}, protocol=2) + one trailing byte
    let bytes =
        b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01K\x01X\x01\x00\x00\x00bq\x02K\x02N\x86q\x03u.Z";
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
