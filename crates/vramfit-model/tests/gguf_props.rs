//! Hostile-input properties of the GGUF reader, on files built here byte by byte (no Python):
//! random mutations of a valid header never panic and never allocate out of proportion to the
//! input; a real-sized vocabulary is walked, not stored.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use proptest::prelude::*;
use vramfit_model::gguf::{
    read_gguf, read_gguf_with, GgufError, GgufValue, GgufValueType, ReadOptions,
};
use vramfit_model::source::MemSource;
use vramfit_model::GgmlType;

// ---- a per-thread allocation meter -------------------------------------------------------

struct Metered;

thread_local! {
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

fn grew(n: usize) {
    let _ = LIVE.try_with(|l| {
        l.set(l.get() + n);
        let _ = PEAK.try_with(|p| p.set(p.get().max(l.get())));
    });
}

fn shrank(n: usize) {
    let _ = LIVE.try_with(|l| l.set(l.get().saturating_sub(n)));
}

unsafe impl GlobalAlloc for Metered {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            shrank(layout.size());
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static METER: Metered = Metered;

/// Peak bytes allocated on this thread while `f` runs, above what was live before.
fn peak_alloc<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let out = f();
    (out, PEAK.with(Cell::get) - base)
}

// ---- a minimal GGUF writer ---------------------------------------------------------------

#[derive(Default)]
struct Gguf {
    kv: Vec<u8>,
    n_kv: u64,
    tensors: Vec<(String, Vec<u64>, GgmlType)>,
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    b.extend((s.len() as u64).to_le_bytes());
    b.extend(s.as_bytes());
}

impl Gguf {
    fn key(&mut self, k: &str, type_id: u32) -> &mut Vec<u8> {
        self.n_kv += 1;
        put_str(&mut self.kv, k);
        self.kv.extend(type_id.to_le_bytes());
        &mut self.kv
    }
    fn u32(mut self, k: &str, v: u32) -> Self {
        self.key(k, 4).extend(v.to_le_bytes());
        self
    }
    fn string(mut self, k: &str, v: &str) -> Self {
        let b = self.key(k, 8);
        put_str(b, v);
        self
    }
    fn strings(mut self, k: &str, items: &[String]) -> Self {
        let b = self.key(k, 9);
        b.extend(8u32.to_le_bytes());
        b.extend((items.len() as u64).to_le_bytes());
        for s in items {
            put_str(b, s);
        }
        self
    }
    fn nested_u16(mut self, k: &str, items: &[&[u16]]) -> Self {
        let b = self.key(k, 9);
        b.extend(9u32.to_le_bytes());
        b.extend((items.len() as u64).to_le_bytes());
        for inner in items {
            b.extend(2u32.to_le_bytes());
            b.extend((inner.len() as u64).to_le_bytes());
            for v in *inner {
                b.extend(v.to_le_bytes());
            }
        }
        self
    }
    fn tensor(mut self, name: &str, dims: &[u64], t: GgmlType) -> Self {
        self.tensors.push((name.into(), dims.into(), t));
        self
    }
    fn bytes(&self) -> Vec<u8> {
        let mut b = b"GGUF".to_vec();
        b.extend(3u32.to_le_bytes());
        b.extend((self.tensors.len() as u64).to_le_bytes());
        b.extend(self.n_kv.to_le_bytes());
        b.extend(&self.kv);
        let mut offset = 0u64;
        for (name, dims, t) in &self.tensors {
            put_str(&mut b, name);
            b.extend((dims.len() as u32).to_le_bytes());
            for d in dims {
                b.extend(d.to_le_bytes());
            }
            b.extend(t.id().to_le_bytes());
            b.extend(offset.to_le_bytes());
            offset += t.tensor_bytes(dims).unwrap().div_ceil(32) * 32;
        }
        b.resize(b.len().div_ceil(32) * 32 + offset as usize, 0);
        b
    }
}

fn small_valid() -> Vec<u8> {
    Gguf::default()
        .string("general.architecture", "llama")
        .u32("llama.block_count", 2)
        .u32("llama.attention.head_count", 4)
        .nested_u16("test.nested", &[&[1, 2], &[3]])
        .strings(
            "tokenizer.ggml.tokens",
            &["a".into(), "bb".into(), "<0x0A>".into()],
        )
        .tensor("token_embd.weight", &[32, 3], GgmlType::Q8_0)
        .tensor("blk.0.attn_q.weight", &[256, 2], GgmlType::Q4_K)
        .tensor("output_norm.weight", &[32], GgmlType::F32)
        .bytes()
}

fn read(data: Vec<u8>) -> Result<vramfit_model::gguf::GgufFile, GgufError> {
    read_gguf(&MemSource {
        data,
        label: "prop.gguf".into(),
    })
}

/// Reading `data` must not panic, must allocate at most a fixed reader overhead (buffers) plus
/// a bounded multiple of the input, and must give a one-line error when it fails.
fn check_bounded(data: Vec<u8>) -> Result<(), TestCaseError> {
    let len = data.len();
    let (res, peak) = peak_alloc(|| {
        let src = MemSource {
            data,
            label: "prop.gguf".into(),
        };
        let a = read_gguf(&src).map(|g| g.weight_set().total_bytes());
        let b = read_gguf_with(
            &src,
            ReadOptions {
                keep_large_arrays: true,
            },
        )
        .map(|g| g.tensors.len());
        (a.map_err(|e| e.to_string()), b.map_err(|e| e.to_string()))
    });
    // read buffers (no bigger than the file) + decoded values (~32 bytes per element of >= 1 byte)
    let bound = (64 << 10) + 64 * len;
    prop_assert!(
        peak <= bound,
        "peak allocation {peak} > {bound} for {len} input bytes"
    );
    for msg in [res.0.err(), res.1.err()].into_iter().flatten() {
        prop_assert!(!msg.contains('\n'), "multi-line error: {msg}");
    }
    Ok(())
}

#[test]
fn the_small_file_is_valid() {
    let g = read(small_valid()).unwrap();
    assert_eq!(g.tensors.len(), 3);
    assert_eq!(g.weight_set().total_bytes(), 34 * 3 + 144 * 2 + 128);
    assert_eq!(g.array_len("tokenizer.ggml.tokens"), Some(3));
    assert_eq!(
        g.get("test.nested").unwrap().as_array().unwrap()[1]
            .as_array()
            .unwrap()[0]
            .as_u64(),
        Some(3)
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn byte_flips_never_panic(flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
        let mut data = small_valid();
        for (at, byte) in flips {
            let i = at.index(data.len());
            data[i] = byte;
        }
        check_bounded(data)?;
    }

    #[test]
    fn hostile_words_never_panic(
        at in any::<prop::sample::Index>(),
        word in prop_oneof![Just(u64::MAX), Just(1u64 << 32), Just(1 << 62), Just(0), Just(5), any::<u64>()],
    ) {
        let mut data = small_valid();
        let i = at.index(data.len() - 8);
        data[i..i + 8].copy_from_slice(&word.to_le_bytes());
        check_bounded(data)?;
    }

    #[test]
    fn truncation_and_splicing_never_panic(cut in any::<prop::sample::Index>(), junk in prop::collection::vec(any::<u8>(), 0..64)) {
        let data = small_valid();
        let i = cut.index(data.len());
        let mut spliced = data[..i].to_vec();
        spliced.extend(&junk);
        check_bounded(spliced)?;
        check_bounded(data[..i].to_vec())?;
    }
}

/// A Qwen-sized vocabulary (151,936 tokens) and merge list is walked over, not kept: the header
/// reads with little memory, and `keep_large_arrays` keeps every token.
#[test]
fn real_sized_vocabulary_is_skipped_cheaply() {
    let tokens: Vec<String> = (0..151_936).map(|i| format!("ĠToken{i}")).collect();
    let merges: Vec<String> = (0..151_387).map(|i| format!("Ġa{i} b{i}")).collect();
    let data = Gguf::default()
        .string("general.architecture", "qwen3")
        .strings("tokenizer.ggml.tokens", &tokens)
        .strings("tokenizer.ggml.merges", &merges)
        .tensor("token_embd.weight", &[32, 151_936], GgmlType::Q8_0)
        .bytes();
    let src = MemSource {
        data,
        label: "vocab.gguf".into(),
    };
    let t = std::time::Instant::now();
    let (g, peak) = peak_alloc(|| read_gguf(&src).unwrap());
    let skipped = t.elapsed();
    assert_eq!(
        g.get("tokenizer.ggml.tokens"),
        Some(&GgufValue::SkippedArray {
            elem_type: GgufValueType::String,
            len: 151_936
        })
    );
    assert_eq!(g.array_len("tokenizer.ggml.merges"), Some(151_387));
    assert!(
        peak < 8 << 20,
        "skipping a vocabulary allocated {peak} bytes"
    );
    let t = std::time::Instant::now();
    let kept = read_gguf_with(
        &src,
        ReadOptions {
            keep_large_arrays: true,
        },
    )
    .unwrap();
    let kept_time = t.elapsed();
    let toks = kept
        .get("tokenizer.ggml.tokens")
        .unwrap()
        .as_array()
        .unwrap();
    assert_eq!(toks[151_935].as_str(), Some("ĠToken151935"));
    eprintln!(
        "vocab header of {} bytes: skipped in {skipped:?} (peak alloc {peak} B), kept in {kept_time:?}",
        src.data.len() - g.tensors[0].bytes as usize
    );
}

/// A source that counts what is fetched, like a remote file over HTTP range requests.
struct Counting {
    inner: MemSource,
    reads: std::sync::atomic::AtomicU64,
    bytes: std::sync::atomic::AtomicU64,
}

impl vramfit_model::source::ByteSource for Counting {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        use std::sync::atomic::Ordering::Relaxed;
        self.reads.fetch_add(1, Relaxed);
        self.bytes.fetch_add(buf.len() as u64, Relaxed);
        self.inner.read_at(offset, buf)
    }
    fn len(&self) -> Option<u64> {
        self.inner.len()
    }
    fn name(&self) -> String {
        self.inner.name()
    }
}

/// Only the header is fetched, in few requests that double in size: a 6 MB vocabulary header
/// costs 7 requests, and reads past its end by less than one chunk.
#[test]
fn only_the_header_is_fetched() {
    use std::sync::atomic::Ordering::Relaxed;
    let tokens: Vec<String> = (0..151_936).map(|i| format!("ĠToken{i}")).collect();
    let data = Gguf::default()
        .string("general.architecture", "qwen3")
        .strings("tokenizer.ggml.tokens", &tokens)
        .strings("tokenizer.ggml.merges", &tokens)
        .tensor("token_embd.weight", &[32, 1 << 18], GgmlType::Q8_0)
        .bytes();
    let file_len = data.len() as u64;
    let src = Counting {
        inner: MemSource {
            data,
            label: "remote.gguf".into(),
        },
        reads: 0.into(),
        bytes: 0.into(),
    };
    let g = read_gguf(&src).unwrap();
    let (reads, fetched) = (src.reads.load(Relaxed), src.bytes.load(Relaxed));
    eprintln!(
        "header {} B of {file_len} B: {reads} reads, {fetched} B fetched",
        g.header_bytes
    );
    assert!(fetched >= g.header_bytes && fetched < g.header_bytes + (4 << 20) + (64 << 10));
    assert!(reads <= 8, "{reads} reads");

    let small = Counting {
        inner: MemSource {
            data: small_valid(),
            label: "s".into(),
        },
        reads: 0.into(),
        bytes: 0.into(),
    };
    read_gguf(&small).unwrap();
    assert_eq!(small.reads.load(Relaxed), 1);
}
