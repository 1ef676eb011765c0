//! Typed reading of text-format fields, with errors that name the layer.

use super::text::{Field, Message, Scalar, Value};
use crate::error::{CompileError, Result};

/// The layer being read: for error messages and weight look-up.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx<'a> {
    /// Name for messages (the layer name, or its position if it has none).
    pub name: &'a str,
    /// Type as the prototxt spells it.
    pub ty: &'a str,
    /// The layer's `name` field exactly (weights are matched by it).
    pub key: &'a str,
}

impl Ctx<'_> {
    /// A [`CompileError::Layer`] for this layer.
    pub fn err(&self, reason: impl Into<String>) -> CompileError {
        CompileError::layer(self.name, self.ty, reason)
    }
}

/// Largest dimension or count accepted: Caffe keeps blob sizes in `int` and refuses larger
/// ones ("blob size exceeds INT_MAX").
pub(crate) const MAX_COUNT: usize = i32::MAX as usize;

fn scalar<'m>(ctx: Ctx<'_>, f: &'m Field) -> Result<&'m Scalar> {
    match &f.value {
        Value::Scalar(s) => Ok(s),
        Value::Message(_) => Err(ctx.err(format!(
            "`{}` (line {}) must be a value, not a message",
            f.name, f.line
        ))),
    }
}

fn bad(ctx: Ctx<'_>, f: &Field, s: &Scalar, what: &str) -> CompileError {
    ctx.err(format!(
        "`{}` (line {}): expected {what}, found {s}",
        f.name, f.line
    ))
}

fn conv<T>(ctx: Ctx<'_>, f: &Field, what: &str, get: impl Fn(&Scalar) -> Option<T>) -> Result<T> {
    let s = scalar(ctx, f)?;
    get(s).ok_or_else(|| bad(ctx, f, s, what))
}

/// A non-negative integer that fits Caffe's `int`.
fn size_of(s: &Scalar) -> Option<usize> {
    s.as_u64()
        .and_then(|v| usize::try_from(v).ok())
        .filter(|&v| v <= MAX_COUNT)
}

const SIZE: &str = "a non-negative integer below 2^31";

/// Singular size field (last occurrence wins).
pub(crate) fn size(ctx: Ctx<'_>, m: &Message, name: &str) -> Result<Option<usize>> {
    m.get(name).map(|f| conv(ctx, f, SIZE, size_of)).transpose()
}

/// Repeated size field.
pub(crate) fn sizes(ctx: Ctx<'_>, m: &Message, name: &str) -> Result<Vec<usize>> {
    m.all(name).map(|f| conv(ctx, f, SIZE, size_of)).collect()
}

/// Singular signed integer field.
pub(crate) fn int(ctx: Ctx<'_>, m: &Message, name: &str) -> Result<Option<i64>> {
    m.get(name)
        .map(|f| conv(ctx, f, "an integer", Scalar::as_i64))
        .transpose()
}

/// Repeated signed integer field.
pub(crate) fn ints(ctx: Ctx<'_>, m: &Message, name: &str) -> Result<Vec<i64>> {
    m.all(name)
        .map(|f| conv(ctx, f, "an integer", Scalar::as_i64))
        .collect()
}

/// Singular float field.
pub(crate) fn float(ctx: Ctx<'_>, m: &Message, name: &str) -> Result<Option<f32>> {
    m.get(name)
        .map(|f| conv(ctx, f, "a number", |s| s.as_f64().map(|v| v as f32)))
        .transpose()
}

/// Repeated float field.
pub(crate) fn floats(ctx: Ctx<'_>, m: &Message, name: &str) -> Result<Vec<f32>> {
    m.all(name)
        .map(|f| conv(ctx, f, "a number", |s| s.as_f64().map(|v| v as f32)))
        .collect()
}

/// Singular boolean field.
pub(crate) fn boolean(ctx: Ctx<'_>, m: &Message, name: &str) -> Result<Option<bool>> {
    m.get(name)
        .map(|f| conv(ctx, f, "true or false", Scalar::as_bool))
        .transpose()
}

/// Singular string field.
pub(crate) fn string(ctx: Ctx<'_>, m: &Message, name: &str) -> Result<Option<String>> {
    m.get(name)
        .map(|f| conv(ctx, f, "a quoted string", |s| s.as_str().map(str::to_owned)))
        .transpose()
}

/// Repeated string field.
pub(crate) fn strings(ctx: Ctx<'_>, m: &Message, name: &str) -> Result<Vec<String>> {
    m.all(name)
        .map(|f| conv(ctx, f, "a quoted string", |s| s.as_str().map(str::to_owned)))
        .collect()
}

/// Singular enum field, by value name or number; returns the number.
pub(crate) fn enumeration(
    ctx: Ctx<'_>,
    m: &Message,
    name: &str,
    values: &[(&str, i64)],
) -> Result<Option<i64>> {
    let Some(f) = m.get(name) else {
        return Ok(None);
    };
    let s = scalar(ctx, f)?;
    let found = match s {
        Scalar::Ident(i) => values.iter().find(|(n, _)| n == i).map(|&(_, v)| v),
        Scalar::Number(_) => s.as_i64().filter(|v| values.iter().any(|&(_, n)| n == *v)),
        Scalar::Str(_) => None,
    };
    found.map(Some).ok_or_else(|| {
        let names: Vec<_> = values.iter().map(|(n, _)| *n).collect();
        bad(ctx, f, s, &format!("one of {}", names.join(", ")))
    })
}

/// Singular message field (last occurrence wins).
pub(crate) fn message<'m>(ctx: Ctx<'_>, m: &'m Message, name: &str) -> Result<Option<&'m Message>> {
    m.get(name).map(|f| as_message(ctx, f)).transpose()
}

/// Repeated message field.
pub(crate) fn messages<'m>(ctx: Ctx<'_>, m: &'m Message, name: &str) -> Result<Vec<&'m Message>> {
    m.all(name).map(|f| as_message(ctx, f)).collect()
}

/// A field's value as a message.
pub(crate) fn as_message<'m>(ctx: Ctx<'_>, f: &'m Field) -> Result<&'m Message> {
    match &f.value {
        Value::Message(m) => Ok(m),
        Value::Scalar(s) => Err(ctx.err(format!(
            "`{}` (line {}) must be a message `{{ ... }}`, found {s}",
            f.name, f.line
        ))),
    }
}
