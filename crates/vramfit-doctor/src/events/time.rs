//! Timestamps at the start of log lines, to tell how long the process had been running when it
//! failed: seconds after start-up is loading or warm-up, hours later is steady state.
//!
//! Formats read (the engines' own loggers): vLLM `INFO 12-20 20:25:46` (month-day, no year),
//! ISO `2024-11-06 23:41:06` / `2024-11-06T23:41:06` (SGLang, ComfyUI, Ollama's `time=`),
//! llama.cpp's `3.02.042.178 I` (minutes.seconds since start), and dmesg's `[26002.108918]`
//! (seconds since boot). Lines may carry a process prefix (`(VllmWorker rank=1 pid=9) `,
//! `vllm-1  | `).

use std::sync::LazyLock;

use regex::Regex;

static ISO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})").expect("static regex")
});
static VLLM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) (\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})")
        .expect("static regex")
});
static DMESG: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*\[\s*(\d{1,9})\.\d{3,6}\]").expect("static regex"));

/// The format of a timestamp and its seconds on that format's own scale (approximate across
/// month ends: months count as 31 days). Only stamps of one format are compared.
fn stamp(line: &str) -> Option<(u8, i64)> {
    let mut end = line.len().min(160);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    let head = &line[..end];
    let n = |s: &str| s.parse::<i64>().ok();
    if let Some(c) = ISO.captures(head) {
        let (y, mo, d) = (n(&c[1])?, n(&c[2])?, n(&c[3])?);
        let days = y * 372 + mo * 31 + d;
        return Some((
            0,
            days * 86_400 + n(&c[4])? * 3600 + n(&c[5])? * 60 + n(&c[6])?,
        ));
    }
    if let Some(c) = VLLM.captures(head) {
        let days = n(&c[1])? * 31 + n(&c[2])?;
        return Some((
            1,
            days * 86_400 + n(&c[3])? * 3600 + n(&c[4])? * 60 + n(&c[5])?,
        ));
    }
    if let Some(c) = DMESG.captures(head) {
        return Some((2, n(&c[1])?));
    }
    None
}

/// Seconds from the first timestamped line to the last timestamped line at or before
/// `line_no` (1-based). None when fewer than two lines carry a timestamp of one format.
pub fn elapsed(text: &str, line_no: usize) -> Option<i64> {
    let lines: Vec<&str> = text.lines().take(line_no.max(1)).collect();
    // the first stamp (searched from the top), then the last one of the same format before
    // the failure (searched upwards from it): a few lines of regex work, not the whole log
    let (i0, (fmt, first)) = lines
        .iter()
        .enumerate()
        .take(5_000)
        .find_map(|(i, l)| stamp(l).map(|s| (i, s)))?;
    let last = lines[i0..]
        .iter()
        .rev()
        .take(5_000)
        .find_map(|l| stamp(l).filter(|(f, _)| *f == fmt).map(|(_, t)| t))?;
    let d = last - first;
    (d >= 0).then_some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_iso_and_dmesg() {
        let log = "INFO 12-20 20:25:46 worker.py:241] budget\nINFO 12-20 23:40:00 x\nERROR 12-21 01:25:46 core.py] oom";
        assert_eq!(elapsed(log, 3), Some(5 * 3600));
        assert_eq!(elapsed(log, 1), Some(0));
        let log = "[2024-11-06 23:41:06.473] start\n[2024-11-07 00:41:06.473] fail";
        assert_eq!(elapsed(log, 2), Some(3600));
        assert_eq!(
            elapsed("[26002.108918] oom-kill\n[26012.100000] x", 2),
            Some(10)
        );
        assert_eq!(elapsed("no stamps here", 1), None);
        // formats are not mixed: vLLM's month-day stamp and an ISO date on a later line
        let log =
            "INFO 02-03 03:43:49 model_runner.py] x\nengine.py :190 2024-02-03 03:44:03,976 Error";
        assert_eq!(elapsed(log, 2), Some(0));
    }
}
