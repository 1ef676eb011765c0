//! Protobuf text format (`.prototxt`) into a schema-less tree.
//!
//! The grammar is the one `google::protobuf::TextFormat` reads: a message is a sequence of
//! fields, `name: value`, `name: [v1, v2]`, or `name { ... }` / `name < ... >` (the `:`
//! before a message is optional); fields may be followed by `,` or `;`; `#` starts a comment
//! that runs to the end of the line. Values are identifiers (enum values, `true`, `inf`),
//! numbers (decimal, hexadecimal `0x1F`, octal `017`, floats with exponents and an optional
//! `f` suffix, a leading `-`), and quoted strings (`'...'` or `"..."`, C escapes, adjacent
//! literals concatenated).
//!
//! The tree keeps every field in file order with its line; the reader (the Caffe front end)
//! converts values when it knows the field's type. Nothing here panics on any input, and
//! nesting is limited to [`MAX_DEPTH`] so that hostile input cannot exhaust the stack.

use std::fmt;

/// Deepest message nesting accepted (protobuf's own default recursion limit).
pub const MAX_DEPTH: usize = 100;

/// A message: its fields in the order the file gives them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Message {
    /// Fields, repeated ones once per occurrence.
    pub fields: Vec<Field>,
}

/// One occurrence of a field.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Field name.
    pub name: String,
    /// 1-based line of the name.
    pub line: usize,
    /// The value.
    pub value: Value,
}

/// A field's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A scalar.
    Scalar(Scalar),
    /// A nested message.
    Message(Message),
}

/// A scalar literal, kept as written until its field's type is known.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    /// An identifier, possibly with a leading `-` (`MAX`, `true`, `-inf`).
    Ident(String),
    /// A numeric literal as written, possibly with a leading `-` (`20`, `1e-5`, `0x10`).
    Number(String),
    /// A string literal, unescaped (invalid UTF-8 replaced).
    Str(String),
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Ident(s) | Scalar::Number(s) => f.write_str(s),
            Scalar::Str(s) => write!(f, "{s:?}"),
        }
    }
}

impl Scalar {
    /// The value as a signed integer (decimal, hex or octal), if it is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Scalar::Number(t) => parse_int(t).and_then(|v| i64::try_from(v).ok()),
            _ => None,
        }
    }

    /// The value as an unsigned integer, if it is a non-negative integer.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Scalar::Number(t) => parse_int(t).and_then(|v| u64::try_from(v).ok()),
            _ => None,
        }
    }

    /// The value as a floating-point number: any number, `inf`, `infinity`, `nan`.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Scalar::Number(t) => parse_float(t),
            Scalar::Ident(t) => {
                let (neg, body) = split_sign(t);
                let v = match body.to_ascii_lowercase().as_str() {
                    "inf" | "infinity" => f64::INFINITY,
                    "nan" => f64::NAN,
                    _ => return None,
                };
                Some(if neg { -v } else { v })
            }
            Scalar::Str(_) => None,
        }
    }

    /// The value as a boolean (`true`/`false`/`True`/`False`/`t`/`f`/`1`/`0`).
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Scalar::Ident(t) => match t.as_str() {
                "true" | "True" | "t" => Some(true),
                "false" | "False" | "f" => Some(false),
                _ => None,
            },
            Scalar::Number(_) => match self.as_u64() {
                Some(0) => Some(false),
                Some(1) => Some(true),
                _ => None,
            },
            Scalar::Str(_) => None,
        }
    }

    /// The value as a string literal.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Scalar::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value as a bare identifier (an enum value name), without sign.
    pub fn as_ident(&self) -> Option<&str> {
        match self {
            Scalar::Ident(s) if !s.starts_with('-') => Some(s),
            _ => None,
        }
    }
}

fn split_sign(t: &str) -> (bool, &str) {
    match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t),
    }
}

/// An integer literal: decimal, `0x` hexadecimal or `0` octal, with an optional `-`.
fn parse_int(t: &str) -> Option<i128> {
    let (neg, body) = split_sign(t);
    let (digits, radix) =
        if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            (h, 16)
        } else if body.len() > 1 && body.starts_with('0') {
            (&body[1..], 8)
        } else {
            (body, 10)
        };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let v = u64::from_str_radix(digits, radix).ok()? as i128;
    Some(if neg { -v } else { v })
}

/// A floating-point literal (or any integer literal).
fn parse_float(t: &str) -> Option<f64> {
    if let Some(i) = parse_int(t) {
        return Some(i as f64);
    }
    let (neg, body) = split_sign(t);
    let body = body
        .strip_suffix('f')
        .or_else(|| body.strip_suffix('F'))
        .unwrap_or(body);
    let first_ok = body
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_digit() || b == b'.');
    if !first_ok
        || !body
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    let v: f64 = body.parse().ok()?;
    Some(if neg { -v } else { v })
}

impl Message {
    /// Every occurrence of field `name`, in file order.
    pub fn all<'a, 'n>(&'a self, name: &'n str) -> Fields<'a, 'n> {
        Fields {
            iter: self.fields.iter(),
            name,
        }
    }

    /// The last occurrence of field `name` (the one that wins for a singular field).
    pub fn get(&self, name: &str) -> Option<&Field> {
        self.fields.iter().rev().find(|f| f.name == name)
    }

    /// Whether field `name` occurs.
    pub fn has(&self, name: &str) -> bool {
        self.fields.iter().any(|f| f.name == name)
    }
}

/// The occurrences of one field of a [`Message`] ([`Message::all`]).
#[derive(Debug, Clone)]
pub struct Fields<'a, 'n> {
    iter: std::slice::Iter<'a, Field>,
    name: &'n str,
}

impl<'a> Iterator for Fields<'a, '_> {
    type Item = &'a Field;
    fn next(&mut self) -> Option<&'a Field> {
        let name = self.name;
        self.iter.find(|f| f.name == name)
    }
}

/// A syntax error, with its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for TextError {}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Number(String),
    Str(String),
    Punct(char),
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Ident(s) => write!(f, "`{s}`"),
            Tok::Number(s) => write!(f, "number `{s}`"),
            Tok::Str(s) => write!(f, "string {s:?}"),
            Tok::Punct(c) => write!(f, "`{c}`"),
        }
    }
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
    column: usize,
}

struct Lexer<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    line: usize,
    column: usize,
}

impl Lexer<'_> {
    fn bump(&mut self) -> Option<char> {
        let c = self.chars.next()?;
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn error(&self, line: usize, column: usize, message: impl Into<String>) -> TextError {
        TextError {
            line,
            column,
            message: message.into(),
        }
    }

    fn next_token(&mut self) -> Result<Option<Token>, TextError> {
        // Whitespace and comments.
        loop {
            match self.chars.peek() {
                Some(c) if c.is_whitespace() => {
                    self.bump();
                }
                Some('#') => {
                    while let Some(c) = self.bump() {
                        if c == '\n' {
                            break;
                        }
                    }
                }
                _ => break,
            }
        }
        let (line, column) = (self.line, self.column);
        let Some(&c) = self.chars.peek() else {
            return Ok(None);
        };
        let tok = if c.is_ascii_alphabetic() || c == '_' {
            let mut s = String::new();
            while let Some(&c) = self.chars.peek() {
                if c.is_ascii_alphanumeric() || c == '_' {
                    s.push(c);
                    self.bump();
                } else {
                    break;
                }
            }
            Tok::Ident(s)
        } else if c.is_ascii_digit() || (c == '.' && self.digit_after_dot()) {
            let mut s = String::new();
            let mut prev = '\0';
            while let Some(&c) = self.chars.peek() {
                let hex = s.starts_with("0x") || s.starts_with("0X");
                let sign_in_exponent =
                    (c == '+' || c == '-') && (prev == 'e' || prev == 'E') && !hex;
                if c.is_ascii_alphanumeric() || c == '.' || c == '_' || sign_in_exponent {
                    s.push(c);
                    prev = c;
                    self.bump();
                } else {
                    break;
                }
            }
            if parse_float(&s).is_none() {
                return Err(self.error(line, column, format!("malformed number `{s}`")));
            }
            Tok::Number(s)
        } else if c == '"' || c == '\'' {
            self.bump();
            Tok::Str(self.string(c, line, column)?)
        } else if "{}<>[]:,;-".contains(c) {
            self.bump();
            Tok::Punct(c)
        } else {
            return Err(self.error(line, column, format!("unexpected character {c:?}")));
        };
        Ok(Some(Token { tok, line, column }))
    }

    fn digit_after_dot(&self) -> bool {
        let mut it = self.chars.clone();
        it.next();
        it.next().is_some_and(|c| c.is_ascii_digit())
    }

    /// The rest of a quoted string whose opening `quote` has been consumed.
    fn string(&mut self, quote: char, line: usize, column: usize) -> Result<String, TextError> {
        let mut bytes = Vec::new();
        loop {
            let Some(c) = self.bump() else {
                return Err(self.error(line, column, "unterminated string"));
            };
            match c {
                '\n' => return Err(self.error(line, column, "unterminated string")),
                c if c == quote => break,
                '\\' => {
                    let (el, ec) = (self.line, self.column);
                    let Some(e) = self.bump() else {
                        return Err(self.error(line, column, "unterminated string"));
                    };
                    match e {
                        'n' => bytes.push(b'\n'),
                        'r' => bytes.push(b'\r'),
                        't' => bytes.push(b'\t'),
                        'a' => bytes.push(7),
                        'b' => bytes.push(8),
                        'f' => bytes.push(12),
                        'v' => bytes.push(11),
                        '\\' | '\'' | '"' | '?' => bytes.push(e as u8),
                        '0'..='7' => {
                            let mut v = e.to_digit(8).unwrap_or(0);
                            for _ in 0..2 {
                                match self.chars.peek().and_then(|c| c.to_digit(8)) {
                                    Some(d) => {
                                        v = v * 8 + d;
                                        self.bump();
                                    }
                                    None => break,
                                }
                            }
                            bytes.push((v & 0xff) as u8);
                        }
                        'x' | 'X' => {
                            let mut v = 0u32;
                            let mut n = 0;
                            while n < 2 {
                                match self.chars.peek().and_then(|c| c.to_digit(16)) {
                                    Some(d) => {
                                        v = v * 16 + d;
                                        self.bump();
                                        n += 1;
                                    }
                                    None => break,
                                }
                            }
                            if n == 0 {
                                return Err(self.error(el, ec, "`\\x` without hex digits"));
                            }
                            bytes.push(v as u8);
                        }
                        'u' | 'U' => {
                            let len = if e == 'u' { 4 } else { 8 };
                            let mut v = 0u32;
                            for _ in 0..len {
                                match self.chars.peek().and_then(|c| c.to_digit(16)) {
                                    Some(d) => {
                                        v = v.wrapping_mul(16).wrapping_add(d);
                                        self.bump();
                                    }
                                    None => {
                                        return Err(self.error(
                                            el,
                                            ec,
                                            format!("`\\{e}` needs {len} hex digits"),
                                        ))
                                    }
                                }
                            }
                            let ch = char::from_u32(v).unwrap_or(char::REPLACEMENT_CHARACTER);
                            let mut buf = [0u8; 4];
                            bytes.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        other => {
                            return Err(self.error(el, ec, format!("unknown escape `\\{other}`")))
                        }
                    }
                }
                c => {
                    let mut buf = [0u8; 4];
                    bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

struct Parser<'a> {
    lexer: Lexer<'a>,
    peeked: Option<Token>,
    /// Position of the end of input, for errors there.
    eof: (usize, usize),
}

impl Parser<'_> {
    fn peek(&mut self) -> Result<Option<&Token>, TextError> {
        if self.peeked.is_none() {
            self.peeked = self.lexer.next_token()?;
            if self.peeked.is_none() {
                self.eof = (self.lexer.line, self.lexer.column);
            }
        }
        Ok(self.peeked.as_ref())
    }

    fn next(&mut self) -> Result<Option<Token>, TextError> {
        self.peek()?;
        Ok(self.peeked.take())
    }

    fn peek_punct(&mut self, c: char) -> Result<bool, TextError> {
        Ok(matches!(self.peek()?, Some(Token { tok: Tok::Punct(p), .. }) if *p == c))
    }

    fn error_at(&self, t: &Token, message: impl Into<String>) -> TextError {
        TextError {
            line: t.line,
            column: t.column,
            message: message.into(),
        }
    }

    fn error_eof(&self, message: impl Into<String>) -> TextError {
        TextError {
            line: self.eof.0,
            column: self.eof.1,
            message: message.into(),
        }
    }

    /// Fields until `close` (or end of input when `close` is `None`).
    fn message_body(&mut self, close: Option<char>, depth: usize) -> Result<Message, TextError> {
        let mut msg = Message::default();
        loop {
            let Some(t) = self.next()? else {
                return match close {
                    None => Ok(msg),
                    Some(c) => {
                        Err(self.error_eof(format!("unexpected end of input, expected `{c}`")))
                    }
                };
            };
            match &t.tok {
                Tok::Punct(c) if Some(*c) == close => return Ok(msg),
                Tok::Ident(name) => {
                    let name = name.clone();
                    let value = self.field_value(&name, depth)?;
                    for v in value {
                        msg.fields.push(Field {
                            name: name.clone(),
                            line: t.line,
                            value: v,
                        });
                    }
                    // Optional separator.
                    if self.peek_punct(',')? || self.peek_punct(';')? {
                        self.next()?;
                    }
                }
                Tok::Punct('[') => {
                    return Err(self.error_at(&t, "extension fields (`[...]`) are not supported"))
                }
                other => {
                    let expected = match close {
                        Some(c) => format!("a field name or `{c}`"),
                        None => "a field name".to_string(),
                    };
                    return Err(self.error_at(&t, format!("expected {expected}, found {other}")));
                }
            }
        }
    }

    /// The value(s) after a field name: one, or several for the `[a, b]` list form.
    fn field_value(&mut self, name: &str, depth: usize) -> Result<Vec<Value>, TextError> {
        let colon = self.peek_punct(':')?;
        if colon {
            self.next()?;
        }
        if let Some(close) = self.message_open()? {
            return Ok(vec![Value::Message(self.nested(close, depth)?)]);
        }
        if !colon {
            return Err(match self.peek()?.cloned() {
                Some(t) => self.error_at(
                    &t,
                    format!(
                        "expected `:` or `{{` after field name `{name}`, found {}",
                        t.tok
                    ),
                ),
                None => self.error_eof(format!("unexpected end of input after field `{name}`")),
            });
        }
        if self.peek_punct('[')? {
            self.next()?;
            let mut values = Vec::new();
            if self.peek_punct(']')? {
                self.next()?;
                return Ok(values);
            }
            loop {
                if let Some(close) = self.message_open()? {
                    values.push(Value::Message(self.nested(close, depth)?));
                } else {
                    values.push(Value::Scalar(self.scalar(name)?));
                }
                match self.next()? {
                    Some(Token {
                        tok: Tok::Punct(','),
                        ..
                    }) => {}
                    Some(Token {
                        tok: Tok::Punct(']'),
                        ..
                    }) => return Ok(values),
                    Some(t) => {
                        return Err(
                            self.error_at(&t, format!("expected `,` or `]`, found {}", t.tok))
                        )
                    }
                    None => return Err(self.error_eof("unexpected end of input, expected `]`")),
                }
            }
        }
        Ok(vec![Value::Scalar(self.scalar(name)?)])
    }

    /// Consumes `{` or `<` if next; returns the matching close.
    fn message_open(&mut self) -> Result<Option<char>, TextError> {
        let close = match self.peek()? {
            Some(Token {
                tok: Tok::Punct('{'),
                ..
            }) => '}',
            Some(Token {
                tok: Tok::Punct('<'),
                ..
            }) => '>',
            _ => return Ok(None),
        };
        self.next()?;
        Ok(Some(close))
    }

    fn nested(&mut self, close: char, depth: usize) -> Result<Message, TextError> {
        if depth + 1 > MAX_DEPTH {
            let (line, column) = (self.lexer.line, self.lexer.column);
            return Err(TextError {
                line,
                column,
                message: format!("messages nested deeper than {MAX_DEPTH}"),
            });
        }
        self.message_body(Some(close), depth + 1)
    }

    fn scalar(&mut self, name: &str) -> Result<Scalar, TextError> {
        let Some(t) = self.next()? else {
            return Err(self.error_eof(format!(
                "unexpected end of input, expected a value for `{name}`"
            )));
        };
        match &t.tok {
            Tok::Ident(s) => Ok(Scalar::Ident(s.clone())),
            Tok::Number(s) => Ok(Scalar::Number(s.clone())),
            Tok::Str(s) => {
                let mut s = s.clone();
                // Adjacent string literals concatenate.
                while let Some(Token {
                    tok: Tok::Str(_), ..
                }) = self.peek()?
                {
                    if let Some(Token {
                        tok: Tok::Str(more),
                        ..
                    }) = self.next()?
                    {
                        s.push_str(&more);
                    }
                }
                Ok(Scalar::Str(s))
            }
            Tok::Punct('-') => match self.next()? {
                Some(Token {
                    tok: Tok::Number(n),
                    ..
                }) => Ok(Scalar::Number(format!("-{n}"))),
                Some(Token {
                    tok: Tok::Ident(i), ..
                }) => Ok(Scalar::Ident(format!("-{i}"))),
                Some(other) => Err(self.error_at(
                    &other,
                    format!("expected a number after `-`, found {}", other.tok),
                )),
                None => Err(self.error_eof("unexpected end of input after `-`")),
            },
            Tok::Punct(_) => Err(self.error_at(
                &t,
                format!("expected a value for `{name}`, found {}", t.tok),
            )),
        }
    }
}

/// Parses protobuf text format into a [`Message`] tree (a leading byte-order mark is
/// skipped).
pub fn parse(text: &str) -> Result<Message, TextError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut p = Parser {
        lexer: Lexer {
            chars: text.chars().peekable(),
            line: 1,
            column: 1,
        },
        peeked: None,
        eof: (1, 1),
    };
    p.message_body(None, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(m: &Message, name: &str) -> Scalar {
        match &m.get(name).unwrap().value {
            Value::Scalar(s) => s.clone(),
            Value::Message(_) => panic!("message"),
        }
    }

    #[test]
    fn grammar() {
        let m = parse(
            "name: 'a\\x41\\101\\n' \"b\" # comment\n\
             layer { x: 1, y: -2.5e-3; z: .5 w: 1.f } layer < v: -inf >\n\
             list: [1, 2, 0x10] msgs: [{a: 1}, <a: 2>] e: MAX b: true\n",
        )
        .unwrap();
        assert_eq!(scalar(&m, "name").as_str(), Some("aAA\nb"));
        let layers: Vec<_> = m.all("layer").collect();
        assert_eq!(layers.len(), 2);
        let Value::Message(l0) = &layers[0].value else {
            panic!()
        };
        assert_eq!(scalar(l0, "x").as_u64(), Some(1));
        assert_eq!(scalar(l0, "y").as_f64(), Some(-2.5e-3));
        assert_eq!(scalar(l0, "z").as_f64(), Some(0.5));
        assert_eq!(scalar(l0, "w").as_f64(), Some(1.0));
        assert_eq!(layers[1].line, 2);
        let Value::Message(l1) = &layers[1].value else {
            panic!()
        };
        assert_eq!(scalar(l1, "v").as_f64(), Some(f64::NEG_INFINITY));
        let list: Vec<_> = m
            .all("list")
            .map(|f| match &f.value {
                Value::Scalar(s) => s.as_i64().unwrap(),
                _ => panic!(),
            })
            .collect();
        assert_eq!(list, [1, 2, 16]);
        assert_eq!(m.all("msgs").count(), 2);
        assert_eq!(scalar(&m, "e").as_ident(), Some("MAX"));
        assert_eq!(scalar(&m, "b").as_bool(), Some(true));
        assert_eq!(Scalar::Number("017".into()).as_i64(), Some(15));
        assert_eq!(Scalar::Number("-1".into()).as_u64(), None);
        assert_eq!(Scalar::Number("1.5".into()).as_i64(), None);
        assert_eq!(parse("\u{feff}a: 1\r\nb: 2").unwrap().fields.len(), 2);
    }

    #[test]
    fn errors_have_positions() {
        let e = parse("a: 1\nb {\n c: 2\n").unwrap_err();
        assert_eq!(e.line, 4, "{e}");
        let e = parse("a: 1\n  b 2\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 5), "{e}");
        let e = parse("a: \"x\ny\"").unwrap_err();
        assert_eq!(e.line, 1);
        let e = parse("a: 1..2").unwrap_err();
        assert!(e.message.contains("malformed number"), "{e}");
        let deep = "a {".repeat(200);
        assert!(parse(&deep).unwrap_err().message.contains("nested"));
        assert!(parse("}").is_err());
        assert!(parse("a: }").is_err());
    }
}
