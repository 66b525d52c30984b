//! `vramfit snapshot FILE [--json] [--svg OUT] [--top N] [--quiet]`: what a PyTorch memory snapshot says.
//! Reserved, allocated, active, requested and free (cached) memory with the largest free block,
//! per device and stream, by pool, by allocation site, and the OOM the trace recorded.
//! Exit 0 on success, 2 on a file that cannot be read or is not a snapshot.

use crate::error::{CliError, CmdResult};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::fmt::Write;
use std::io::{IsTerminal, Write as _};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use vramfit_doctor::snapshot::{
    self, analysis::SnapshotReport, svg, timeline, Analysis, SnapshotFormat,
};
use vramfit_model::units::fmt_bytes;

/// Files above this are refused (real snapshots reach a few hundred MB); a pipe or device is read
/// up to this many bytes.
const MAX_FILE_BYTES: u64 = 4 << 30;

/// The progress bar appears once reading has taken this long.
const PROGRESS_AFTER: Duration = Duration::from_secs(1);

#[derive(clap::Args)]
pub struct Args {
    /// Snapshot file: torch.cuda.memory._dump_snapshot() output, or a pickled memory_snapshot() list.
    pub file: PathBuf,
    /// Print JSON (keys: reserved_bytes, allocated_bytes, active_bytes, requested_bytes,
    /// inactive_bytes, segments, largest_free_block_bytes, oom, devices, ...).
    #[arg(long)]
    pub json: bool,
    /// Also write an SVG timeline of allocated and reserved memory over the trace to OUT.
    #[arg(long, value_name = "OUT")]
    pub svg: Option<PathBuf>,
    /// How many allocation sites to list.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// No progress bar on stderr (it appears for files that take over a second to read).
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(args: Args) -> CmdResult {
    let name = args.file.display().to_string();
    let cannot_read = |e: std::io::Error| {
        CliError::input(format!(
            "cannot read '{name}': {e}; give the path of a snapshot pickle"
        ))
    };
    let meta = std::fs::metadata(&args.file).map_err(cannot_read)?;
    if meta.is_dir() {
        return Err(CliError::input(format!(
            "'{name}' is a directory; give the path of a snapshot pickle"
        )));
    }
    if meta.is_file() && meta.len() > MAX_FILE_BYTES {
        return Err(CliError::input(format!(
            "'{name}' is {}, more than the {} a snapshot file is allowed; is it a snapshot?",
            fmt_bytes(meta.len()),
            fmt_bytes(MAX_FILE_BYTES)
        )));
    }
    let file = open_without_waiting(&args.file, meta.is_file()).map_err(cannot_read)?;
    // two handles: one thread reads ahead for the memo keys while the other decodes
    let (first, second, len) = if meta.is_file() {
        let again = std::fs::File::open(&args.file).map_err(cannot_read)?;
        (file, again, meta.len())
    } else {
        spool(file, &name)?
    };
    // --json into a pipe is a script's call: no bar then
    let show_bar = !args.quiet && (!args.json || std::io::stdout().is_terminal());
    let mut bar = Bar::new(show_bar, Some(len));
    let mut progress = |done: u64| bar.update(done);
    let result = snapshot::analyze_parallel(first, second, len, Some(&mut progress));
    bar.finish();
    let analysis = result.map_err(|e| CliError::input(format!("'{name}': {e}")))?;
    if let Some(out) = &args.svg {
        let chart = svg::render(&timeline::timelines(&analysis.snapshot), &file_label(&name));
        std::fs::write(out, chart).map_err(|e| {
            CliError::input(format!("cannot write SVG to '{}': {e}", out.display()))
        })?;
    }
    let text = if args.json {
        let json = serde_json::to_string_pretty(&analysis.report)
            .map_err(|e| CliError::input(e.to_string()))?;
        json + "\n"
    } else {
        report_text(&file_label(&name), &analysis, args.top)
    };
    // A reader that stops early (`| head`) is not an error.
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(CliError::input(format!("cannot write the report: {e}")))
        }
        _ => Ok(0),
    }
}

/// Copies a pipe or device into a temporary file, so it can be read in two passes with the caps
/// of a file its size: at most [`MAX_FILE_BYTES`], and only after its first two bytes show a
/// pickle (`/dev/zero` fails at once). Returns two handles on it; its name is already removed.
/// Opens the input. A named pipe is opened without waiting for a writer (a plain `open` of a FIFO
/// nobody writes to blocks forever), then switched back to blocking reads: with no writer the
/// first read sees the end of the stream, and the empty input is refused as not a pickle.
fn open_without_waiting(path: &std::path::Path, regular: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    if regular {
        return std::fs::File::open(path);
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    // SAFETY: fcntl on a descriptor this function owns; F_GETFL/F_SETFL read and set its flags only
    let fd = f.as_raw_fd();
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(f)
}

fn spool(
    mut input: std::fs::File,
    name: &str,
) -> Result<(std::fs::File, std::fs::File, u64), CliError> {
    use std::io::{Read, Seek};
    let fail = |e: std::io::Error| CliError::input(format!("cannot read '{name}': {e}"));
    let mut head = Vec::new();
    (&mut input).take(2).read_to_end(&mut head).map_err(fail)?;
    if head.len() < 2 || head[0] != 0x80 || !(2..=5).contains(&head[1]) {
        let e = snapshot::analyze_bytes(&head)
            .err()
            .map_or_else(|| "not a pickle".to_string(), |e| e.to_string());
        return Err(CliError::input(format!("'{name}': {e}")));
    }
    let path = std::env::temp_dir().join(format!(
        "vramfit-snapshot-{}-{}.pickle",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let tmp_fail = |e: std::io::Error| {
        CliError::input(format!(
            "cannot spool '{name}' to {}: {e}; save the snapshot to a file and pass its path",
            path.display()
        ))
    };
    let mut tmp = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(tmp_fail)?;
    let again = std::fs::File::open(&path);
    // unnamed from here on: the space is returned when both handles are closed
    let _ = std::fs::remove_file(&path);
    let again = again.map_err(tmp_fail)?;
    std::io::Write::write_all(&mut tmp, &head).map_err(tmp_fail)?;
    let copied = std::io::copy(&mut input.take(MAX_FILE_BYTES - 1), &mut tmp).map_err(fail)?;
    let len = copied + 2;
    if len >= MAX_FILE_BYTES {
        return Err(CliError::input(format!(
            "'{name}' goes on past {}, more than a snapshot file is allowed; is it a snapshot?",
            fmt_bytes(MAX_FILE_BYTES)
        )));
    }
    tmp.seek(std::io::SeekFrom::Start(0)).map_err(tmp_fail)?;
    Ok((tmp, again, len))
}

/// A progress bar on stderr that appears only once reading has taken [`PROGRESS_AFTER`]
/// (indicatif draws nothing when stderr is not a terminal).
struct Bar {
    enabled: bool,
    total: Option<u64>,
    start: Instant,
    bar: Option<ProgressBar>,
}

impl Bar {
    fn new(enabled: bool, total: Option<u64>) -> Bar {
        Bar {
            enabled,
            total,
            start: Instant::now(),
            bar: None,
        }
    }

    fn update(&mut self, done: u64) {
        if !self.enabled {
            return;
        }
        if self.bar.is_none() {
            if self.start.elapsed() < PROGRESS_AFTER {
                return;
            }
            let bar = match self.total {
                Some(total) => {
                    ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
                        .with_style(
                            ProgressStyle::with_template(
                                "reading {wide_bar} {percent:>3}% {elapsed}/{duration}",
                            )
                            .expect("a valid template"),
                        )
                }
                None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
                    .with_style(
                        ProgressStyle::with_template("reading {spinner} {bytes} {elapsed}")
                            .expect("a valid template"),
                    ),
            };
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        }
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

fn file_label(path: &str) -> String {
    std::path::Path::new(path)
        .file_name()
        .map(|f| f.to_string_lossy().to_string())
        .unwrap_or_else(|| path.to_string())
}

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "0%".into()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

fn stream_name(s: u64) -> String {
    if s == 0 {
        "default".into()
    } else {
        format!("{s:#x}")
    }
}

/// The human report: the summary with its numbers first, then the details.
pub fn report_text(name: &str, a: &Analysis, top: usize) -> String {
    let r: &SnapshotReport = &a.report;
    let t = &r.totals;
    let mut o = String::new();
    let format = match r.format {
        SnapshotFormat::Current => "torch >= 2.1 format",
        SnapshotFormat::Legacy => "torch 2.0 legacy format",
        SnapshotFormat::SegmentList => "memory_snapshot() segment list, no trace",
    };
    let _ = writeln!(
        o,
        "{name}: PyTorch memory snapshot ({format}), {} device(s), {} segments, {} blocks, {} trace entries",
        r.devices.len(),
        t.segments,
        t.blocks,
        r.trace.entries
    );
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "  reserved            {:>11}   held from CUDA by the caching allocator",
        fmt_bytes(t.reserved_bytes)
    );
    let _ = writeln!(
        o,
        "  allocated           {:>11}   live tensors ({} of reserved); requested {}, rounding waste {}",
        fmt_bytes(t.allocated_bytes),
        pct(t.allocated_bytes, t.reserved_bytes),
        fmt_bytes(t.requested_bytes),
        fmt_bytes(t.rounding_waste_bytes)
    );
    let _ = writeln!(
        o,
        "  active              {:>11}   allocated + freed but still in use by a stream ({} pending free)",
        fmt_bytes(t.active_bytes),
        fmt_bytes(t.pending_free_bytes)
    );
    let _ = writeln!(
        o,
        "  inactive            {:>11}   cached free memory, {} of reserved (external fragmentation)",
        fmt_bytes(t.inactive_bytes),
        pct(t.inactive_bytes, t.reserved_bytes)
    );
    let _ = writeln!(
        o,
        "  largest free block  {:>11}   the largest request cached memory can serve without cudaMalloc",
        fmt_bytes(t.largest_free_block_bytes)
    );
    oom_text(&mut o, r);
    devices_text(&mut o, r);
    pools_text(&mut o, r);
    sites_text(&mut o, r, top);
    trace_text(&mut o, r);
    o
}

fn oom_text(o: &mut String, r: &SnapshotReport) {
    let _ = writeln!(o);
    let Some(oom) = &r.oom else {
        let _ = writeln!(o, "No OOM recorded in the trace.");
        return;
    };
    let more = if r.oom_events > 1 {
        format!(" (latest of {})", r.oom_events)
    } else {
        String::new()
    };
    let _ = writeln!(
        o,
        "OOM{more}: device {}, stream {}: tried to allocate {} with {} free on the device",
        oom.device,
        stream_name(oom.stream),
        fmt_bytes(oom.requested_bytes),
        fmt_bytes(oom.device_free_bytes)
    );
    if let Some(site) = &oom.site {
        let _ = writeln!(o, "  at {site}");
    }
    let _ = writeln!(
        o,
        "  cached free on that stream {}, largest free block {}",
        fmt_bytes(oom.inactive_on_stream_bytes),
        fmt_bytes(oom.largest_free_block_on_stream_bytes)
    );
    let why = match oom.diagnosis {
        "fragmentation" => "fragmentation: device free + cached free memory would hold the request, no single free block does; try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        "capacity" => "capacity: the request exceeds all free memory; reduce batch, sequence length or model size",
        _ => "a free block now fits the request: memory was released between the OOM and the snapshot",
    };
    let _ = writeln!(o, "  diagnosis: {why}");
}

fn devices_text(o: &mut String, r: &SnapshotReport) {
    let _ = writeln!(o);
    let _ = writeln!(o, "Per device and stream:");
    let _ = writeln!(
        o,
        "  {:<8} {:<16} {:>11} {:>11} {:>11} {:>13} {:>9}  trace peak alloc / reserved",
        "device", "stream", "reserved", "allocated", "inactive", "largest free", "segments"
    );
    for d in &r.devices {
        let peaks = match (d.trace_peak_allocated_bytes, d.trace_peak_reserved_bytes) {
            (Some(a), Some(b)) => format!("{} / {}", fmt_bytes(a), fmt_bytes(b)),
            _ => "-".into(),
        };
        let _ = writeln!(
            o,
            "  {:<8} {:<16} {:>11} {:>11} {:>11} {:>13} {:>9}  {peaks}",
            d.device,
            "all",
            fmt_bytes(d.totals.reserved_bytes),
            fmt_bytes(d.totals.allocated_bytes),
            fmt_bytes(d.totals.inactive_bytes),
            fmt_bytes(d.totals.largest_free_block_bytes),
            d.totals.segments
        );
        for s in d.streams.iter().filter(|_| d.streams.len() > 1) {
            let _ = writeln!(
                o,
                "  {:<8} {:<16} {:>11} {:>11} {:>11} {:>13} {:>9}",
                "",
                stream_name(s.stream),
                fmt_bytes(s.totals.reserved_bytes),
                fmt_bytes(s.totals.allocated_bytes),
                fmt_bytes(s.totals.inactive_bytes),
                fmt_bytes(s.totals.largest_free_block_bytes),
                s.totals.segments
            );
        }
    }
}

fn pools_text(o: &mut String, r: &SnapshotReport) {
    let _ = writeln!(o);
    let _ = writeln!(o, "Segments by pool and size class:");
    let _ = writeln!(
        o,
        "  {:<10} {:<6} {:>9} {:>11} {:>11} {:>11} {:>13}",
        "pool", "class", "segments", "reserved", "allocated", "inactive", "largest free"
    );
    for p in &r.pools {
        let pool = if p.pool == [0, 0] {
            "default".to_string()
        } else {
            format!("({},{})", p.pool[0], p.pool[1])
        };
        let expandable = if p.expandable_segments > 0 {
            format!("  ({} expandable)", p.expandable_segments)
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "  {:<10} {:<6} {:>9} {:>11} {:>11} {:>11} {:>13}{expandable}",
            pool,
            p.segment_type,
            p.segments,
            fmt_bytes(p.reserved_bytes),
            fmt_bytes(p.allocated_bytes),
            fmt_bytes(p.inactive_bytes),
            fmt_bytes(p.largest_free_block_bytes)
        );
    }
}

fn sites_text(o: &mut String, r: &SnapshotReport, top: usize) {
    if top == 0 || r.top_sites.is_empty() {
        return;
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "Top allocation sites (live bytes):");
    for s in r.top_sites.iter().take(top) {
        let _ = writeln!(
            o,
            "  {:>11} {:>6} blocks  {}",
            fmt_bytes(s.bytes),
            s.blocks,
            s.site
        );
    }
}

fn trace_text(o: &mut String, r: &SnapshotReport) {
    if r.trace.entries == 0 {
        return;
    }
    let actions: Vec<String> = r
        .trace
        .actions
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let span = match (r.trace.first_time_us, r.trace.last_time_us) {
        (Some(a), Some(b)) => format!(" over {:.3} s", (b - a) as f64 / 1e6),
        _ => String::new(),
    };
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "Trace: {} entries{span}: {}",
        r.trace.entries,
        actions.join(", ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    // pickle.dumps({'segments': [one 20 MiB segment: 8 MiB allocated (requested 8000000),
    // 12 MiB inactive], 'device_traces': [[]]}, 2), written by CPython 3.11.
    const TINY_HEX: &[&str] = &[
        "80027d71002858080000007365676d656e747371015d71027d710328580600000064657669636571044b005807000000",
        "6164647265737371058a0600000000007f580a000000746f74616c5f73697a6571064a00004001580e000000616c6c6f",
        "63617465645f73697a6571074a00008000580b0000006163746976655f73697a6571084a00008000580e000000726571",
        "7565737465645f73697a6571094a00127a00580600000073747265616d710a4b00580c0000007365676d656e745f7479",
        "7065710b58050000006c61726765710c5806000000626c6f636b73710d5d710e287d710f2868058a0600000000007f58",
        "0400000073697a6571104a0000800068094a00127a0058050000007374617465711158100000006163746976655f616c",
        "6c6f63617465647112757d71132868058a0600008000007f68104a0000c00068094b0068115808000000696e61637469",
        "7665711475657561580d0000006465766963655f74726163657371155d71165d711761752e",
    ];

    fn tiny() -> Vec<u8> {
        let hex: String = TINY_HEX.concat();
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn summary_comes_first_with_numbers() {
        let a = snapshot::analyze_bytes(&tiny()).unwrap();
        let text = report_text("tiny.pickle", &a, 10);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("tiny.pickle: PyTorch memory snapshot"));
        assert!(
            lines[2].contains("reserved") && lines[2].contains("20.0 MiB"),
            "{text}"
        );
        assert!(
            lines[3].contains("allocated") && lines[3].contains("8.0 MiB"),
            "{text}"
        );
        assert!(text.contains("No OOM recorded"));
        assert!(text.find("Per device").unwrap() > text.find("largest free block").unwrap());
    }
}
