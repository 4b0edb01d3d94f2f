//! Elementwise string ops: [StringConcat](https://onnx.ai/onnx/operators/onnx__StringConcat.html)
//! (20), [StringSplit](https://onnx.ai/onnx/operators/onnx__StringSplit.html) (20) and
//! [StringNormalizer](https://onnx.ai/onnx/operators/onnx__StringNormalizer.html) (10).

use std::collections::HashSet;
use vinort_ir::Values;

use vinort_ir::{Error, Result, RunContext, Tensor, Value};

use super::{broadcast_offsets, broadcast_shape};
use crate::kernel::{FnKernel, Kernel, NodeInfo, Registry, tensor_in};

pub(crate) fn register(r: &mut Registry) {
    r.op("", "StringConcat", concat_factory);
    r.op("", "StringSplit", split_factory);
    r.op("", "StringNormalizer", normalizer_factory);
}

// ---------------------------------------------------------------- StringConcat

fn concat_factory(_: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(Box::new(FnKernel(|inputs: &[Option<&Value>]| {
        let (x, y) = (tensor_in(inputs, 0)?, tensor_in(inputs, 1)?);
        let (xs, ys) = (x.as_strings()?, y.as_strings()?);
        let shape = broadcast_shape(x.shape(), y.shape())?;
        let (xo, yo) = (broadcast_offsets(x.shape(), &shape), broadcast_offsets(y.shape(), &shape));
        let out = xo
            .iter()
            .zip(&yo)
            .map(|(&i, &j)| {
                let (a, b) = (&xs[i], &ys[j]);
                let mut s = String::with_capacity(a.len() + b.len());
                s.push_str(a);
                s.push_str(b);
                s
            })
            .collect();
        Ok(smallvec::smallvec![Value::Tensor(Tensor::from_strings(&shape, out)?)])
    })))
}

// ---------------------------------------------------------------- StringSplit

struct StringSplit {
    /// `None` splits on runs of whitespace (the attribute is absent or "").
    delimiter: Option<String>,
    /// `None` is unlimited (absent or negative, as in Python's `str.split`).
    maxsplit: Option<usize>,
}

fn split_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let delimiter = n.attr::<String>("delimiter")?.filter(|d| !d.is_empty());
    let maxsplit = n.attr::<i64>("maxsplit")?.and_then(|m| usize::try_from(m).ok());
    Ok(Box::new(StringSplit { delimiter, maxsplit }))
}

/// Splits `s` at `delimiter` (consecutive delimiters delimit empty strings), or, with no
/// delimiter, at runs of Unicode whitespace with leading whitespace dropped and no empty
/// pieces. At most `maxsplit` splits are made; the unsplit rest is the last piece. As in
/// Python's `str.split`, which the ONNX reference uses, that rest keeps its trailing
/// whitespace.
pub(crate) fn split_str<'a>(s: &'a str, delimiter: Option<&str>, maxsplit: Option<usize>) -> Vec<&'a str> {
    if let Some(d) = delimiter {
        return match maxsplit {
            Some(m) => s.splitn(m.saturating_add(1), d).collect(),
            None => s.split(d).collect(),
        };
    }
    let mut parts = Vec::new();
    let mut rest = s.trim_start();
    while !rest.is_empty() {
        if maxsplit == Some(parts.len()) {
            parts.push(rest);
            break;
        }
        match rest.find(char::is_whitespace) {
            Some(end) => {
                parts.push(&rest[..end]);
                rest = rest[end..].trim_start();
            }
            None => {
                parts.push(rest);
                break;
            }
        }
    }
    parts
}

impl Kernel for StringSplit {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let xs = x.as_strings()?;
        let pieces: Vec<Vec<&str>> =
            xs.iter().map(|s| split_str(s, self.delimiter.as_deref(), self.maxsplit)).collect();
        let width = pieces.iter().map(Vec::len).max().unwrap_or(0);
        let mut out = Vec::with_capacity(xs.len() * width);
        for p in &pieces {
            out.extend(p.iter().map(|s| (*s).to_owned()));
            out.extend(std::iter::repeat_n(String::new(), width - p.len()));
        }
        let mut shape = x.shape().to_vec();
        shape.push(width);
        let counts: Vec<i64> = pieces.iter().map(|p| p.len() as i64).collect();
        Ok(smallvec::smallvec![
            Value::Tensor(Tensor::from_strings(&shape, out)?),
            Value::Tensor(Tensor::from_vec(x.shape(), counts)?)
        ])
    }
}

// ---------------------------------------------------------------- StringNormalizer

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CaseChange {
    None,
    Lower,
    Upper,
}

impl CaseChange {
    fn apply(self, s: &str) -> String {
        match self {
            CaseChange::None => s.to_owned(),
            CaseChange::Lower => s.to_lowercase(),
            CaseChange::Upper => s.to_uppercase(),
        }
    }
}

struct StringNormalizer {
    case: CaseChange,
    case_sensitive: bool,
    /// Stop words, case-folded when matching ignores case.
    stopwords: HashSet<String>,
}

/// The key two strings share when they are equal ignoring case. Upper- then lower-casing
/// with Unicode's full mappings approximates default caseless matching: "Straße" and
/// "STRASSE" both become "strasse".
pub(crate) fn caseless(s: &str) -> String {
    s.to_uppercase().to_lowercase()
}

/// Checks that a StringNormalizer locale asks for nothing but Unicode's default case mappings,
/// which is all this kernel does: the empty (platform default), C and POSIX locales, and
/// English ones (`en`, `en_US`, `en-GB`, `en_US.UTF-8`...). Other languages may carry
/// tailored mappings (Turkish dotted i, Lithuanian accents...) that would be silently wrong,
/// so they are refused.
pub(crate) fn check_locale(locale: &str) -> std::result::Result<(), String> {
    let base = locale.split('@').next().unwrap_or("");
    let (tag, codeset) = match base.split_once('.') {
        Some((t, c)) => (t, Some(c)),
        None => (base, None),
    };
    if let Some(c) = codeset {
        let c = c.to_ascii_lowercase().replace('-', "");
        if c != "utf8" {
            return Err(format!("locale '{locale}': only UTF-8 text is supported, not codeset '{c}'"));
        }
    }
    if matches!(tag, "" | "C" | "POSIX") {
        return Ok(());
    }
    let mut parts = tag.split(['_', '-']);
    let lang = parts.next().unwrap_or("");
    let region_ok = parts.all(|p| !p.is_empty() && p.len() <= 8 && p.chars().all(|c| c.is_ascii_alphanumeric()));
    if lang.eq_ignore_ascii_case("en") && region_ok {
        return Ok(());
    }
    Err(format!(
        "locale '{locale}' is not supported: only the default, C/POSIX and English (en, en_US...) \
         locales, whose case mappings are Unicode's defaults, are implemented"
    ))
}

fn normalizer_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let case = n.choice_attr(
        "case_change_action",
        Some("NONE"),
        &[("NONE", CaseChange::None), ("LOWER", CaseChange::Lower), ("UPPER", CaseChange::Upper)],
    )?;
    let case_sensitive = n.attr_or::<bool>("is_case_sensitive", false)?;
    if let Some(locale) = n.attr::<String>("locale")? {
        check_locale(&locale).map_err(|m| n.error(m))?;
    }
    let stopwords = n.attr_or::<Vec<String>>("stopwords", Vec::new())?;
    let stopwords = stopwords.iter().map(|w| if case_sensitive { w.clone() } else { caseless(w) }).collect();
    Ok(Box::new(StringNormalizer { case, case_sensitive, stopwords }))
}

impl Kernel for StringNormalizer {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let two_d = match x.shape() {
            [_] => false,
            [1, _] => true,
            s => {
                return Err(Error::invalid(format!(
                    "StringNormalizer: input must have shape [C] or [1, C], got {s:?}"
                )));
            }
        };
        // Stop words are whole elements (not words inside an element); the survivors are then
        // case-changed.
        let mut out: Vec<String> = x
            .as_strings()?
            .iter()
            .filter(|s| {
                if self.stopwords.is_empty() {
                    true
                } else if self.case_sensitive {
                    !self.stopwords.contains(s.as_str())
                } else {
                    !self.stopwords.contains(&caseless(s))
                }
            })
            .map(|s| self.case.apply(s))
            .collect();
        // The spec has no empty result: when everything is dropped the output is one empty string.
        if out.is_empty() {
            out.push(String::new());
        }
        let shape = if two_d { vec![1, out.len()] } else { vec![out.len()] };
        Ok(smallvec::smallvec![Value::Tensor(Tensor::from_strings(&shape, out)?)])
    }
}
