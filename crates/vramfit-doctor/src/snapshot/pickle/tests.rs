//! Reader tests on bytes CPython writes.

use super::*;

// Bytes below are what CPython 3.11 `pickle.dumps(obj, protocol)` writes, except where noted.

#[test]
fn reads_shared_frames_without_copying() {
    // pickle.dumps({'a': x, 'b': x}, 4) with x = [{'filename': 'a.py', 'line': 1, 'name': 'f'}]
    // -- the case serde-pickle rejects as "recursive structure".
    let data: &[u8] = b"\x80\x04\x95\x3c\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01a\x94]\x94}\x94(\x8c\x08filename\x94\x8c\x04a.py\x94\x8c\x04line\x94K\x01\x8c\x04name\x94\x8c\x01f\x94ua\x8c\x01b\x94h\x02u.";
    let p = read(data).unwrap();
    let a = p.get(p.root(), "a").unwrap();
    let b = p.get(p.root(), "b").unwrap();
    assert_eq!(a, b, "both keys must point at the one shared list");
    let frame = p.as_seq(a).unwrap()[0];
    assert_eq!(p.as_str(p.get(frame, "filename").unwrap()), Some("a.py"));
    assert_eq!(p.as_int(p.get(frame, "line").unwrap()), Some(1));
}

#[test]
fn long1_is_signed_little_endian() {
    // pickle.dumps(140499822313472, 2), pickle.dumps(-1, 2), and -129 as a 2-byte LONG1
    let p = read(b"\x80\x02\x8a\x06\x00\x00\x00\xaa\xc8\x7f.").unwrap();
    assert_eq!(p.as_int(p.root()), Some(140499822313472));
    let p = read(b"\x80\x02J\xff\xff\xff\xff.").unwrap();
    assert_eq!(p.as_int(p.root()), Some(-1));
    let p = read(b"\x80\x02\x8a\x02\x7f\xff.").unwrap();
    assert_eq!(p.as_int(p.root()), Some(-129));
}

#[test]
fn globals_are_recorded_not_called() {
    // pickle.dumps(collections.OrderedDict(a=1), 2)
    let data: &[u8] =
        b"\x80\x02ccollections\nOrderedDict\nq\x00)Rq\x01X\x01\x00\x00\x00aq\x02K\x01s.";
    let p = read(data).unwrap();
    assert_eq!(p.as_int(p.get(p.root(), "a").unwrap()), Some(1));
}

#[test]
fn hostile_lengths_and_memo_keys_are_errors() {
    // BINUNICODE8 claiming 2^63 bytes
    let e = read(b"\x80\x04\x8d\x00\x00\x00\x00\x00\x00\x00\x80.").unwrap_err();
    assert!(matches!(e.kind, PickleErrorKind::BadLength(_)), "{e}");
    // BINGET of a key never written
    let e = read(b"\x80\x04h\x07.").unwrap_err();
    assert_eq!(e.kind, PickleErrorKind::MissingMemo(7));
    // no STOP
    let e = read(b"\x80\x04]").unwrap_err();
    assert_eq!(e.kind, PickleErrorKind::NoStop);
    // protocol 0 (no PROTO), and a protocol 0 text opcode after PROTO
    let e = read(b"I1\n.").unwrap_err();
    assert_eq!(e.kind, PickleErrorKind::NotPickle(b'I'));
    let e = read(b"\x80\x02I1\n.").unwrap_err();
    assert_eq!(e.kind, PickleErrorKind::Opcode(b'I'));
    // a FRAME longer than the file
    let e = read(b"\x80\x04\x95\xff\x00\x00\x00\x00\x00\x00\x00N.").unwrap_err();
    assert_eq!(e.kind, PickleErrorKind::Truncated);
}

#[test]
fn out_of_order_memo_keys_resolve() {
    // hand-written protocol 2: x = 'a' under key 5, y = 'b' under key 0, [x, y, x]
    let p = read(b"\x80\x02(X\x01\x00\x00\x00aq\x05X\x01\x00\x00\x00bq\x00h\x05l.").unwrap();
    let items = p.as_seq(p.root()).unwrap();
    let texts: Vec<_> = items.iter().map(|v| p.as_str(*v).unwrap()).collect();
    assert_eq!(texts, ["a", "b", "a"]);
    // MEMOIZE after a sparse key stores under the memo's size (2 here), as CPython does
    let p = read(b"\x80\x04(\x8c\x01a\x94\x8c\x01bq\x07\x8c\x01c\x94h\x02h\x07h\x00l.").unwrap();
    let items = p.as_seq(p.root()).unwrap();
    let texts: Vec<_> = items.iter().map(|v| p.as_str(*v).unwrap()).collect();
    assert_eq!(texts, ["a", "b", "c", "c", "b", "a"]);
}

#[test]
fn nesting_depth_is_capped() {
    let mut data = vec![0x80, 0x04];
    data.extend(std::iter::repeat_n(b'(', 5000));
    let e = read(&data).unwrap_err();
    assert!(
        matches!(
            e.kind,
            PickleErrorKind::Limit {
                what: "nesting depth",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn self_referencing_list_is_fine() {
    // l = []; l.append(l); pickle.dumps(l, 4)
    let p = read(b"\x80\x04\x95\x06\x00\x00\x00\x00\x00\x00\x00]\x94h\x00a.").unwrap();
    let items = p.as_seq(p.root()).unwrap();
    assert_eq!(items[0], p.root());
}
