//! A reader for the small part of Python that configures an engine: imports, `NAME = value`
//! constants and calls with literal arguments. Nothing is executed. A value that is not a literal
//! (an f-string, `os.environ[...]`, `sys.argv`, a comprehension, a conditional) becomes
//! [`Py::Opaque`] carrying its source text, so the caller can name what it could not read.
//!
//! Logical lines are split as Python splits them (brackets continue a line, `\` continues it,
//! `;` separates statements); indentation is ignored, so calls inside `def main():` or
//! `if __name__ == "__main__":` are read too. Every loop is bounded by the token count and nesting
//! is capped, so no input makes the reader hang or overflow its stack.

use super::lex::{lex, Tok};
use std::collections::HashMap;

const MAX_DEPTH: usize = 48;

/// A value as far as it can be read without running the code.
#[derive(Debug, Clone, PartialEq)]
pub enum Py {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    None,
    /// a dotted name that is not a known constant (`torch.bfloat16`, `model_id`)
    Ref(String),
    List(Vec<Py>),
    Dict(Vec<(Py, Py)>),
    Call(Box<Call>),
    /// not readable statically; the source text
    Opaque(String),
}

/// A call: the callee as written with imports resolved (`vllm.LLM`, `model.generate`).
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub func: String,
    pub args: Vec<Py>,
    pub kwargs: Vec<(String, Py)>,
    /// `**name` splats (their keys cannot be read)
    pub splats: Vec<String>,
}

impl Call {
    pub fn kw(&self, name: &str) -> Option<&Py> {
        self.kwargs
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }
    /// The last segment of the callee: `from_pretrained`, `LLM`.
    pub fn name(&self) -> &str {
        self.func.rsplit('.').next().unwrap_or(&self.func)
    }
}

/// What a script holds: its calls in source order, its constants.
#[derive(Debug, Default)]
pub struct Script {
    pub calls: Vec<Call>,
    pub constants: HashMap<String, Py>,
}

/// Read a script: imports, constants, every call.
pub fn read(src: &str) -> Script {
    let mut script = Script::default();
    let mut aliases: HashMap<String, String> = HashMap::new();
    for line in lex(src) {
        if let Some(Tok::Name(k)) = line.first() {
            if k == "import" || k == "from" {
                read_import(&line, &mut aliases);
                continue;
            }
        }
        // `NAME = value` and `NAME: type = value`
        let assign_at = match (line.first(), line.get(1)) {
            (Some(Tok::Name(_)), Some(Tok::Op("="))) => Some(2),
            (Some(Tok::Name(_)), Some(Tok::Op(":"))) => {
                line.iter().position(|t| *t == Tok::Op("=")).map(|p| p + 1)
            }
            _ => None,
        };
        if let (Some(at), Some(Tok::Name(name))) = (assign_at, line.first()) {
            let mut p = Parser {
                t: &line,
                i: at,
                al: &aliases,
                k: &script.constants,
                depth: 0,
                found: Vec::new(),
            };
            let v = p.expr();
            if p.i >= line.len() {
                script.constants.insert(name.clone(), v);
            } else {
                script
                    .constants
                    .insert(name.clone(), Py::Opaque(text(&line[at..])));
            }
        }
        // every call on the line (nested ones and `X(...).to(...)` chains included)
        let mut start = 0;
        while start < line.len() {
            let is_callee = matches!(line[start], Tok::Name(_))
                && (start == 0 || line[start - 1] != Tok::Op("."));
            let mut k = start;
            while matches!(line.get(k + 1), Some(Tok::Op(".")))
                && matches!(line.get(k + 2), Some(Tok::Name(_)))
            {
                k += 2;
            }
            if !is_callee || line.get(k + 1) != Some(&Tok::Op("(")) {
                start += 1;
                continue;
            }
            let mut p = Parser {
                t: &line,
                i: start,
                al: &aliases,
                k: &script.constants,
                depth: 0,
                found: Vec::new(),
            };
            let _ = p.primary();
            script.calls.append(&mut p.found);
            start = p.i.max(start + 1);
        }
    }
    script
}

fn read_import(line: &[Tok], aliases: &mut HashMap<String, String>) {
    let names: Vec<String> = line
        .iter()
        .map(|t| match t {
            Tok::Name(n) => n.clone(),
            Tok::Op(o) => o.to_string(),
            _ => String::new(),
        })
        .filter(|s| s != "(" && s != ")")
        .collect();
    let (module, rest) = if names[0] == "from" {
        let imp = names
            .iter()
            .position(|n| n == "import")
            .unwrap_or(names.len());
        (names[1..imp].concat(), &names[(imp + 1).min(names.len())..])
    } else {
        (String::new(), &names[1..])
    };
    for item in rest.split(|n| n == ",") {
        let (full, alias) = match item {
            [n, a, al] if a == "as" => (n.clone(), al.clone()),
            parts if !parts.is_empty() => (parts.concat(), parts.concat()),
            _ => continue,
        };
        let alias = alias.split('.').next().unwrap_or(&alias).to_string();
        let target = if module.is_empty() {
            full
        } else {
            format!("{module}.{full}")
        };
        let target = if module.is_empty() && !item.contains(&"as".to_string()) {
            alias.clone()
        } else {
            target
        };
        aliases.insert(alias, target);
    }
}

fn text(toks: &[Tok]) -> String {
    let mut s = String::new();
    for t in toks {
        let w = match t {
            Tok::Name(n) | Tok::Num(n) => n.clone(),
            Tok::Str(x) => format!("{x:?}"),
            Tok::FStr(x) => format!("f{x:?}"),
            Tok::Op(o) => o.to_string(),
        };
        if !s.is_empty()
            && !matches!(t, Tok::Op("." | ")" | "]" | "," | "(" | "["))
            && !s.ends_with(['.', '(', '['])
        {
            s.push(' ');
        }
        s.push_str(&w);
    }
    s
}

struct Parser<'a> {
    t: &'a [Tok],
    i: usize,
    al: &'a HashMap<String, String>,
    k: &'a HashMap<String, Py>,
    depth: usize,
    /// every call parsed, inner ones first
    found: Vec<Call>,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.t.get(self.i)
    }
    fn eat(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Op(o)) if *o == op) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    /// Skip to the end of the expression that starts at `from` and return it as opaque text.
    fn opaque_from(&mut self, from: usize) -> Py {
        let mut depth = 0usize;
        while let Some(t) = self.peek() {
            match t {
                Tok::Op("(" | "[" | "{") => depth += 1,
                Tok::Op(")" | "]" | "}") if depth == 0 => break,
                Tok::Op(")" | "]" | "}") => depth -= 1,
                Tok::Op(",") if depth == 0 => break,
                _ => {}
            }
            self.i += 1;
        }
        Py::Opaque(text(&self.t[from.min(self.i)..self.i]))
    }

    fn expr(&mut self) -> Py {
        let from = self.i;
        let v = self.arith();
        match self.peek() {
            None | Some(Tok::Op(")" | "]" | "}" | "," | ":")) => v,
            _ => self.opaque_from(from), // `x if c else y`, `a or b`, comparisons, ...
        }
    }

    fn arith(&mut self) -> Py {
        let mut v = self.term();
        loop {
            let plus = if self.eat("+") {
                true
            } else if self.eat("-") {
                false
            } else {
                return v;
            };
            let r = self.term();
            v = match (v, r, plus) {
                (Py::Int(a), Py::Int(b), true) => Py::Int(a.saturating_add(b)),
                (Py::Int(a), Py::Int(b), false) => Py::Int(a.saturating_sub(b)),
                (Py::Str(a), Py::Str(b), true) => Py::Str(a + &b),
                (a, b, p) => match (num(&a), num(&b)) {
                    (Some(x), Some(y)) => Py::Float(if p { x + y } else { x - y }),
                    _ => Py::Opaque("(arithmetic on values not known statically)".into()),
                },
            };
        }
    }

    fn term(&mut self) -> Py {
        let mut v = self.unary();
        loop {
            let op = ["*", "//", "/", "%"].into_iter().find(|o| self.eat(o));
            let Some(op) = op else { return v };
            let r = self.unary();
            v = match (v, r, op) {
                (Py::Int(a), Py::Int(b), "*") => Py::Int(a.saturating_mul(b)),
                (Py::Int(a), Py::Int(b), "//") if b != 0 => Py::Int(a.div_euclid(b)),
                (a, b, "/") => match (num(&a), num(&b)) {
                    (Some(x), Some(y)) if y != 0.0 => Py::Float(x / y),
                    _ => Py::Opaque("(division of values not known statically)".into()),
                },
                (a, b, "*") => match (num(&a), num(&b)) {
                    (Some(x), Some(y)) => Py::Float(x * y),
                    _ => Py::Opaque("(product of values not known statically)".into()),
                },
                _ => Py::Opaque("(arithmetic on values not known statically)".into()),
            };
        }
    }

    fn unary(&mut self) -> Py {
        self.depth += 1;
        let v = if self.depth > MAX_DEPTH {
            self.i = self.t.len();
            Py::Opaque("(nested too deeply)".into())
        } else {
            self.unary_inner()
        };
        self.depth -= 1;
        v
    }

    fn unary_inner(&mut self) -> Py {
        if self.eat("-") {
            return match self.unary() {
                Py::Int(n) => Py::Int(n.saturating_neg()),
                Py::Float(f) => Py::Float(-f),
                _ => Py::Opaque("(negation of a value not known statically)".into()),
            };
        }
        if self.eat("+") {
            return self.unary();
        }
        let v = self.primary();
        if self.eat("**") {
            let e = self.unary();
            return match (v, e) {
                (Py::Int(a), Py::Int(b)) if (0..=62).contains(&b) => {
                    Py::Int(a.saturating_pow(b as u32))
                }
                (a, b) => match (num(&a), num(&b)) {
                    (Some(x), Some(y)) => Py::Float(x.powf(y)),
                    _ => Py::Opaque("(power of values not known statically)".into()),
                },
            };
        }
        v
    }

    fn primary(&mut self) -> Py {
        let from = self.i;
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.i = self.t.len();
            return Py::Opaque("(nested too deeply)".into());
        }
        let mut v = self.atom();
        loop {
            if self.eat(".") {
                match (self.peek().cloned(), &v) {
                    (Some(Tok::Name(n)), Py::Ref(base)) => {
                        v = Py::Ref(format!("{base}.{n}"));
                        self.i += 1;
                    }
                    (Some(Tok::Name(n)), Py::Call(c)) => {
                        // a method on a call's result: `X.from_pretrained(...).to("cuda")`
                        v = Py::Ref(format!("{}().{n}", c.func));
                        self.i += 1;
                    }
                    _ => {
                        v = self.opaque_from(from);
                        break;
                    }
                }
            } else if self.eat("(") {
                let func = match &v {
                    Py::Ref(f) => resolve_alias(f, self.al),
                    _ => "(expression)".to_string(),
                };
                let c = self.call_args(func);
                self.found.push(c.clone());
                v = Py::Call(Box::new(c));
            } else if self.eat("[") {
                let _ = self.opaque_from(self.i);
                self.eat("]");
                v = Py::Opaque(text(&self.t[from..self.i]));
            } else {
                break;
            }
        }
        self.depth -= 1;
        v
    }

    fn call_args(&mut self, func: String) -> Call {
        let mut c = Call {
            func,
            args: Vec::new(),
            kwargs: Vec::new(),
            splats: Vec::new(),
        };
        while self.i < self.t.len() {
            if self.eat(")") {
                return c;
            }
            if self.eat("**") {
                let v = self.expr();
                c.splats.push(match v {
                    Py::Ref(n) => n,
                    other => format!("{other:?}"),
                });
            } else if self.eat("*") {
                let _ = self.expr();
                c.args.push(Py::Opaque("*args".into()));
            } else if let (Some(Tok::Name(k)), Some(Tok::Op("="))) =
                (self.peek().cloned(), self.t.get(self.i + 1))
            {
                self.i += 2;
                let v = self.expr();
                c.kwargs.push((k, v));
            } else {
                let before = self.i;
                let v = self.expr();
                c.args.push(v);
                if self.i == before {
                    self.i += 1; // a token no rule takes: skip it rather than loop
                }
            }
            self.eat(",");
        }
        c
    }

    fn atom(&mut self) -> Py {
        let from = self.i;
        let Some(t) = self.peek().cloned() else {
            return Py::Opaque(String::new());
        };
        self.i += 1;
        match t {
            Tok::Num(n) => n
                .parse::<i64>()
                .map(Py::Int)
                .or_else(|_| n.parse::<f64>().map(Py::Float))
                .unwrap_or(Py::Opaque(n)),
            Tok::Str(mut s) => {
                while let Some(Tok::Str(more)) = self.peek().cloned() {
                    s.push_str(&more);
                    self.i += 1;
                }
                Py::Str(s)
            }
            Tok::FStr(s) => Py::Opaque(format!("f{s:?}")),
            Tok::Name(n) => match n.as_str() {
                "True" => Py::Bool(true),
                "False" => Py::Bool(false),
                "None" => Py::None,
                "lambda" | "not" | "await" => {
                    self.i = from;
                    self.opaque_from(from)
                }
                _ => match self.k.get(&n) {
                    // a constant, unless it is followed by `.attr` or `(`: then it is a name
                    Some(v) if !matches!(self.peek(), Some(Tok::Op("." | "("))) => v.clone(),
                    _ => Py::Ref(n),
                },
            },
            Tok::Op("(") => {
                let v = self.seq(")");
                match v {
                    Py::List(mut items)
                        if items.len() == 1
                            && !self.t[self.i - 2..self.i].contains(&Tok::Op(",")) =>
                    {
                        items.pop().unwrap_or(Py::None)
                    }
                    other => other,
                }
            }
            Tok::Op("[") => self.seq("]"),
            Tok::Op("{") => self.dict(),
            _ => {
                self.i = from;
                self.opaque_from(from)
            }
        }
    }

    /// Items up to `close`; a comprehension is opaque.
    fn seq(&mut self, close: &'static str) -> Py {
        let from = self.i - 1;
        let mut items = Vec::new();
        while self.i < self.t.len() {
            if self.eat(close) {
                return Py::List(items);
            }
            if matches!(self.peek(), Some(Tok::Name(n)) if n == "for") {
                let _ = self.opaque_from(self.i);
                self.eat(close);
                return Py::Opaque(text(&self.t[from..self.i]));
            }
            let before = self.i;
            items.push(self.expr());
            if self.i == before {
                self.i += 1;
            }
            self.eat(",");
        }
        Py::List(items)
    }

    fn dict(&mut self) -> Py {
        let from = self.i - 1;
        let mut items = Vec::new();
        while self.i < self.t.len() {
            if self.eat("}") {
                return Py::Dict(items);
            }
            if self.eat("**") {
                let _ = self.expr();
                items.push((Py::Opaque("**".into()), Py::Opaque("**".into())));
                self.eat(",");
                continue;
            }
            let before = self.i;
            let k = self.expr();
            if !self.eat(":") {
                // a set or a comprehension
                let _ = self.opaque_from(self.i);
                while self.i < self.t.len() && !self.eat("}") {
                    self.i += 1;
                }
                return Py::Opaque(text(&self.t[from..self.i]));
            }
            let v = self.expr();
            items.push((k, v));
            if self.i == before {
                self.i += 1;
            }
            self.eat(",");
        }
        Py::Dict(items)
    }
}

fn num(v: &Py) -> Option<f64> {
    match v {
        Py::Int(n) => Some(*n as f64),
        Py::Float(f) => Some(*f),
        _ => None,
    }
}

/// `sgl.Engine` with `import sglang as sgl` → `sglang.Engine`; `LLM` with `from vllm import
/// LLM` → `vllm.LLM`.
fn resolve_alias(dotted: &str, aliases: &HashMap<String, String>) -> String {
    let (head, tail) = dotted.split_once('.').map_or((dotted, ""), |(h, t)| (h, t));
    match aliases.get(head) {
        Some(full) if tail.is_empty() => full.clone(),
        Some(full) => format!("{full}.{tail}"),
        None => dotted.to_string(),
    }
}

#[cfg(test)]
#[path = "syntax_tests.rs"]
mod tests;
