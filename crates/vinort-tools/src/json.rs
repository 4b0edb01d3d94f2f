//! JSON for tools' reports, on `serde_json`: one line with a space after every `,` and `:`
//! (the layout `vinort perf --json` has always printed), floats as Rust prints them and
//! measured figures rounded to 6 decimals.
//!
//! ```
//! #[derive(serde::Serialize)]
//! struct Row {
//!     name: &'static str,
//!     #[serde(serialize_with = "vinort_tools::json::rounded")]
//!     ms: f64,
//! }
//! assert_eq!(vinort_tools::json::to_line(&Row { name: "a\u{1}", ms: 0.12345678 }), r#"{"name": "a\u0001", "ms": 0.123457}"#);
//! ```

use std::io;

use serde::{Serialize, Serializer};
use serde_json::ser::{CharEscape, Formatter};

/// The layout of [`to_line`].
struct Spaced;

impl Formatter for Spaced {
    fn begin_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    // Rust's shortest round-trip form without exponents: figures rounded by [`rounded`] print
    // as `0.000001`, not `1e-6`.
    fn write_f64<W: ?Sized + io::Write>(&mut self, w: &mut W, value: f64) -> io::Result<()> {
        write!(w, "{value}")
    }

    // Every control character but `\n`, `\r` and `\t` as `\u00XX`, backspace and form feed
    // included.
    fn write_char_escape<W: ?Sized + io::Write>(&mut self, w: &mut W, escape: CharEscape) -> io::Result<()> {
        let short = match escape {
            CharEscape::Quote => b'"',
            CharEscape::ReverseSolidus => b'\\',
            CharEscape::Solidus => b'/',
            CharEscape::LineFeed => b'n',
            CharEscape::CarriageReturn => b'r',
            CharEscape::Tab => b't',
            CharEscape::Backspace => return write!(w, "\\u0008"),
            CharEscape::FormFeed => return write!(w, "\\u000c"),
            CharEscape::AsciiControl(byte) => return write!(w, "\\u{byte:04x}"),
        };
        w.write_all(&[b'\\', short])
    }
}

/// `value` as one line of JSON (see the module documentation for the layout).
pub fn to_line<T: Serialize + ?Sized>(value: &T) -> String {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Spaced);
    // Serializing to memory fails only for maps with non-string keys, which no report has.
    if value.serialize(&mut ser).is_err() {
        return "null".into();
    }
    String::from_utf8(out).unwrap_or_default()
}

/// A measured figure: rounded to 6 decimals (to a whole number from 1e9 up), `null` when not
/// finite, which JSON cannot express. For `#[serde(serialize_with = ...)]`.
pub fn rounded<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    match round6(*x) {
        Some(v) => s.serialize_f64(v),
        None => s.serialize_none(),
    }
}

/// [`rounded`] for an optional figure (`null` when absent).
pub fn rounded_opt<S: Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match x.and_then(round6) {
        Some(v) => s.serialize_f64(v),
        None => s.serialize_none(),
    }
}

fn round6(x: f64) -> Option<f64> {
    if !x.is_finite() {
        None
    } else if x.abs() < 1e9 {
        Some((x * 1e6).round() / 1e6)
    } else {
        Some(x.round())
    }
}

/// Key-value pairs as a JSON object in their order (a `serde_json::Map` would sort them).
pub fn ordered<S, K, V>(pairs: &[(K, V)], s: S) -> Result<S::Ok, S::Error>
where
    S: Serializer,
    K: Serialize,
    V: Serialize,
{
    s.collect_map(pairs.iter().map(|(k, v)| (k, v)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct N(#[serde(serialize_with = "rounded")] f64);

    #[test]
    fn strings_are_escaped() {
        assert_eq!(to_line("a\"b\\c\nd\u{1}é\u{8}"), "\"a\\\"b\\\\c\\nd\\u0001é\\u0008\"");
    }

    #[test]
    fn numbers_are_plain_or_null() {
        let n = |x: f64| to_line(&N(x));
        assert_eq!(n(1.5), "1.5");
        assert_eq!(n(1e-7), "0");
        assert_eq!(n(1e-6), "0.000001");
        assert_eq!(n(0.0012345678), "0.001235");
        assert_eq!(n(12345678901.7), "12345678902");
        assert_eq!(n(3.0), "3");
        assert_eq!(n(f64::NAN), "null");
        assert_eq!(n(f64::INFINITY), "null");
    }

    #[test]
    fn objects_keep_their_order_and_spacing() {
        #[derive(Serialize)]
        struct O {
            #[serde(serialize_with = "ordered")]
            map: Vec<(String, String)>,
            list: Vec<u32>,
            none: Option<f64>,
        }
        let o = O { map: vec![("z".into(), "1".into()), ("a".into(), "2".into())], list: vec![1, 2], none: None };
        assert_eq!(to_line(&o), r#"{"map": {"z": "1", "a": "2"}, "list": [1, 2], "none": null}"#);
        assert_eq!(
            to_line(&O { map: vec![], list: vec![], none: Some(0.5) }),
            r#"{"map": {}, "list": [], "none": 0.5}"#
        );
    }
}
