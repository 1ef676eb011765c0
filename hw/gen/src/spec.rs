//! The project-spec language of `nvdla/hw` `spec/defs/`: a C preprocessor subset.
//!
//! A build's `<build>.spec` sets knobs with `#define KNOB` and ends with
//! `#include "projects.spec"`, which turns the knobs into the build's parameters with
//! `#if defined(KNOB)` / `#elif` / `#else` / `#endif` chains around `%define NAME VALUE`
//! lines, and `#error` for a missing or conflicting knob. Upstream runs it through
//! `cpp -undef -nostdinc -P -C`, then its `defgen` tool turns the `%define` lines into
//! headers. [`evaluate`] does both steps' relevant part: it interprets the directives and
//! returns the `%define`s that are in effect, with their values as written.
//!
//! It is strict: a line it does not understand, an unbalanced conditional or an `#error`
//! that is reached is an error naming the file and line, so a change of the upstream
//! format stops generation instead of silently producing a different table.

use std::collections::BTreeMap;
use std::fmt;

/// What [`evaluate`] produced: the knobs and the parameters of one build.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spec {
    /// Macros defined with `#define` (the knobs), with their values (usually empty).
    pub macros: BTreeMap<String, String>,
    /// Parameters defined with `%define`, with their values as written (trimmed; empty
    /// for a flag).
    pub params: BTreeMap<String, String>,
}

impl Spec {
    /// Whether parameter `name` is defined (a flag such as `NVDLA_BDMA_ENABLE`).
    pub fn flag(&self, name: &str) -> bool {
        self.params.contains_key(name)
    }

    /// The value of parameter `name` as an integer; `Ok(None)` when it is not defined, an
    /// error when it is defined but not a plain decimal integer.
    pub fn number(&self, name: &str) -> Result<Option<u32>, String> {
        match self.params.get(name) {
            None => Ok(None),
            Some(v) => v
                .parse::<u32>()
                .map(Some)
                .map_err(|_| format!("{name} is `{v}`, not a plain integer")),
        }
    }
}

/// A spec that cannot be evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    /// File name.
    pub file: String,
    /// Line number (1-based; 0 for the whole file).
    pub line: usize,
    /// What is wrong.
    pub msg: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.msg)
    }
}

impl std::error::Error for SpecError {}

/// One open `#if` chain.
struct Frame {
    /// Lines of the enclosing chain are in effect.
    outer: bool,
    /// A branch of this chain has been taken.
    taken: bool,
    /// The current branch is in effect.
    active: bool,
    /// `#else` seen.
    in_else: bool,
}

struct Eval<'a> {
    spec: Spec,
    stack: Vec<Frame>,
    /// Files `#include` may name: (name, text).
    includes: &'a [(&'a str, &'a str)],
    depth: usize,
}

/// Evaluates the file `name` with text `text`; `#include "X"` takes X's text from
/// `includes` (upstream's specs include only `projects.spec`).
pub fn evaluate(name: &str, text: &str, includes: &[(&str, &str)]) -> Result<Spec, SpecError> {
    let mut e = Eval {
        spec: Spec::default(),
        stack: Vec::new(),
        includes,
        depth: 0,
    };
    e.file(name, text)?;
    Ok(e.spec)
}

impl Eval<'_> {
    fn active(&self) -> bool {
        self.stack.last().is_none_or(|f| f.active)
    }

    fn file(&mut self, name: &str, text: &str) -> Result<(), SpecError> {
        let base = self.stack.len();
        for (i, raw) in text.lines().enumerate() {
            let err = |msg: String| SpecError {
                file: name.to_string(),
                line: i + 1,
                msg,
            };
            self.line(raw).map_err(err)?;
        }
        if self.stack.len() != base {
            return Err(SpecError {
                file: name.to_string(),
                line: 0,
                msg: format!("{} `#if` without `#endif`", self.stack.len() - base),
            });
        }
        Ok(())
    }

    fn line(&mut self, raw: &str) -> Result<(), String> {
        let line = match raw.find("//") {
            Some(i) => &raw[..i],
            None => raw,
        }
        .trim();
        if line.is_empty() {
            return Ok(());
        }
        let (word, rest) = match line.find(|c: char| c.is_whitespace()) {
            Some(i) => (&line[..i], line[i..].trim()),
            None => (line, ""),
        };
        match word {
            "#if" | "#ifdef" | "#ifndef" => {
                let outer = self.active();
                let cond = match word {
                    "#if" => self.condition(rest)?,
                    "#ifdef" => self.spec.macros.contains_key(ident(rest)?),
                    _ => !self.spec.macros.contains_key(ident(rest)?),
                };
                let active = outer && cond;
                self.stack.push(Frame {
                    outer,
                    taken: active,
                    active,
                    in_else: false,
                });
            }
            "#elif" => {
                let cond = self.condition(rest)?;
                let f = self.stack.last_mut().ok_or("`#elif` without `#if`")?;
                if f.in_else {
                    return Err("`#elif` after `#else`".into());
                }
                f.active = f.outer && !f.taken && cond;
                f.taken |= f.active;
            }
            "#else" => {
                let f = self.stack.last_mut().ok_or("`#else` without `#if`")?;
                if f.in_else {
                    return Err("second `#else`".into());
                }
                f.in_else = true;
                f.active = f.outer && !f.taken;
                f.taken = true;
            }
            "#endif" => {
                self.stack.pop().ok_or("`#endif` without `#if`")?;
            }
            _ if !self.active() => {}
            "#define" => {
                let (name, value) = split_name(rest)?;
                self.spec.macros.insert(name.to_string(), value.to_string());
            }
            "%define" => {
                let (name, value) = split_name(rest)?;
                self.spec.params.insert(name.to_string(), value.to_string());
            }
            "#error" => return Err(format!("#error {rest}")),
            "#include" => {
                let file = rest
                    .strip_prefix('"')
                    .and_then(|r| r.strip_suffix('"'))
                    .ok_or_else(|| format!("#include {rest}: expected \"FILE\""))?;
                let (_, text) = self
                    .includes
                    .iter()
                    .find(|(n, _)| *n == file)
                    .ok_or_else(|| format!("#include \"{file}\": not available"))?;
                if self.depth > 4 {
                    return Err(format!("#include \"{file}\": nested too deep"));
                }
                self.depth += 1;
                let r = self.file(file, text).map_err(|e| e.to_string());
                self.depth -= 1;
                r?;
            }
            _ => return Err(format!("unrecognised line `{line}`")),
        }
        Ok(())
    }

    /// An `#if` expression: `defined(X)`, `defined X`, integers, `!`, `&&`, `||` and
    /// parentheses.
    fn condition(&self, text: &str) -> Result<bool, String> {
        let tokens = tokenize(text)?;
        let mut p = Cond {
            tokens: &tokens,
            pos: 0,
            spec: &self.spec,
        };
        let v = p.or()?;
        if p.pos != tokens.len() {
            return Err(format!("#if {text}: unexpected `{}`", tokens[p.pos]));
        }
        Ok(v)
    }
}

fn ident(s: &str) -> Result<&str, String> {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        Ok(s)
    } else {
        Err(format!("`{s}` is not a macro name"))
    }
}

fn split_name(rest: &str) -> Result<(&str, &str), String> {
    let (name, value) = match rest.find(|c: char| c.is_whitespace()) {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => (rest, ""),
    };
    Ok((ident(name)?, value))
}

fn tokenize(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c.is_whitespace() {
            continue;
        }
        if c.is_ascii_alphanumeric() || c == '_' {
            let mut end = i + c.len_utf8();
            while let Some(&(j, d)) = chars.peek() {
                if d.is_ascii_alphanumeric() || d == '_' {
                    end = j + d.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            out.push(text[i..end].to_string());
        } else if (c == '&' || c == '|') && chars.peek().map(|&(_, d)| d) == Some(c) {
            chars.next();
            out.push(format!("{c}{c}"));
        } else if matches!(c, '!' | '(' | ')') {
            out.push(c.to_string());
        } else {
            return Err(format!("#if {text}: unexpected `{c}`"));
        }
    }
    Ok(out)
}

struct Cond<'a> {
    tokens: &'a [String],
    pos: usize,
    spec: &'a Spec,
}

impl Cond<'_> {
    fn peek(&self) -> Option<&str> {
        self.tokens.get(self.pos).map(String::as_str)
    }

    fn next(&mut self) -> Result<&str, String> {
        let t = self
            .tokens
            .get(self.pos)
            .ok_or("#if: expression ends early")?;
        self.pos += 1;
        Ok(t)
    }

    fn or(&mut self) -> Result<bool, String> {
        let mut v = self.and()?;
        while self.peek() == Some("||") {
            self.pos += 1;
            v |= self.and()?;
        }
        Ok(v)
    }

    fn and(&mut self) -> Result<bool, String> {
        let mut v = self.unary()?;
        while self.peek() == Some("&&") {
            self.pos += 1;
            v &= self.unary()?;
        }
        Ok(v)
    }

    fn unary(&mut self) -> Result<bool, String> {
        match self.next()? {
            "!" => Ok(!self.unary()?),
            "(" => {
                let v = self.or()?;
                self.expect(")")?;
                Ok(v)
            }
            "defined" => {
                let paren = self.peek() == Some("(");
                if paren {
                    self.pos += 1;
                }
                let name = ident(self.next()?)?.to_string();
                if paren {
                    self.expect(")")?;
                }
                Ok(self.spec.macros.contains_key(&name))
            }
            t if t.chars().all(|c| c.is_ascii_digit()) => {
                Ok(t.parse::<u64>().is_ok_and(|n| n != 0))
            }
            t => Err(format!(
                "#if: `{t}`: only defined(...), integers, !, && and || are supported"
            )),
        }
    }

    fn expect(&mut self, t: &str) -> Result<(), String> {
        match self.next()? {
            x if x == t => Ok(()),
            x => Err(format!("#if: expected `{t}`, found `{x}`")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A small spec in upstream's form (written for this test).
    const PROJECTS: &str = "\
#if defined(UNIT_ENABLE)
    %define P_UNIT_ENABLE
#elif defined(UNIT_DISABLE)
#else
    #error \"one of UNIT_{EN,DIS}ABLE must be set\"
#endif

#if defined(SIZE_64)
    %define P_SIZE 64 
#elif defined(SIZE_8)
    %define P_SIZE 8
#else
    #error \"SIZE\"
#endif
#if defined(UNIT_ENABLE)
 #if defined(RATE_4)
     %define P_RATE 4
 #elif defined(RATE_x)
     %define P_RATE 1
 #endif
#else
     %define P_RATE 0
#endif
%define P_DERIVED log2(P_SIZE)
#if !defined(SIZE_8) && (defined(UNIT_ENABLE) || defined(NOPE))
    %define P_BIG_UNIT
#endif
";

    fn eval(build: &str) -> Result<Spec, SpecError> {
        evaluate("b.spec", build, &[("projects.spec", PROJECTS)])
    }

    #[test]
    fn knobs_select_parameters() {
        let s = eval("//#define OLD 1\n#define UNIT_ENABLE\n#define SIZE_64 \n#define RATE_x\n#include \"projects.spec\"\n").unwrap();
        assert!(s.flag("P_UNIT_ENABLE"));
        assert_eq!(s.number("P_SIZE"), Ok(Some(64)));
        assert_eq!(s.number("P_RATE"), Ok(Some(1)));
        assert!(s.flag("P_BIG_UNIT"));
        assert!(!s.macros.contains_key("OLD"));
        assert_eq!(s.params["P_DERIVED"], "log2(P_SIZE)");
        assert!(s.number("P_DERIVED").is_err());
        assert_eq!(s.number("P_MISSING"), Ok(None));

        let s = eval("#define UNIT_DISABLE\n#define SIZE_8\n#include \"projects.spec\"").unwrap();
        assert!(!s.flag("P_UNIT_ENABLE"));
        assert_eq!(s.number("P_SIZE"), Ok(Some(8)));
        assert_eq!(s.number("P_RATE"), Ok(Some(0)));
        assert!(!s.flag("P_BIG_UNIT"));
    }

    #[test]
    fn reached_error_is_reported_with_its_place() {
        let e = eval("#define UNIT_ENABLE\n#include \"projects.spec\"").unwrap_err();
        assert_eq!(e.file, "b.spec");
        assert_eq!(e.line, 2);
        assert!(e.msg.contains("projects.spec:13: #error \"SIZE\""), "{e}");
    }

    #[test]
    fn strict_about_what_it_does_not_know() {
        for bad in [
            "#if defined(A)\n",
            "#endif\n",
            "#else\n",
            "#if defined(A)\n#else\n#else\n#endif\n",
            "#if defined(A)\n#else\n#elif defined(B)\n#endif\n",
            "#if A > 1\n#endif\n",
            "#include \"other.spec\"\n",
            "#include <projects.spec>\n",
            "something else\n",
            "#define 9-bad\n",
        ] {
            assert!(eval(bad).is_err(), "{bad:?} accepted");
        }
        // Lines inside a branch not taken are not interpreted (cpp would not either).
        assert!(eval("#if 0\nsomething else\n#endif\n").is_ok());
    }
}
