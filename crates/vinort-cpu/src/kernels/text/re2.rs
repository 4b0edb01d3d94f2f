//! [RegexFullMatch](https://onnx.ai/onnx/operators/onnx__RegexFullMatch.html) (20).
//!
//! The spec's patterns are RE2 syntax. The `regex` crate is close to RE2 but not equal, so a
//! pattern is first translated ([`re2_to_rust`]) where the two read the same text differently:
//!
//! - Perl classes `\d \s \w` (and negations) and `\b \B` are ASCII-only in RE2, Unicode-aware
//!   in `regex`: they become explicit ASCII classes and `(?-u:\b)`.
//! - `\Q...\E` quoting, octal escapes (`\0`, `\101`) and `\p{^Name}` negation exist only in
//!   RE2: they are rewritten as escaped literals, `\x{..}` and `\P{Name}`.
//! - Text that RE2 takes literally but `regex` does not: `{` not starting a valid counted
//!   repetition (`a{,3}`), `\<` and `\>` (word-boundary assertions in `regex`), and `[`, `&&`,
//!   `~~`, `--` inside a class (nested classes and set operations in `regex`).
//! - What RE2 rejects is rejected too, with a reason: back-references, look-around, `\C`,
//!   flags other than `i m s U`, repetition counts above 1000.
//!
//! Full match is `\A(?:pattern)\z`: every way of matching is tried, not just the leftmost
//! first one, so the anchored form is exactly RE2's `FullMatch`.

use vinort_ir::Values;
use vinort_ir::{Result, RunContext, Tensor, Value};

use crate::kernel::{Kernel, NodeInfo, Registry, tensor_in};

pub(crate) fn register(r: &mut Registry) {
    r.op("", "RegexFullMatch", factory);
}

struct RegexFullMatch {
    re: regex::Regex,
}

fn factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let pattern = n.req_attr::<String>("pattern")?;
    let re = compile_full(&pattern).map_err(|m| n.error(format!("pattern '{pattern}' {m}")))?;
    Ok(Box::new(RegexFullMatch { re }))
}

/// Compiles an RE2 pattern into a regex that matches whole strings only.
pub(crate) fn compile_full(pattern: &str) -> std::result::Result<regex::Regex, String> {
    let translated = re2_to_rust(pattern).map_err(|m| format!("is not supported RE2 syntax: {m}"))?;
    // Compiled on its own first, so an unbalanced `)` cannot pair with the wrapper's group.
    regex::Regex::new(&translated).map_err(|e| format!("cannot be compiled: {e}"))?;
    regex::Regex::new(&format!(r"\A(?:{translated})\z")).map_err(|e| format!("cannot be compiled: {e}"))
}

impl Kernel for RegexFullMatch {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let xs = x.as_strings()?;
        let y = Tensor::build::<bool>(x.shape(), |o| {
            for (o, s) in o.iter_mut().zip(xs) {
                *o = self.re.is_match(s);
            }
        });
        Ok(smallvec::smallvec![Value::Tensor(y)])
    }
}

/// RE2's largest repetition count.
const MAX_REPEAT: u32 = 1000;

const DIGIT: &str = "[0-9]";
const NOT_DIGIT: &str = "[^0-9]";
const WORD: &str = "[0-9A-Za-z_]";
const NOT_WORD: &str = "[^0-9A-Za-z_]";
// RE2's \s is [\t\n\f\r ]: no vertical tab.
const SPACE: &str = r"[\t\n\f\r ]";
const NOT_SPACE: &str = r"[^\t\n\f\r ]";

/// Translates an RE2 pattern into the `regex` crate's syntax with the same meaning (see the
/// module docs), or says why RE2 would reject it.
pub fn re2_to_rust(pattern: &str) -> std::result::Result<String, String> {
    let c: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut i = 0;
    let mut in_class = false;
    while i < c.len() {
        let ch = c[i];
        i += 1;
        if ch == '\\' {
            i = escape(&c, i, in_class, &mut out)?;
            continue;
        }
        if in_class {
            match ch {
                ']' => {
                    in_class = false;
                    out.push(']');
                }
                // A POSIX class `[:alpha:]` (or `[:^alpha:]`); any other `[` is a literal.
                '[' if c.get(i) == Some(&':') => match find(&c, i + 1, &[':', ']']) {
                    Some(end) => {
                        out.extend(&c[i - 1..end + 2]);
                        i = end + 2;
                    }
                    None => out.push_str(r"\["),
                },
                '[' | '&' | '~' => {
                    out.push('\\');
                    out.push(ch);
                }
                // `--` is set difference in `regex`; for RE2 the second `-` is a range end.
                '-' if c[i - 2] == '-' => out.push_str(r"\-"),
                _ => out.push(ch),
            }
            continue;
        }
        match ch {
            '[' => {
                in_class = true;
                out.push('[');
                if c.get(i) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                // A `]` first in a class is a literal.
                if c.get(i) == Some(&']') {
                    out.push_str(r"\]");
                    i += 1;
                }
            }
            '(' if c.get(i) == Some(&'?') => i = group_prefix(&c, i + 1, &mut out)?,
            '{' => match counted_repetition(&c, i)? {
                Some(end) => {
                    out.extend(&c[i - 1..end]);
                    i = end;
                }
                None => out.push_str(r"\{"),
            },
            _ => out.push(ch),
        }
    }
    if in_class {
        return Err("missing ']' closing a character class".into());
    }
    Ok(out)
}

/// Position of the first occurrence of `needle` in `c` at or after `from`.
fn find(c: &[char], from: usize, needle: &[char]) -> Option<usize> {
    (from..c.len().saturating_sub(needle.len() - 1)).find(|&j| c[j..].starts_with(needle))
}

/// Translates the escape whose character is `c[i]` (the backslash is just before); returns
/// the position after it.
fn escape(c: &[char], mut i: usize, in_class: bool, out: &mut String) -> std::result::Result<usize, String> {
    let Some(&e) = c.get(i) else {
        return Err("trailing backslash".into());
    };
    i += 1;
    match e {
        'd' => out.push_str(DIGIT),
        'D' => out.push_str(NOT_DIGIT),
        'w' => out.push_str(WORD),
        'W' => out.push_str(NOT_WORD),
        's' => out.push_str(SPACE),
        'S' => out.push_str(NOT_SPACE),
        'b' | 'B' | 'A' | 'z' if in_class => return Err(format!("\\{e} is not allowed in a character class")),
        'b' => out.push_str(r"(?-u:\b)"),
        'B' => out.push_str(r"(?-u:\B)"),
        'A' | 'z' | 'a' | 'f' | 't' | 'n' | 'r' | 'v' => {
            out.push('\\');
            out.push(e);
        }
        'x' => {
            // \xFF or \x{10FFFF}: copied whole so the braces are not read as a repetition.
            let end = if c.get(i) == Some(&'{') {
                find(c, i, &['}']).ok_or("missing '}' in a \\x{...} escape")? + 1
            } else {
                (i + 2).min(c.len())
            };
            out.push_str(r"\x");
            out.extend(&c[i..end]);
            i = end;
        }
        'p' | 'P' => {
            let mut negate = e == 'P';
            let name: String = if c.get(i) == Some(&'{') {
                let end = find(c, i, &['}']).ok_or("missing '}' in a \\p{...} class")?;
                let mut name: String = c[i + 1..end].iter().collect();
                i = end + 1;
                // RE2's \p{^Greek} is \P{Greek}.
                if let Some(rest) = name.strip_prefix('^') {
                    negate = !negate;
                    name = rest.to_owned();
                }
                name
            } else {
                let n = c.get(i).ok_or("missing class name after \\p")?;
                i += 1;
                n.to_string()
            };
            out.push_str(if negate { r"\P{" } else { r"\p{" });
            out.push_str(&name);
            out.push('}');
        }
        'Q' => {
            // Everything up to \E (or the end) is literal text.
            let end = find(c, i, &['\\', 'E']).unwrap_or(c.len());
            let lit: String = c[i..end].iter().collect();
            out.push_str(&regex::escape(&lit));
            i = (end + 2).min(c.len());
        }
        'C' => return Err("\\C (any byte) cannot be matched against UTF-8 text".into()),
        '1'..='7' if !c.get(i).is_some_and(|d| d.is_digit(8)) => {
            return Err(format!("back-reference \\{e} is not supported"));
        }
        '0'..='7' => {
            // Octal: up to three digits in all.
            let mut v = e.to_digit(8).unwrap_or(0);
            for _ in 0..2 {
                match c.get(i).and_then(|d| d.to_digit(8)) {
                    Some(d) => {
                        v = v * 8 + d;
                        i += 1;
                    }
                    None => break,
                }
            }
            out.push_str(&format!(r"\x{{{v:x}}}"));
        }
        '8' | '9' => return Err(format!("back-reference \\{e} is not supported")),
        // Any other escaped ASCII punctuation is that character (`\<` included, which would
        // be a word-boundary assertion in `regex`).
        p if p.is_ascii_punctuation() => out.push_str(&regex::escape(&p.to_string())),
        other => return Err(format!("unknown escape \\{other}")),
    }
    Ok(i)
}

/// Handles `(?` (`c[i]` is just after the `?`): named groups are copied, flag groups checked
/// to use only RE2's flags, and look-around and back-reference forms refused. Returns the
/// position after the prefix.
fn group_prefix(c: &[char], i: usize, out: &mut String) -> std::result::Result<usize, String> {
    match (c.get(i), c.get(i + 1)) {
        (Some('P'), Some('<')) => {
            out.push_str("(?P<");
            return Ok(i + 2);
        }
        (Some('P'), _) => return Err("(?P=name) back-references are not supported".into()),
        (Some('<'), Some('=' | '!')) | (Some('=' | '!'), _) => {
            return Err("look-around assertions are not supported".into());
        }
        (Some('<'), _) => {
            out.push_str("(?<");
            return Ok(i + 1);
        }
        _ => {}
    }
    let mut j = i;
    out.push_str("(?");
    loop {
        match c.get(j) {
            Some(&f @ ('i' | 'm' | 's' | 'U' | '-')) => out.push(f),
            Some(&f @ (':' | ')')) => {
                out.push(f);
                return Ok(j + 1);
            }
            Some(f) => return Err(format!("'{f}' is not an RE2 group flag (i, m, s, U)")),
            None => return Err("missing ')' after a group flag".into()),
        }
        j += 1;
    }
}

/// If `c[i..]` continues a counted repetition `{n}`, `{n,}` or `{n,m}` (the `{` is just
/// before `i`), the position after its `}`; `None` when RE2 reads the `{` as a literal.
fn counted_repetition(c: &[char], i: usize) -> std::result::Result<Option<usize>, String> {
    let number = |mut j: usize| -> (Option<u32>, usize) {
        let start = j;
        while c.get(j).is_some_and(char::is_ascii_digit) {
            j += 1;
        }
        if j == start {
            return (None, j);
        }
        let s: String = c[start..j].iter().collect();
        (Some(s.parse().unwrap_or(u32::MAX)), j)
    };
    let (Some(lo), mut j) = number(i) else { return Ok(None) };
    let mut hi = Some(lo);
    if c.get(j) == Some(&',') {
        let (h, k) = number(j + 1);
        hi = h;
        j = k;
    }
    if c.get(j) != Some(&'}') {
        return Ok(None);
    }
    if lo > MAX_REPEAT || hi.is_some_and(|h| h > MAX_REPEAT) {
        return Err(format!("repetition counts above {MAX_REPEAT} are not allowed"));
    }
    if hi.is_some_and(|h| h < lo) {
        return Err(format!("bad repetition {{{lo},{}}}", hi.unwrap_or(lo)));
    }
    Ok(Some(j + 1))
}
