//! `reshape_input` and `layout`: per-input shape and layout overrides written as `name[...]` lists.

use std::fmt;
use std::str::FromStr;

use super::OptionError;

/// One dimension of a `reshape_input` shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dim {
    /// A fixed size `N`.
    Fixed(u64),
    /// A bounded dynamic size `min..max` (inclusive, `min <= max`).
    Bounded {
        /// Lower bound.
        min: u64,
        /// Upper bound.
        max: u64,
    },
    /// A fully dynamic size, written `?` or `-1`.
    Dynamic,
}

impl fmt::Display for Dim {
    /// OpenVINO partial-shape syntax: `3`, `80..120`, `?`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Fixed(n) => write!(f, "{n}"),
            Dim::Bounded { min, max } => write!(f, "{min}..{max}"),
            Dim::Dynamic => f.write_str("?"),
        }
    }
}

/// The shape requested for one model input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputShape {
    /// The model input's name.
    pub name: String,
    /// Its dimensions, outermost first.
    pub dims: Vec<Dim>,
}

impl InputShape {
    /// The shape in OpenVINO partial-shape string syntax, e.g. `[1,3,60,80..120]`.
    pub fn partial_shape(&self) -> String {
        let dims: Vec<String> = self.dims.iter().map(Dim::to_string).collect();
        format!("[{}]", dims.join(","))
    }
}

/// The `reshape_input` option: `name[1,3,60,80..120],other[1,?,..]`-style per-input shapes.
///
/// Each dimension is `N`, `A..B` (A <= B), `?` or `-1`. Input names are unique.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReshapeInput {
    /// The shapes, in the order written.
    pub inputs: Vec<InputShape>,
}

impl fmt::Display for ReshapeInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, input) in self.inputs.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}{}", input.name, input.partial_shape())?;
        }
        Ok(())
    }
}

/// One `name[...]` entry found by [`split_entries`], with byte offsets into the option string.
struct Entry<'a> {
    name: &'a str,
    name_pos: usize,
    inner: &'a str,
    inner_pos: usize,
}

/// Splits `a[...],b[...]` into entries; shared by `reshape_input` and `layout`.
fn split_entries<'a>(option: &'static str, input: &'a str) -> Result<Vec<Entry<'a>>, OptionError> {
    let err =
        |position: usize, reason: String| OptionError::Syntax { option, input: input.to_owned(), position, reason };
    let skip_ws = |mut pos: usize| {
        while input[pos..].starts_with(char::is_whitespace) {
            pos += input[pos..].chars().next().map_or(1, char::len_utf8);
        }
        pos
    };
    let mut entries = Vec::new();
    let mut pos = skip_ws(0);
    if pos == input.len() {
        return Err(err(0, "empty value; expected `name[...]` entries".to_owned()));
    }
    loop {
        let Some(open_rel) = input[pos..].find('[') else {
            return Err(err(pos, format!("expected `name[...]`, found `{}` with no `[`", &input[pos..])));
        };
        let open = pos + open_rel;
        let name = input[pos..open].trim();
        if name.is_empty() {
            return Err(err(open, "missing input name before `[`".to_owned()));
        }
        if let Some(bad) = name.find([']', ',']) {
            return Err(err(pos + bad, format!("unexpected `{}` in input name `{name}`", &name[bad..bad + 1])));
        }
        let Some(close_rel) = input[open + 1..].find(']') else {
            return Err(err(open, format!("unclosed `[` after `{name}`")));
        };
        let close = open + 1 + close_rel;
        let inner = &input[open + 1..close];
        if let Some(nested) = inner.find('[') {
            return Err(err(open + 1 + nested, format!("unclosed `[` after `{name}` (found another `[`)")));
        }
        entries.push(Entry { name, name_pos: pos, inner, inner_pos: open + 1 });
        pos = skip_ws(close + 1);
        if pos == input.len() {
            return Ok(entries);
        }
        if !input[pos..].starts_with(',') {
            return Err(err(pos, format!("expected `,` between entries, found `{}`", &input[pos..])));
        }
        pos = skip_ws(pos + 1);
        if pos == input.len() {
            return Err(err(pos, "trailing `,` with no entry after it".to_owned()));
        }
    }
}

fn reject_duplicate(option: &'static str, input: &str, seen: &[&str], entry: &Entry<'_>) -> Result<(), OptionError> {
    if seen.contains(&entry.name) {
        return Err(OptionError::Syntax {
            option,
            input: input.to_owned(),
            position: entry.name_pos,
            reason: format!("input `{}` is given twice", entry.name),
        });
    }
    Ok(())
}

impl FromStr for ReshapeInput {
    type Err = OptionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        const OPTION: &str = "reshape_input";
        let err = |position: usize, reason: String| OptionError::Syntax {
            option: OPTION,
            input: s.to_owned(),
            position,
            reason,
        };
        let mut inputs = Vec::new();
        let mut seen = Vec::new();
        for entry in split_entries(OPTION, s)? {
            reject_duplicate(OPTION, s, &seen, &entry)?;
            seen.push(entry.name);
            let mut dims = Vec::new();
            let mut offset = entry.inner_pos;
            for raw in entry.inner.split(',') {
                let token = raw.trim();
                let at = offset + (raw.len() - raw.trim_start().len());
                offset += raw.len() + 1;
                dims.push(parse_dim(token).map_err(|reason| err(at, reason))?);
            }
            inputs.push(InputShape { name: entry.name.to_owned(), dims });
        }
        Ok(ReshapeInput { inputs })
    }
}

fn parse_dim(token: &str) -> Result<Dim, String> {
    let number = |t: &str| -> Result<u64, String> {
        let t = t.trim();
        if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
            t.parse::<u64>().map_err(|_| format!("dimension `{t}` is too large"))
        } else {
            Err(format!("`{t}` is not a dimension; expected N, A..B, ? or -1"))
        }
    };
    match token {
        "" => Err("empty dimension; expected N, A..B, ? or -1".to_owned()),
        "?" | "-1" => Ok(Dim::Dynamic),
        _ => match token.split_once("..") {
            Some((a, b)) => {
                let (min, max) = (number(a)?, number(b)?);
                if min > max {
                    return Err(format!("bounds `{token}` have lower bound {min} greater than upper bound {max}"));
                }
                Ok(Dim::Bounded { min, max })
            }
            None => number(token).map(Dim::Fixed),
        },
    }
}

/// A tensor layout such as `NCHW` or `N?HW`: letters name dimensions, `?` is an unnamed one.
///
/// Stored upper-cased, since OpenVINO layout names are case-insensitive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout(String);

impl Layout {
    /// The layout string in OpenVINO syntax (e.g. `NCHW`).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The `layout` option: `name[NCHW],out[NC]`-style per-tensor layouts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LayoutSpec {
    /// `(tensor name, layout)` pairs, in the order written.
    pub entries: Vec<(String, Layout)>,
}

impl fmt::Display for LayoutSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, layout)) in self.entries.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{name}[{layout}]")?;
        }
        Ok(())
    }
}

impl FromStr for LayoutSpec {
    type Err = OptionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        const OPTION: &str = "layout";
        let mut entries = Vec::new();
        let mut seen = Vec::new();
        for entry in split_entries(OPTION, s)? {
            reject_duplicate(OPTION, s, &seen, &entry)?;
            seen.push(entry.name);
            let err = |offset: usize, reason: String| OptionError::Syntax {
                option: OPTION,
                input: s.to_owned(),
                position: entry.inner_pos + offset,
                reason,
            };
            let layout = entry.inner.trim().to_ascii_uppercase();
            if layout.is_empty() {
                return Err(err(0, format!("empty layout for `{}`", entry.name)));
            }
            let lead = entry.inner.len() - entry.inner.trim_start().len();
            for (i, c) in layout.char_indices() {
                if !(c.is_ascii_alphabetic() || c == '?') {
                    return Err(err(lead + i, format!("`{c}` in layout `{layout}`: expected letters or `?`")));
                }
                if c != '?' && layout[..i].contains(c) {
                    return Err(err(lead + i, format!("dimension `{c}` appears twice in layout `{layout}`")));
                }
            }
            entries.push((entry.name.to_owned(), Layout(layout)));
        }
        Ok(LayoutSpec { entries })
    }
}
