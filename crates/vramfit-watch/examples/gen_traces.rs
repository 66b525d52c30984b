//! Writes the synthetic traces of `vramfit_watch::synth` as JSON lines.
//!
//! `gen_traces DIR`: every test scenario into DIR/<name>.jsonl.
//! `gen_traces --long SECONDS GPUS HZ FILE`: a long uneventful trace for benchmarks.

use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--long") {
        let [_, seconds, gpus, hz, file] = &args[..] else {
            eprintln!("usage: gen_traces --long SECONDS GPUS HZ FILE");
            std::process::exit(2);
        };
        let (seconds, gpus, hz): (u32, u32, u32) = match (seconds.parse(), gpus.parse(), hz.parse())
        {
            (Ok(s), Ok(g), Ok(h)) => (s, g, h),
            _ => {
                eprintln!("gen_traces: SECONDS, GPUS and HZ must be whole numbers");
                std::process::exit(2);
            }
        };
        let mut out =
            std::io::BufWriter::new(std::fs::File::create(file).expect("create the trace file"));
        for s in vramfit_watch::synth::long_run(seconds, gpus, hz) {
            serde_json::to_writer(&mut out, &s).expect("write");
            out.write_all(b"\n").expect("write");
        }
        return;
    }
    let dir = args
        .first()
        .cloned()
        .unwrap_or_else(|| "crates/vramfit-watch/tests/traces".into());
    std::fs::create_dir_all(&dir).expect("create the output directory");
    for (name, samples) in vramfit_watch::synth::scenarios() {
        let path = format!("{dir}/{name}.jsonl");
        std::fs::write(&path, vramfit_watch::trace::to_jsonl(&samples)).expect("write the trace");
        println!("{path}: {} samples", samples.len());
    }
}
