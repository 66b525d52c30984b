//! A small reader for the Prometheus text exposition format (version 0.0.4), enough for engine
//! `/metrics` pages: sample lines with labels and a value; comments, timestamps and exemplars are
//! skipped.
//!
//! Why not a crate: `prometheus-parse` pulls in regex, chrono and lazy_static for what is ~100
//! lines here, and the full client crates (`prometheus`, `prometheus-client`) are for producing
//! metrics, not reading them. A line we cannot read is skipped, never fatal: an engine adding a
//! metric we do not know must not stop the watch.

/// One sample line: `name{label="value",...} value`.
#[derive(Debug, Clone, PartialEq)]
pub struct PromSample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl PromSample {
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses a whole page; unreadable lines are dropped.
pub fn parse(text: &str) -> Vec<PromSample> {
    text.lines().filter_map(parse_line).collect()
}

/// Parses one sample line; `None` for comments, blanks and malformed lines.
pub fn parse_line(line: &str) -> Option<PromSample> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line.find(|c: char| c == '{' || c.is_whitespace())?;
    let name = &line[..name_end];
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    {
        return None;
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if rest.starts_with('{') {
        let (parsed, after) = parse_labels(&rest[1..])?;
        labels = parsed;
        rest = after;
    }
    let value_text = rest.split_whitespace().next()?;
    let value = parse_value(value_text)?;
    Some(PromSample {
        name: name.to_string(),
        labels,
        value,
    })
}

fn parse_value(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => s.parse().ok(),
    }
}

/// Reads `key="value",...}` and returns the labels and what follows the closing brace.
fn parse_labels(mut s: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut labels = Vec::new();
    loop {
        s = s.trim_start();
        if let Some(after) = s.strip_prefix('}') {
            return Some((labels, after));
        }
        let eq = s.find('=')?;
        let key = s[..eq].trim().to_string();
        s = s[eq + 1..].trim_start().strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = s.char_indices();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '"' => break i,
                '\\' => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                c => value.push(c),
            }
        };
        labels.push((key, value));
        s = s[end + 1..].trim_start();
        if let Some(after) = s.strip_prefix(',') {
            s = after;
        }
    }
}

/// Escapes a label value for writing (backslash, double quote, newline).
pub fn escape_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_labels_escapes_and_special_values() {
        let page = "# HELP x y\n# TYPE vllm:num_requests_running gauge\n\
            vllm:num_requests_running{engine=\"0\",model_name=\"Qwen/Qwen3-8B\"} 12.0\n\
            odd{path=\"a\\\"b\\\\c\",} +Inf 1700000000\nbroken{x=\"1\" 3\nplain 4e3\n";
        let s = parse(page);
        assert_eq!(s.len(), 3, "{s:?}");
        assert_eq!(s[0].name, "vllm:num_requests_running");
        assert_eq!(s[0].label("model_name"), Some("Qwen/Qwen3-8B"));
        assert_eq!(s[0].value, 12.0);
        assert_eq!(s[1].label("path"), Some("a\"b\\c"));
        assert!(s[1].value.is_infinite());
        assert_eq!(s[2].value, 4000.0);
    }

    #[test]
    fn escape_round_trips() {
        let v = "py\"th\\on\nx";
        let line = format!("m{{name=\"{}\"}} 1", escape_label(v));
        assert_eq!(parse_line(&line).unwrap().label("name"), Some(v));
    }
}
