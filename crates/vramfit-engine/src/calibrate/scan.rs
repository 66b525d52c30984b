//! Small text scanners shared by the log readers: numbers after a marker, sizes in GiB/MiB,
//! Python-repr keyword values, and the worker tag that prefixes a vLLM line.

/// The lines of `text` holding a match of `anchors` (an alternation of the literal markers a
/// reader looks for), each once, in order. A regex over the whole text finds them in one pass,
/// so a long log of request traffic costs a scan, not a line-by-line parse.
pub fn matching_lines<'a>(text: &'a str, anchors: &regex::Regex) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut last_end = 0usize;
    for m in anchors.find_iter(text) {
        if m.start() < last_end {
            continue;
        }
        let start = text[..m.start()].rfind('\n').map(|i| i + 1).unwrap_or(0);
        let end = text[m.end()..]
            .find('\n')
            .map(|i| m.end() + i)
            .unwrap_or(text.len());
        out.push(text[start..end].trim_end_matches('\r'));
        last_end = end;
    }
    out
}

/// An alternation of literal markers, compiled once by the caller.
pub fn anchors(markers: &[&str]) -> regex::Regex {
    let alt: Vec<String> = markers.iter().map(|m| regex::escape(m)).collect();
    regex::Regex::new(&alt.join("|")).expect("literal alternation")
}

/// The number that starts `s` (after spaces): `1,192,160`, `31.83`, `-0.03`, `0.92`.
pub fn leading_number(s: &str) -> Option<f64> {
    let s = s.trim_start();
    let mut end = 0;
    for (i, c) in s.char_indices() {
        if c.is_ascii_digit() || c == '.' || c == ',' || (i == 0 && (c == '-' || c == '+')) {
            end = i + c.len_utf8();
        } else {
            break;
        }
    }
    let t: String = s[..end].chars().filter(|&c| c != ',').collect();
    let t = t.trim_end_matches('.');
    t.parse().ok().filter(|x: &f64| x.is_finite())
}

/// The number right after the first occurrence of `marker` in `line`.
pub fn number_after(line: &str, marker: &str) -> Option<f64> {
    let at = line.find(marker)?;
    leading_number(&line[at + marker.len()..])
}

/// A size after `marker` with its unit (`31.83 GiB`, `4403.49 MiB`, `21.21GiB`, `8.23 GB`) in
/// bytes. GB/MB are read as GiB/MiB: vLLM and SGLang divide by 2^30 and print "GB" in places.
pub fn size_after(line: &str, marker: &str) -> Option<u64> {
    let at = line.find(marker)?;
    let rest = line[at + marker.len()..].trim_start();
    let x = leading_number(rest)?;
    let num_len = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ',' || c == '-'))
        .unwrap_or(rest.len());
    let unit = rest[num_len..].trim_start();
    let mult = if unit.starts_with("GiB") || unit.starts_with("GB") {
        (1u64 << 30) as f64
    } else if unit.starts_with("MiB") || unit.starts_with("MB") {
        (1u64 << 20) as f64
    } else if unit.starts_with("KiB") || unit.starts_with("KB") {
        1024.0
    } else {
        return None;
    };
    (x >= 0.0).then(|| (x * mult).round() as u64)
}

/// `key=value` inside a Python repr (`max_seq_len=16384, quantization=fp8,`), quotes removed.
pub fn kw_value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("{key}=");
    let mut from = 0;
    while let Some(i) = line[from..].find(&pat) {
        let at = from + i;
        // the key must start a word: `tensor_parallel_size=` must not match `data_tensor_parallel_size=`
        let ok = at == 0
            || !line[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        if ok {
            let rest = &line[at + pat.len()..];
            return Some(value_token(rest));
        }
        from = at + pat.len();
    }
    None
}

/// `'key': value` inside a Python dict repr (vLLM's `non-default args: {...}`).
pub fn dict_value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("'{key}': ");
    let at = line.find(&pat)?;
    Some(value_token(&line[at + pat.len()..]))
}

fn value_token(rest: &str) -> &str {
    let rest = rest.trim_start();
    if let Some(q) = rest.chars().next().filter(|c| *c == '\'' || *c == '"') {
        let body = &rest[1..];
        return body.split(q).next().unwrap_or("");
    }
    if rest.starts_with('[') {
        // a list: its first element (served_model_name=['a', 'b'])
        let inner = rest[1..].split(']').next().unwrap_or("");
        return value_token(inner.split(',').next().unwrap_or(""));
    }
    let end = rest
        .find(|c: char| c == ',' || c == ')' || c == '}' || c.is_whitespace())
        .unwrap_or(rest.len());
    &rest[..end]
}

/// Remove ANSI colour escapes (`\x1b[0;36m`), which docker and tty logs keep.
pub fn strip_ansi(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.contains('\u{1b}') {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The process tag vLLM prefixes (`(VllmWorker TP0 pid=3974)`, `(Worker_TP1 pid=165)`,
/// `(EngineCore_0 pid=3902)`, `(APIServer pid=1)`): (role with rank, pid).
pub fn process_tag(line: &str) -> Option<(&str, &str)> {
    let open = line.find('(')?;
    let close = open + line[open..].find(')')?;
    let inner = &line[open + 1..close];
    let pid_at = inner.rfind("pid=")?;
    let role = inner[..pid_at].trim();
    let pid = inner[pid_at + 4..].trim();
    (!pid.is_empty() && pid.chars().all(|c| c.is_ascii_digit())).then_some((role, pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_sizes() {
        assert_eq!(
            number_after("GPU KV cache size: 1,192,160 tokens", "GPU KV cache size:"),
            Some(1192160.0)
        );
        assert_eq!(
            size_after("Available KV cache memory: 31.83 GiB", "memory:"),
            Some((31.83 * (1u64 << 30) as f64).round() as u64)
        );
        assert_eq!(
            size_after("model weights take 21.21GiB; non_torch", "weights take"),
            Some((21.21 * (1u64 << 30) as f64).round() as u64)
        );
        assert_eq!(size_after("took -0.03 GiB", "took"), None);
        assert_eq!(
            kw_value(
                "x, tensor_parallel_size=4, pipeline_parallel_size=1,",
                "tensor_parallel_size"
            ),
            Some("4")
        );
        assert_eq!(kw_value("model='a/b', tok", "model"), Some("a/b"));
        assert_eq!(
            dict_value(
                "{'model_tag': 'm', 'max_model_len': 16384, 'x': 1}",
                "max_model_len"
            ),
            Some("16384")
        );
        assert_eq!(
            process_tag("(VllmWorker TP0 pid=3974) INFO 09-03 ..."),
            Some(("VllmWorker TP0", "3974"))
        );
        assert_eq!(
            strip_ansi("\u{1b}[1;36m(APIServer pid=1)\u{1b}[0;0m INFO"),
            "(APIServer pid=1) INFO"
        );
    }
}
