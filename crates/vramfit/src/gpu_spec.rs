//! `--gpu SPEC` and `--gpu-free LIST`: `[N x] NAME_OR_SIZE`, comma-separated for mixed cards
//! (`"4090,3090"`, `"2x RTX 3090"`, `"79.25GiB"`). Names match the GPU catalog loosely.

use crate::error::CliError;
use vramfit_engine::{Gpu, Hardware};
use vramfit_model::catalog::find_gpu;
use vramfit_model::units::{fmt_bytes, parse_size};

/// The largest memory one GPU is believed to have: a size above it is a typo (`24TiB`), not a
/// card (the largest in the catalog holds 288 GB; this leaves room for a few generations).
const MAX_GPU_BYTES: u64 = 2 << 40;

/// Full-width forms (`ＲＴＸ ４０９０`, U+FF01..U+FF5E) and the ideographic space read as their
/// ASCII letters, as Unicode NFKC normalizes them; any other non-ASCII character is refused,
/// because GPU names are ASCII and a guess from a foreign script would be a silent pick.
fn fold_ascii(flag: &str, text: &str) -> Result<String, CliError> {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let c = match c {
            '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
            '\u{3000}' | '\u{00A0}' => ' ',
            c => c,
        };
        if !c.is_ascii() {
            return Err(CliError::input(format!(
                "{flag} '{text}': the character '{c}' is not part of any GPU name; write the name in ASCII (e.g. \"RTX 4090\") or give the memory size (24GiB)"
            )));
        }
        out.push(c);
    }
    Ok(out)
}

/// A memory size given on the command line: positive, with a unit, and plausible for one GPU.
fn gpu_size(flag: &str, text: &str) -> Result<u64, CliError> {
    let t = text.trim();
    if t.starts_with(['-', '+']) {
        return Err(CliError::input(format!(
            "{flag} '{t}': a memory size is a positive amount such as 24GiB"
        )));
    }
    let bytes = parse_size(t).map_err(|e| CliError::input(format!("{flag}: {e}")))?;
    if bytes > MAX_GPU_BYTES {
        return Err(CliError::input(format!(
            "{flag} '{t}' is {}: more than any one GPU holds; give the memory of one card, e.g. 80GiB",
            fmt_bytes(bytes)
        )));
    }
    Ok(bytes)
}

/// One `--gpu` entry expanded to its cards.
fn parse_one(entry: &str) -> Result<Vec<Gpu>, CliError> {
    let folded = fold_ascii("--gpu", entry)?;
    let e = folded.trim();
    if e.is_empty() {
        return Err(CliError::input(
            "--gpu has an empty entry: write e.g. --gpu \"2x RTX 3090\" or --gpu 24GiB",
        ));
    }
    // "2x RTX 3090", "2 x 4090", "4xA100-80G"
    let (count, rest) = match e.find(['x', 'X']) {
        Some(i)
            if i > 0
                && e[..i].trim().chars().all(|c| c.is_ascii_digit())
                && !e[..i].trim().is_empty() =>
        {
            let n: usize = e[..i]
                .trim()
                .parse()
                .map_err(|_| CliError::input(format!("--gpu '{e}': bad count")))?;
            (n, e[i + 1..].trim())
        }
        _ => (1, e),
    };
    if count == 0 || count > 64 {
        return Err(CliError::input(format!(
            "--gpu '{e}': a count of {count} GPUs is not supported (1 to 64)"
        )));
    }
    let signed =
        rest.starts_with(['-', '+']) && rest[1..].starts_with(|c: char| c.is_ascii_digit());
    let bare_number = rest.parse::<f64>().is_ok_and(|n| n < 1000.0);
    if rest.is_empty() || bare_number {
        return Err(CliError::input(format!(
            "--gpu '{e}': give a GPU name (\"RTX 4090\") or a memory size with its unit (24GiB)"
        )));
    }
    let gpu = if signed
        || (rest.starts_with(|c: char| c.is_ascii_digit())
            && parse_size(rest).is_ok()
            && rest.chars().any(|c| c.is_ascii_alphabetic()))
    {
        let bytes = gpu_size("--gpu", rest)?;
        if bytes < (256 << 20) {
            return Err(CliError::input(format!(
                "--gpu '{rest}' is {}: too small for a GPU; write e.g. 24GiB",
                fmt_bytes(bytes)
            )));
        }
        Gpu {
            name: format!("{} GPU", fmt_bytes(bytes)),
            total_bytes: bytes,
            free_bytes: bytes,
            bandwidth_gbps: None,
            compute_capability: None,
            unified: false,
        }
    } else if let Some(g) = unified_with_size(rest)? {
        g
    } else {
        let g = find_gpu(rest).map_err(|e| CliError::input(format!("--gpu: {e}")))?;
        Gpu::from_catalog(g)
    };
    Ok(vec![gpu; count])
}

/// `M2 Max 32GB`, `Apple M4 Pro 48 GB`, `Strix Halo 64GB`: a unified-memory machine with its
/// memory configuration (the catalog entry holds the largest one). Macs are sold in binary
/// sizes, so `32GB` is 32 GiB. None when the text does not end in a size or names no
/// unified-memory machine.
fn unified_with_size(text: &str) -> Result<Option<Gpu>, CliError> {
    let t = text.trim();
    let digits_at = t
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
        .map(|i| i + 1)
        .unwrap_or(0);
    let (name, size) = t.split_at(digits_at);
    let (name, size) = if size.chars().all(|c| c.is_ascii_alphabetic()) {
        // "M2 Max 32 GB": the number is the word before the unit
        let n = name.trim_end();
        match n.rfind(' ') {
            Some(i) => (&n[..i], format!("{}{size}", &n[i + 1..])),
            None => return Ok(None),
        }
    } else {
        (name, size.to_string())
    };
    let lower = size.to_ascii_lowercase();
    let Some(num) = ["gib", "gb", "g"]
        .iter()
        .find_map(|u| lower.strip_suffix(u))
        .and_then(|n| n.parse::<f64>().ok())
        .filter(|n| *n >= 1.0 && *n <= 4096.0)
    else {
        return Ok(None);
    };
    let Ok(cat) = find_gpu(name.trim()) else {
        return Ok(None);
    };
    if !cat.unified_memory {
        return Ok(None);
    }
    let most = cat.memory_marketing_gb;
    if num > most + 0.5 {
        return Err(CliError::input(format!(
            "--gpu '{t}': {} comes with at most {most} GB: give the machine's memory (e.g. \"{} {most}GB\")",
            cat.name,
            name.trim(),
        )));
    }
    if num > most - 0.5 {
        // the catalog's own configuration (its measured total where it has one)
        return Ok(Some(Gpu::from_catalog(cat)));
    }
    let bytes = (num * (1u64 << 30) as f64) as u64;
    let mut c = cat.clone();
    c.memory_bytes = bytes;
    let mut g = Gpu::from_catalog(&c);
    g.name = format!("{} {}GB", cat.name, bytes >> 30);
    Ok(Some(g))
}

/// Parse `--gpu` and apply `--gpu-free`.
pub fn hardware(spec: Option<&str>, free: Option<&str>) -> Result<Hardware, CliError> {
    if spec.is_some_and(|s| matches!(s.trim().to_ascii_lowercase().as_str(), "none" | "cpu")) {
        if free.is_some() {
            return Err(CliError::input(
                "--gpu-free has no GPU to apply to with --gpu none: drop it",
            ));
        }
        return Ok(cpu_only());
    }
    let mut gpus = match spec {
        Some(spec) => {
            let mut gpus = Vec::new();
            for entry in spec.split(',') {
                gpus.extend(parse_one(entry)?);
            }
            gpus
        }
        None => nvml_gpus().ok_or_else(|| {
            CliError::input(
                "no --gpu given and no GPU found through NVML: say which GPUs to plan for, e.g. --gpu \"RTX 4090\" or --gpu \"2x A100-80G\" or --gpu 24GiB",
            )
        })?,
    };
    if let Some(free) = free {
        let vals: Vec<&str> = free.split(',').map(str::trim).collect();
        if vals.len() != gpus.len() && vals.len() != 1 {
            return Err(CliError::input(format!(
                "--gpu-free has {} values for {} GPUs: give one per GPU in order, or one for all",
                vals.len(),
                gpus.len()
            )));
        }
        for (i, g) in gpus.iter_mut().enumerate() {
            let v = vals[if vals.len() == 1 { 0 } else { i }];
            let b = gpu_size("--gpu-free", v)?;
            if b > g.total_bytes {
                return Err(CliError::input(format!(
                    "--gpu-free '{v}' is more than the {} of GPU {i} ({}): give the free memory nvidia-smi shows, or --gpu SIZE for a card with more",
                    fmt_bytes(g.total_bytes),
                    g.name
                )));
            }
            g.free_bytes = b;
        }
    }
    Ok(Hardware {
        gpus,
        host_ram_bytes: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        let hw = hardware(Some("2x RTX 3090"), None).unwrap();
        assert_eq!(hw.gpus.len(), 2);
        let hw = hardware(Some("79.25GiB"), Some("78.84GiB")).unwrap();
        assert_eq!(
            hw.gpus[0].free_bytes,
            (78.84 * (1u64 << 30) as f64).round() as u64
        );
        let hw = hardware(Some("RTX 4090,RTX 5090"), Some("9862MiB,31518MiB")).unwrap();
        assert_eq!(hw.gpus[1].free_bytes, 31518 << 20);
        assert!(hardware(Some("RTX 9999 Super Ultra"), None).is_err());
        assert!(hardware(None, None).unwrap_err().message.contains("--gpu"));
        assert!(hardware(Some("2x 4090"), Some("1G,2G,3G")).is_err());
    }

    #[test]
    fn unified_machines_take_their_memory_configuration() {
        const GIB: u64 = 1 << 30;
        // a 32 GB M2 Max: the GPU may wire two thirds of it (≤ 32 GiB: 2/3)
        let m = &hardware(Some("M2 Max 32GB"), None).unwrap().gpus[0];
        assert_eq!(m.name, "Apple M2 Max 32GB");
        assert!(m.unified);
        assert_eq!(m.total_bytes, 32 * GIB / 3 * 2);
        assert_eq!(vramfit_engine::hardware::unified_pool(m), Some(32 * GIB));
        let spaced = &hardware(Some("Apple M4 Pro 48 GB"), None).unwrap().gpus[0];
        assert_eq!(spaced.total_bytes, 48 * GIB / 4 * 3);
        // the catalog's own (largest) configuration keeps its total
        let full = hardware(Some("DGX Spark 128GB"), None).unwrap();
        assert_eq!(
            full.gpus[0].total_bytes,
            hardware(Some("DGX Spark"), None).unwrap().gpus[0].total_bytes
        );
        let e = hardware(Some("M2 Max 256GB"), None).unwrap_err().message;
        assert!(e.contains("at most 96 GB"), "{e}");
        // a discrete card with a size is left to the catalog's matching
        assert!(hardware(Some("RTX 4090 24GB"), None).is_ok_and(|h| !h.gpus[0].unified));
    }
}

/// A CPU-only machine: no GPU, this host's available RAM as the budget (Linux /proc/meminfo
/// MemAvailable; unknown elsewhere).
pub fn cpu_only() -> Hardware {
    let ram = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find(|l| l.starts_with("MemAvailable:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb * 1024)
    });
    Hardware {
        gpus: vec![],
        host_ram_bytes: ram,
    }
}

/// The GPUs NVML sees, with their live free memory (other tenants count). The total is what
/// CUDA reports (`cudaMemGetInfo`, which vLLM's utilization multiplies and torch calls
/// total_memory): NVML's used + free, without the memory the driver reserves, which NVML's v2
/// memory info adds to its total (an H100 80GB HBM3 on driver 580: NVML 85,520,809,984 bytes,
/// CUDA 85,017,493,504). None when NVML is not there.
pub fn nvml_gpus() -> Option<Vec<Gpu>> {
    let mut sampler =
        vramfit_watch::sampler::NvmlSampler::new(std::time::Duration::from_secs(1)).ok()?;
    let tick = sampler.sample_now().ok()?;
    if tick.gpus.is_empty() {
        return None;
    }
    Some(
        tick.gpus
            .iter()
            .map(|s| {
                let name = s.name.clone().unwrap_or_else(|| "GPU".into());
                let cat = vramfit_model::catalog::find_gpu(&name).ok();
                let free = s
                    .free_bytes
                    .unwrap_or(s.total_bytes - s.used_bytes.min(s.total_bytes));
                Gpu {
                    name,
                    total_bytes: (s.used_bytes + free).min(s.total_bytes),
                    free_bytes: free,
                    bandwidth_gbps: cat.map(|c| c.bandwidth_gbps),
                    compute_capability: cat
                        .and_then(|c| c.compute_capability.as_deref())
                        .and_then(|c| c.parse().ok()),
                    unified: cat.is_some_and(|c| c.unified_memory),
                }
            })
            .collect(),
    )
}
