//! Python source → logical lines of tokens, as Python splits them: brackets continue a line,
//! `\` continues it, `;` separates statements, comments are dropped. Strings take their
//! prefixes (`r`, `b`, `u`, `f`; an f-string stays marked as one) and triple quotes.

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Name(String),
    Str(String),
    FStr(String),
    Num(String),
    Op(&'static str),
}

const OPS: &[&str] = &[
    "**=", "//=", ">>=", "<<=", "...", "**", "//", "==", "!=", "<=", ">=", "->", ":=", "+=", "-=",
    "*=", "/=", "%=", "&=", "|=", "^=", "@=", "<<", ">>", "(", ")", "[", "]", "{", "}", ",", ":",
    "=", ".", "+", "-", "*", "/", "%", "@", "<", ">", "!", "~", "&", "|", "^",
];

/// Split source into logical lines of tokens.
pub(super) fn lex(src: &str) -> Vec<Vec<Tok>> {
    let b: Vec<char> = src.chars().collect();
    let (mut i, mut depth) = (0usize, 0usize);
    let mut lines: Vec<Vec<Tok>> = Vec::new();
    let mut cur: Vec<Tok> = Vec::new();
    let end_line = |cur: &mut Vec<Tok>, lines: &mut Vec<Vec<Tok>>| {
        if !cur.is_empty() {
            lines.push(std::mem::take(cur));
        }
    };
    while i < b.len() {
        let c = b[i];
        if c == '#' {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '\\' && b.get(i + 1) == Some(&'\n') {
            i += 2;
            continue;
        }
        if c == '\n' || c == ';' {
            if depth == 0 {
                end_line(&mut cur, &mut lines);
            }
            i += 1;
            continue;
        }
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        // string, with an optional prefix (r, b, u, f and pairs)
        let mut j = i;
        while j < b.len() && j - i < 2 && "rRbBuUfF".contains(b[j]) {
            j += 1;
        }
        if j < b.len() && (b[j] == '"' || b[j] == '\'') {
            let prefix: String = b[i..j].iter().collect::<String>().to_ascii_lowercase();
            let q = b[j];
            let triple = b.get(j + 1) == Some(&q) && b.get(j + 2) == Some(&q);
            let mut k = if triple { j + 3 } else { j + 1 };
            let mut s = String::new();
            let raw = prefix.contains('r');
            loop {
                if k >= b.len() {
                    break;
                }
                if triple {
                    if b[k] == q && b.get(k + 1) == Some(&q) && b.get(k + 2) == Some(&q) {
                        k += 3;
                        break;
                    }
                } else if b[k] == q || b[k] == '\n' {
                    k += 1;
                    break;
                }
                if b[k] == '\\' && !raw && k + 1 < b.len() {
                    s.push(match b[k + 1] {
                        'n' => '\n',
                        't' => '\t',
                        other => other,
                    });
                    k += 2;
                    continue;
                }
                s.push(b[k]);
                k += 1;
            }
            cur.push(if prefix.contains('f') {
                Tok::FStr(s)
            } else {
                Tok::Str(s)
            });
            i = k;
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let mut k = i;
            while k < b.len() && (b[k].is_alphanumeric() || b[k] == '_') {
                k += 1;
            }
            cur.push(Tok::Name(b[i..k].iter().collect()));
            i = k;
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit())) {
            let mut k = i;
            while k < b.len()
                && (b[k].is_ascii_alphanumeric()
                    || b[k] == '.'
                    || b[k] == '_'
                    || ((b[k] == '+' || b[k] == '-') && matches!(b[k - 1], 'e' | 'E')))
            {
                k += 1;
            }
            cur.push(Tok::Num(b[i..k].iter().filter(|c| **c != '_').collect()));
            i = k;
            continue;
        }
        let rest: String = b[i..(i + 3).min(b.len())].iter().collect();
        match OPS.iter().find(|op| rest.starts_with(**op)) {
            Some(op) => {
                match *op {
                    "(" | "[" | "{" => depth += 1,
                    ")" | "]" | "}" => depth = depth.saturating_sub(1),
                    _ => {}
                }
                cur.push(Tok::Op(op));
                i += op.chars().count();
            }
            None => i += 1, // `$`, `?` and the like: not Python, skipped
        }
    }
    end_line(&mut cur, &mut lines);
    lines
}
