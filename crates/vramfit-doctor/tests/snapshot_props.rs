//! Hostile input: mutated real snapshots and random opcode soup must give a result or a one-line
//! error, never a panic, and never more objects than input bytes.

use proptest::prelude::*;
use std::path::Path;
use vramfit_doctor::snapshot::{analyze_bytes, pickle, svg, timeline};

/// Seeds: small real snapshots when ../shared is present, plus a protocol-2 snapshot written by
/// CPython 3.11 (one segment, an allocated and an inactive block, one trace entry).
fn seeds() -> Vec<Vec<u8>> {
    let mut out = vec![own_seed()];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/torch-snapshots");
    for f in ["albi_tiny.pickle", "albi_tiny2.pickle", "maph_small.pickle"] {
        match std::fs::read(dir.join(f)) {
            Ok(b) => out.push(b),
            Err(_) => println!("SKIP seed {f}: {} is absent", dir.display()),
        }
    }
    out
}

// pickle.dumps({'segments': [{'device': 0, 'address': 2**40, 'total_size': 2097152, 'stream': 0,
//   'segment_type': 'small', 'blocks': [{'size': 512, 'requested_size': 500, 'state':
//   'active_allocated', 'frames': [{'filename': 'a.py', 'line': 3, 'name': 'f'}]}, {'size':
//   2096640, 'requested_size': 0, 'state': 'inactive', 'frames': []}]}], 'device_traces':
//   [[{'action': 'alloc', 'addr': 2**40, 'size': 512, 'stream': 0}]]}, 2)
const OWN_SEED_HEX: &str = concat!(
    "80027d71002858080000007365676d656e747371015d71027d710328580600000064657669636571044b005807000000",
    "6164647265737371058a06000000000001580a000000746f74616c5f73697a6571064a00002000580600000073747265",
    "616d71074b00580c0000007365676d656e745f7479706571085805000000736d616c6c71095806000000626c6f636b73",
    "710a5d710b287d710c28580400000073697a65710d4d0002580e0000007265717565737465645f73697a65710e4df401",
    "58050000007374617465710f58100000006163746976655f616c6c6f6361746564711058060000006672616d65737111",
    "5d71127d711328580800000066696c656e616d6571145804000000612e7079711558040000006c696e6571164b035804",
    "0000006e616d65711758010000006671187561757d711928680d4a00fe1f00680e4b00680f5808000000696e61637469",
    "7665711a68115d711b75657561580d0000006465766963655f747261636573711c5d711d5d711e7d711f285806000000",
    "616374696f6e71205805000000616c6c6f63712158040000006164647271228a06000000000001680d4d000268074b00",
    "756161752e",
);

fn own_seed() -> Vec<u8> {
    let hex = OWN_SEED_HEX;
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// Runs everything a user can reach on the bytes; only panics are failures.
fn exercise(data: &[u8]) {
    if let Ok(p) = pickle::read(data) {
        assert!(
            p.objects() <= data.len() + 16,
            "{} objects from {} bytes",
            p.objects(),
            data.len()
        );
    }
    match analyze_bytes(data) {
        Ok(a) => {
            serde_json::to_string(&a.report).unwrap();
            let _ = svg::render(&timeline::timelines(&a.snapshot), "x");
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "error must be one line: {e}"),
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip { at: usize, bits: u8 },
    Set { at: usize, byte: u8 },
    Truncate { at: usize },
    Insert { at: usize, bytes: Vec<u8> },
    Duplicate { from: usize, len: usize, to: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let pos = any::<prop::sample::Index>();
    prop_oneof![
        (pos.clone(), 1u8..=255).prop_map(|(i, bits)| Mutation::Flip {
            at: i.index(usize::MAX),
            bits
        }),
        (pos.clone(), any::<u8>()).prop_map(|(i, byte)| Mutation::Set {
            at: i.index(usize::MAX),
            byte
        }),
        pos.clone().prop_map(|i| Mutation::Truncate {
            at: i.index(usize::MAX)
        }),
        (pos.clone(), prop::collection::vec(any::<u8>(), 1..16)).prop_map(|(i, bytes)| {
            Mutation::Insert {
                at: i.index(usize::MAX),
                bytes,
            }
        }),
        (pos.clone(), 1usize..64, pos).prop_map(|(f, len, t)| Mutation::Duplicate {
            from: f.index(usize::MAX),
            len,
            to: t.index(usize::MAX)
        }),
    ]
}

fn apply(data: &mut Vec<u8>, m: &Mutation) {
    if data.is_empty() {
        return;
    }
    let n = data.len();
    match m {
        Mutation::Flip { at, bits } => data[at % n] ^= bits,
        Mutation::Set { at, byte } => data[at % n] = *byte,
        Mutation::Truncate { at } => data.truncate(at % n),
        Mutation::Insert { at, bytes } => {
            let at = at % n;
            data.splice(at..at, bytes.iter().copied());
        }
        Mutation::Duplicate { from, len, to } => {
            let from = from % n;
            let end = (from + len).min(n);
            let chunk: Vec<u8> = data[from..end].to_vec();
            let to = to % n;
            data.splice(to..to, chunk);
        }
    }
}

#[test]
fn own_seed_is_a_valid_snapshot() {
    let a = analyze_bytes(&own_seed()).unwrap();
    assert_eq!(a.report.totals.reserved_bytes, 2 << 20);
    assert_eq!(a.report.totals.allocated_bytes, 512);
    assert_eq!(a.report.totals.rounding_waste_bytes, 12);
    assert_eq!(a.report.top_sites[0].site, "a.py:3 (f)");
    assert_eq!(a.report.trace.entries, 1);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn mutated_snapshots_never_panic(
        seed in any::<prop::sample::Index>(),
        muts in prop::collection::vec(mutation(), 1..8),
    ) {
        let seeds = seeds();
        let mut data = seeds[seed.index(seeds.len())].clone();
        for m in &muts {
            apply(&mut data, m);
        }
        exercise(&data);
    }

    #[test]
    fn opcode_soup_never_panics(body in prop::collection::vec(
        prop_oneof![
            // the opcodes snapshots use, weighted up, with short arguments
            Just(vec![b'(']), Just(vec![b']']), Just(vec![b'}']), Just(vec![b')']),
            Just(vec![0x94]), Just(vec![b'a']), Just(vec![b'e']), Just(vec![b's']), Just(vec![b'u']),
            Just(vec![b't']), Just(vec![0x85]), Just(vec![0x86]), Just(vec![b'N']), Just(vec![0x88]),
            Just(vec![b'R']), Just(vec![b'b']), Just(vec![0x81]), Just(vec![0x93]), Just(vec![b'2']),
            Just(vec![b'0']), Just(vec![b'1']),
            any::<u8>().prop_map(|k| vec![b'h', k % 8]),
            any::<u8>().prop_map(|k| vec![b'q', k % 8]),
            any::<u8>().prop_map(|k| vec![b'K', k]),
            (0u8..4).prop_map(|n| { let mut v = vec![0x8c, n]; v.extend(std::iter::repeat_n(b'x', n as usize)); v }),
            prop::collection::vec(any::<u8>(), 1..4),
        ],
        0..64,
    )) {
        let mut data = vec![0x80, 0x04];
        data.extend(body.into_iter().flatten());
        data.push(b'.');
        exercise(&data);
    }
}
