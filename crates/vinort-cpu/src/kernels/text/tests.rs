//! The string kernels against the worked examples of their specs, hand-derived cases for the
//! RE2 and Unicode subtleties, naive references (broadcasting, n-gram counting by brute-force
//! enumeration of position tuples) on random inputs, and bad-input cases.

use proptest::prelude::*;
use vinort_ir::{Attr, DType, Error, Result, Tensor, Value};

use super::re2::re2_to_rust;
use super::strings::{check_locale, split_str};
use crate::test_support::{run_op, strings as strs};

// ---------------------------------------------------------------- harness

fn run(op: &str, opset: i64, attrs: Vec<(&str, Attr)>, inputs: Vec<Tensor>, n_out: usize) -> Result<Vec<Tensor>> {
    let inputs: Vec<Option<Value>> = inputs.into_iter().map(|t| Some(Value::Tensor(t))).collect();
    run_op(op, opset, attrs, &inputs, n_out)?.into_iter().map(Value::into_tensor).collect()
}

fn run1(op: &str, opset: i64, attrs: Vec<(&str, Attr)>, inputs: Vec<Tensor>) -> Result<Tensor> {
    run(op, opset, attrs, inputs, 1)?.pop().ok_or_else(|| Error::invalid("no output"))
}

fn owned(t: &Tensor) -> Vec<String> {
    t.as_strings().unwrap().to_vec()
}

fn a_str(s: &str) -> Attr {
    Attr::String(s.into())
}

fn a_strs(v: &[&str]) -> Attr {
    Attr::Strings(v.iter().map(|s| (*s).to_owned()).collect())
}

// ---------------------------------------------------------------- StringConcat

#[test]
fn concat_spec_examples() {
    let y = run1("StringConcat", 20, vec![], vec![strs(&[2], &["abc", "def"]), strs(&[2], &[".com", ".net"])]).unwrap();
    assert_eq!(y.shape(), &[2]);
    assert_eq!(owned(&y), ["abc.com", "def.net"]);
    let y = run1("StringConcat", 20, vec![], vec![strs(&[3], &["cat", "dog", "snake"]), strs(&[1], &["s"])]).unwrap();
    assert_eq!(owned(&y), ["cats", "dogs", "snakes"]);
    let y = run1("StringConcat", 20, vec![], vec![strs(&[], &["的"]), strs(&[], &["中"])]).unwrap();
    assert_eq!(y.shape(), &[] as &[usize]);
    assert_eq!(owned(&y), ["的中"]);
}

#[test]
fn concat_broadcasts_both_ways() {
    // [2,1] + [3] -> [2,3]: element (i,j) is x[i] + y[j].
    let y = run1("StringConcat", 20, vec![], vec![strs(&[2, 1], &["a", "b"]), strs(&[3], &["1", "2", "3"])]).unwrap();
    assert_eq!(y.shape(), &[2, 3]);
    assert_eq!(owned(&y), ["a1", "a2", "a3", "b1", "b2", "b3"]);
    let y = run1("StringConcat", 20, vec![], vec![strs(&[0, 1], &[]), strs(&[2], &["x", "y"])]).unwrap();
    assert_eq!(y.shape(), &[0, 2]);
}

#[test]
fn concat_rejects_bad_input() {
    let e = run1("StringConcat", 20, vec![], vec![strs(&[2], &["a", "b"]), strs(&[3], &["1", "2", "3"])]).unwrap_err();
    assert!(e.to_string().contains("broadcast"), "{e}");
    let e = run1("StringConcat", 20, vec![], vec![strs(&[1], &["a"]), Tensor::from_slice(&[1], &[1.0f32]).unwrap()])
        .unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { expected: DType::String, .. }), "{e}");
}

proptest! {
    #[test]
    fn concat_matches_naive_broadcast(
        a in proptest::collection::vec(1usize..4, 0..4),
        mask in proptest::collection::vec(any::<bool>(), 4),
        drop in 0usize..3,
    ) {
        // y's shape: a suffix of a's, with some extents set to 1.
        let bs: Vec<usize> = a[drop.min(a.len())..]
            .iter()
            .zip(&mask)
            .map(|(d, m)| if *m { 1 } else { *d })
            .collect();
        let na: usize = a.iter().product();
        let nb: usize = bs.iter().product();
        let x = Tensor::from_strings(&a, (0..na).map(|i| format!("x{i}")).collect()).unwrap();
        let y = Tensor::from_strings(&bs, (0..nb).map(|i| format!("y{i}")).collect()).unwrap();
        let z = run1("StringConcat", 20, vec![], vec![x, y]).unwrap();
        prop_assert_eq!(z.shape(), a.as_slice());
        // Naive: unravel each output index, then ravel into y dropping broadcast axes.
        let lead = a.len() - bs.len();
        let zs = z.as_strings().unwrap();
        for (o, got) in zs.iter().enumerate() {
            let mut idx = vec![0; a.len()];
            let mut r = o;
            for ax in (0..a.len()).rev() {
                idx[ax] = r % a[ax];
                r /= a[ax];
            }
            let mut j = 0;
            for (k, &d) in bs.iter().enumerate() {
                j = j * d + if d == 1 { 0 } else { idx[lead + k] };
            }
            prop_assert_eq!(got, &format!("x{o}y{j}"));
        }
    }
}

// ---------------------------------------------------------------- StringSplit

fn split(x: Tensor, attrs: Vec<(&str, Attr)>) -> (Tensor, Tensor) {
    let mut out = run("StringSplit", 20, attrs, vec![x], 2).unwrap();
    let z = out.pop().unwrap();
    (out.pop().unwrap(), z)
}

#[test]
fn split_spec_examples() {
    let (y, z) = split(strs(&[2], &["o-n-n--x-", "o-n----nx"]), vec![("delimiter", a_str("-"))]);
    assert_eq!(y.shape(), &[2, 6]);
    assert_eq!(owned(&y), ["o", "n", "n", "", "x", "", "o", "n", "", "", "", "nx"]);
    assert_eq!(z.to_vec::<i64>().unwrap(), [6, 6]);

    let x = strs(&[2, 2], &["hello world", "def.net", "o n n x", "the quick brown fox"]);
    let (y, z) = split(x, vec![("maxsplit", Attr::Int(2))]);
    assert_eq!(y.shape(), &[2, 2, 3]);
    assert_eq!(owned(&y), ["hello", "world", "", "def.net", "", "", "o", "n", "n x", "the", "quick", "brown fox"]);
    assert_eq!(z.shape(), &[2, 2]);
    assert_eq!(z.to_vec::<i64>().unwrap(), [2, 1, 3, 3]);

    // An empty delimiter is whitespace splitting.
    let (y, z) = split(strs(&[2], &["  hello   world !", " a\tb\u{3000}c "]), vec![("delimiter", a_str(""))]);
    assert_eq!(owned(&y), ["hello", "world", "!", "a", "b", "c"]);
    assert_eq!(z.to_vec::<i64>().unwrap(), [3, 3]);

    let (y, z) = split(strs(&[0], &[]), vec![]);
    assert_eq!(y.shape(), &[0, 0]);
    assert_eq!(z.shape(), &[0]);
}

#[test]
fn split_edge_cases_follow_python_str_split() {
    // With a delimiter, "" is one empty piece; on whitespace it is no piece at all.
    assert_eq!(split_str("", Some(","), None), [""]);
    assert!(split_str("", None, None).is_empty());
    assert!(split_str(" \t ", None, None).is_empty());
    // Multi-character delimiters, and maxsplit 0.
    assert_eq!(split_str("a<>b<><>c", Some("<>"), None), ["a", "b", "", "c"]);
    assert_eq!(split_str("a,b", Some(","), Some(0)), ["a,b"]);
    // Python: '  a b  '.split(None, 0) == ['a b  '] and ' a b c '.split(None, 1) == ['a', 'b c '].
    assert_eq!(split_str("  a b  ", None, Some(0)), ["a b  "]);
    assert_eq!(split_str(" a b c ", None, Some(1)), ["a", "b c "]);
    assert_eq!(split_str("a ", None, Some(1)), ["a"]);
    // Rows of different lengths pad with "".
    let (y, z) = split(strs(&[3], &["a,b,c", "", "d"]), vec![("delimiter", a_str(","))]);
    assert_eq!(owned(&y), ["a", "b", "c", "", "", "", "d", "", ""]);
    assert_eq!(z.to_vec::<i64>().unwrap(), [3, 1, 1]);
    // Negative maxsplit is unlimited, as in Python.
    let (_, z) = split(strs(&[1], &["a b c"]), vec![("maxsplit", Attr::Int(-1))]);
    assert_eq!(z.to_vec::<i64>().unwrap(), [3]);
}

#[test]
fn split_rejects_non_strings() {
    let e = run("StringSplit", 20, vec![], vec![Tensor::from_slice(&[1], &[1i64]).unwrap()], 2).unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { .. }), "{e}");
    let e = run("StringSplit", 20, vec![("delimiter", Attr::Int(1))], vec![strs(&[1], &["a"])], 2).unwrap_err();
    assert!(e.to_string().contains("delimiter"), "{e}");
}

// ---------------------------------------------------------------- RegexFullMatch

fn full_match(pattern: &str, inputs: &[&str]) -> Result<Vec<bool>> {
    let y = run1("RegexFullMatch", 20, vec![("pattern", a_str(pattern))], vec![strs(&[inputs.len()], inputs)])?;
    y.to_vec::<bool>()
}

#[test]
fn regex_spec_examples() {
    let p = r"www\.[\w.-]+\.\bcom\b";
    assert_eq!(full_match(p, &["www.google.com", "www.facebook.com", "www.bbc.co.uk"]).unwrap(), [true, true, false]);
    let p = r"(\W|^)[\w.\-]{0,25}@(yahoo|gmail)\.com(\W|$)";
    let got = full_match(p, &["account@gmail.com", "account@hotmail.com", "not email", "account2@yahoo.com"]).unwrap();
    assert_eq!(got, [true, false, false, true]);
    let y = run1("RegexFullMatch", 20, vec![("pattern", a_str("a"))], vec![strs(&[2, 0], &[])]).unwrap();
    assert_eq!((y.dtype(), y.shape()), (DType::Bool, &[2usize, 0][..]));
}

#[test]
fn regex_matches_whole_strings_only() {
    assert_eq!(full_match("a", &["a", "ab", "ba", ""]).unwrap(), [true, false, false, false]);
    // The leftmost-first alternative "a" would stop short; full match still finds "ab".
    assert_eq!(full_match("a|ab", &["ab"]).unwrap(), [true]);
    // `$` and `^` are text anchors; `(?m)` cannot make a line match the whole text.
    assert_eq!(full_match("(?m)^a$", &["a\nb", "a"]).unwrap(), [false, true]);
    assert_eq!(full_match("", &["", "x"]).unwrap(), [true, false]);
}

#[test]
fn regex_perl_classes_are_ascii_as_in_re2() {
    assert_eq!(full_match(r"\w+", &["abc_9", "é", "日本"]).unwrap(), [true, false, false]);
    assert_eq!(full_match(r"\d", &["7", "٣"]).unwrap(), [true, false]);
    assert_eq!(full_match(r"\s", &[" ", "\u{a0}", "\u{b}"]).unwrap(), [true, false, false]);
    assert_eq!(full_match(r"[^\d]", &["x", "1"]).unwrap(), [true, false]);
    // \b is an ASCII word boundary: "é" is not a word character, so "é" then "x" is one.
    assert_eq!(full_match(r"é\bx", &["éx"]).unwrap(), [true]);
    // `.` and Unicode classes still work on characters, not bytes.
    assert_eq!(full_match(r".\pL\p{Greek}", &["éжλ"]).unwrap(), [true]);
    assert_eq!(full_match(r"\p{^Greek}", &["λ", "a"]).unwrap(), [false, true]);
}

#[test]
fn regex_re2_only_syntax_is_translated() {
    // As in RE2, a repetition after \E applies to the last quoted character.
    assert_eq!(full_match(r"\Qa.b*\E+", &["a.b*", "a.b**", "a.b*a.b*", "axb"]).unwrap(), [true, true, false, false]);
    assert_eq!(full_match(r"\101\0", &["A\0"]).unwrap(), [true]);
    // `{` that is no counted repetition is literal in RE2.
    assert_eq!(full_match(r"a{,3}", &["a{,3}", "aa"]).unwrap(), [true, false]);
    assert_eq!(full_match(r"a{2,3}", &["aa", "aaaa"]).unwrap(), [true, false]);
    assert_eq!(full_match(r"x{", &["x{"]).unwrap(), [true]);
    assert_eq!(full_match(r"\<a\>", &["<a>"]).unwrap(), [true]);
    // Inside a class `[`, `&&` and `--` are literals, POSIX classes still work.
    assert_eq!(full_match(r"[[a]+", &["[a[", "b"]).unwrap(), [true, false]);
    assert_eq!(full_match(r"[a&&b]+", &["a&b", "c"]).unwrap(), [true, false]);
    assert_eq!(full_match(r"[[:digit:]x]+", &["1x2", "y"]).unwrap(), [true, false]);
    assert_eq!(full_match(r"[]a]+", &["]a]"]).unwrap(), [true]);
    assert_eq!(full_match(r"(?i)ab(?P<n>c)(?<m>d)", &["ABCD"]).unwrap(), [true]);
    assert_eq!(re2_to_rust(r"\x{263a}\xff").unwrap(), r"\x{263a}\xff");
}

#[test]
fn regex_rejects_what_re2_rejects_with_a_reason() {
    for (p, why) in [
        (r"(a)\1", "back-reference"),
        (r"(?=a)", "look-around"),
        (r"(?<!a)b", "look-around"),
        (r"(?P=n)", "back-reference"),
        (r"\C", "any byte"),
        (r"(?x)a b", "not an RE2 group flag"),
        (r"a{1001}", "above 1000"),
        (r"a{3,2}", "bad repetition"),
        (r"[a", "missing ']'"),
        (r"a\", "trailing backslash"),
        (r"\y", "unknown escape"),
        (r"(a", "cannot be compiled"),
        (r"a)", "cannot be compiled"),
    ] {
        let e = full_match(p, &["a"]).unwrap_err().to_string();
        assert!(e.contains(why) && e.contains("pattern"), "{p}: {e}");
    }
    let e = run1("RegexFullMatch", 20, vec![], vec![strs(&[1], &["a"])]).unwrap_err();
    assert!(e.to_string().contains("pattern"), "{e}");
}

// ---------------------------------------------------------------- StringNormalizer

fn normalize(x: Tensor, attrs: Vec<(&str, Attr)>) -> Result<Tensor> {
    run1("StringNormalizer", 10, attrs, vec![x])
}

#[test]
fn normalizer_spec_examples() {
    let days = strs(&[4], &["monday", "tuesday", "wednesday", "thursday"]);
    let stop = || ("stopwords", a_strs(&["monday"]));
    let y = normalize(
        days.clone(),
        vec![("case_change_action", a_str("LOWER")), ("is_case_sensitive", Attr::Int(1)), stop()],
    )
    .unwrap();
    assert_eq!((y.shape(), owned(&y)), (&[3usize][..], vec!["tuesday".into(), "wednesday".into(), "thursday".into()]));
    let y = normalize(
        days.clone(),
        vec![("case_change_action", a_str("UPPER")), ("is_case_sensitive", Attr::Int(1)), stop()],
    )
    .unwrap();
    assert_eq!(owned(&y), ["TUESDAY", "WEDNESDAY", "THURSDAY"]);
    let y = normalize(days, vec![]).unwrap();
    assert_eq!(owned(&y), ["monday", "tuesday", "wednesday", "thursday"]);

    // Case-insensitive stop words on a [1, C] input keep the rank.
    let x = strs(&[1, 6], &["Monday", "tuesday", "wednesday", "Monday", "tuesday", "wednesday"]);
    let y = normalize(x, vec![("case_change_action", a_str("UPPER")), stop()]).unwrap();
    assert_eq!(y.shape(), &[1, 4]);
    assert_eq!(owned(&y), ["TUESDAY", "WEDNESDAY", "TUESDAY", "WEDNESDAY"]);
}

#[test]
fn normalizer_empty_output_is_one_empty_string() {
    let y = normalize(strs(&[2], &["monday", "monday"]), vec![("stopwords", a_strs(&["monday"]))]).unwrap();
    assert_eq!((y.shape(), owned(&y)), (&[1usize][..], vec![String::new()]));
    let y = normalize(strs(&[1, 1], &["MONDAY"]), vec![("stopwords", a_strs(&["monday"]))]).unwrap();
    assert_eq!((y.shape(), owned(&y)), (&[1usize, 1][..], vec![String::new()]));
    let y = normalize(strs(&[0], &[]), vec![]).unwrap();
    assert_eq!((y.shape(), owned(&y)), (&[1usize][..], vec![String::new()]));
}

#[test]
fn normalizer_case_rules() {
    // Case-sensitive matching keeps "Monday"; stop words match whole elements only.
    let x = strs(&[3], &["Monday", "monday", "a monday"]);
    let y =
        normalize(x.clone(), vec![("is_case_sensitive", Attr::Int(1)), ("stopwords", a_strs(&["monday"]))]).unwrap();
    assert_eq!(owned(&y), ["Monday", "a monday"]);
    // Full Unicode mappings: ß upper-cases to SS, and matches "STRASSE" ignoring case.
    let x = strs(&[3], &["Straße", "STRASSE", "ΣΑΣ"]);
    let y = normalize(x.clone(), vec![("case_change_action", a_str("UPPER"))]).unwrap();
    assert_eq!(owned(&y), ["STRASSE", "STRASSE", "ΣΑΣ"]);
    let y = normalize(x.clone(), vec![("case_change_action", a_str("LOWER"))]).unwrap();
    assert_eq!(owned(&y), ["straße", "strasse", "σας"]);
    let y = normalize(x, vec![("stopwords", a_strs(&["strasse"])), ("locale", a_str("en_US.UTF-8"))]).unwrap();
    assert_eq!(owned(&y), ["ΣΑΣ"]);
}

#[test]
fn normalizer_locales() {
    for ok in ["", "C", "POSIX", "C.UTF-8", "en", "en_US", "en-GB", "en_US.utf8", "en_US.UTF-8@euro"] {
        assert!(check_locale(ok).is_ok(), "{ok}");
    }
    for bad in ["tr_TR", "lt", "de_DE", "en_US.ISO-8859-1", "en__US", "english"] {
        assert!(check_locale(bad).is_err(), "{bad}");
    }
    let e = normalize(strs(&[1], &["i"]), vec![("locale", a_str("tr_TR.UTF-8"))]).unwrap_err();
    assert!(e.to_string().contains("tr_TR") && e.to_string().contains("not supported"), "{e}");
}

#[test]
fn normalizer_rejects_bad_input() {
    let e = normalize(strs(&[2, 2], &["a", "b", "c", "d"]), vec![]).unwrap_err();
    assert!(e.to_string().contains("[1, C]"), "{e}");
    let e = normalize(strs(&[], &["a"]), vec![]).unwrap_err();
    assert!(e.to_string().contains("[1, C]"), "{e}");
    let e = normalize(strs(&[1], &["a"]), vec![("case_change_action", a_str("TITLE"))]).unwrap_err();
    assert!(e.to_string().contains("case_change_action"), "{e}");
}

// ---------------------------------------------------------------- TfIdfVectorizer

/// The attributes of the spec's examples: pool unigrams [2, 3, 5, 4] and bigrams
/// [5,6] [7,8] [6,7], output columns 0..7.
fn tfidf_attrs(min: i64, max: i64, skip: i64, mode: &str) -> Vec<(&'static str, Attr)> {
    vec![
        ("min_gram_length", Attr::Int(min)),
        ("max_gram_length", Attr::Int(max)),
        ("max_skip_count", Attr::Int(skip)),
        ("mode", a_str(mode)),
        ("ngram_counts", Attr::Ints(vec![0, 4])),
        ("ngram_indexes", Attr::Ints((0..7).collect())),
        ("pool_int64s", Attr::Ints(vec![2, 3, 5, 4, 5, 6, 7, 8, 6, 7])),
    ]
}

fn tfidf(attrs: Vec<(&str, Attr)>, x: Tensor) -> Result<Tensor> {
    run1("TfIdfVectorizer", 9, attrs, vec![x])
}

const SPEC_ROW: [i32; 12] = [1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8];

#[test]
fn tfidf_spec_examples() {
    let x = Tensor::from_slice(&[12], &SPEC_ROW).unwrap();
    let cases: [(i64, i64, i64, [f32; 7]); 3] = [
        (2, 2, 0, [0., 0., 0., 0., 1., 1., 1.]),
        (2, 2, 5, [0., 0., 0., 0., 1., 3., 1.]),
        (1, 2, 5, [0., 3., 1., 0., 1., 3., 1.]),
    ];
    for (min, max, skip, want) in cases {
        let y = tfidf(tfidf_attrs(min, max, skip, "TF"), x.clone()).unwrap();
        assert_eq!(y.shape(), &[7]);
        assert_eq!(y.to_vec::<f32>().unwrap(), want, "min {min} max {max} skip {skip}");
    }
    // Batched: the same row split in two is counted row by row.
    let x = Tensor::from_slice(&[2, 6], &SPEC_ROW).unwrap();
    let y = tfidf(tfidf_attrs(1, 2, 5, "TF"), x).unwrap();
    assert_eq!(y.shape(), &[2, 7]);
    assert_eq!(y.to_vec::<f32>().unwrap(), [0., 3., 0., 0., 0., 0., 0., 0., 0., 1., 0., 1., 1., 1.]);
    // An empty unigram level: ngram_counts [0, 0] means the pool is all bigrams.
    let mut attrs = tfidf_attrs(2, 2, 0, "TF");
    attrs[4].1 = Attr::Ints(vec![0, 0]);
    attrs[5].1 = Attr::Ints(vec![0, 1, 2]);
    attrs[6].1 = Attr::Ints(vec![5, 6, 7, 8, 6, 7]);
    let y = tfidf(attrs, Tensor::from_slice(&[12], &SPEC_ROW).unwrap()).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), [1., 1., 1.]);
}

#[test]
fn tfidf_weighting_modes() {
    let x = Tensor::from_slice(&[12], &SPEC_ROW.map(i64::from)).unwrap();
    let tf = [0f32, 3., 1., 0., 1., 3., 1.];
    let w = [0.5f32, 1.5, 2.0, 4.0, 0.25, 3.0, 10.0];
    for (mode, weights, want) in [
        ("IDF", None, tf.map(|f| if f > 0.0 { 1.0 } else { 0.0 })),
        ("TFIDF", None, tf),
        ("IDF", Some(w), std::array::from_fn(|i| if tf[i] > 0.0 { w[i] } else { 0.0 })),
        ("TFIDF", Some(w), std::array::from_fn(|i| tf[i] * w[i])),
    ] {
        let mut attrs = tfidf_attrs(1, 2, 5, mode);
        if let Some(w) = weights {
            attrs.push(("weights", Attr::Floats(w.to_vec())));
        }
        assert_eq!(tfidf(attrs, x.clone()).unwrap().to_vec::<f32>().unwrap(), want, "{mode} {weights:?}");
    }
}

#[test]
fn tfidf_strings_scalars_and_empty_input() {
    let attrs = || {
        vec![
            ("min_gram_length", Attr::Int(1)),
            ("max_gram_length", Attr::Int(3)),
            ("max_skip_count", Attr::Int(0)),
            ("mode", a_str("TF")),
            ("ngram_counts", Attr::Ints(vec![0, 3, 5])),
            // Columns deliberately permuted.
            ("ngram_indexes", Attr::Ints(vec![4, 3, 2, 1, 0])),
            ("pool_strings", a_strs(&["the", "cat", "sat", "the", "cat", "the", "cat", "sat"])),
        ]
    };
    let x = strs(&[6], &["the", "cat", "sat", "on", "the", "cat"]);
    // "the": 2, "cat": 2, "sat": 1, "the cat": 2, "the cat sat": 1 -> columns 4, 3, 2, 1, 0.
    assert_eq!(tfidf(attrs(), x).unwrap().to_vec::<f32>().unwrap(), [1., 2., 1., 2., 2.]);
    let y = tfidf(attrs(), strs(&[], &["cat"])).unwrap();
    assert_eq!((y.shape(), y.to_vec::<f32>().unwrap()), (&[5usize][..], vec![0., 0., 0., 1., 0.]));
    let y = tfidf(attrs(), strs(&[3, 0], &[])).unwrap();
    assert_eq!((y.shape(), y.to_vec::<f32>().unwrap()), (&[3usize, 5][..], vec![0.; 15]));
    let y = tfidf(attrs(), strs(&[0], &[])).unwrap();
    assert_eq!((y.shape(), y.to_vec::<f32>().unwrap()), (&[5usize][..], vec![0.; 5]));
}

#[test]
fn tfidf_rejects_bad_attributes_and_input() {
    let x = || Tensor::from_slice(&[3], &[1i64, 2, 3]).unwrap();
    let with = |k: &'static str, v: Attr| {
        let mut a = tfidf_attrs(1, 2, 0, "TF");
        match a.iter_mut().find(|(n, _)| *n == k) {
            Some(slot) => slot.1 = v,
            None => a.push((k, v)),
        }
        a
    };
    for (attrs, why) in [
        (with("mode", a_str("BM25")), "mode"),
        (with("min_gram_length", Attr::Int(3)), "min_gram_length"),
        (with("max_skip_count", Attr::Int(-1)), "non-negative"),
        (with("ngram_counts", Attr::Ints(vec![0, 3])), "whole 2-grams"),
        (with("ngram_counts", Attr::Ints(vec![0, 11])), "ascending offsets"),
        (with("ngram_indexes", Attr::Ints(vec![0, 1, 2])), "fewer than"),
        (with("ngram_indexes", Attr::Ints((0..9).collect())), "entries for 7"),
        (with("ngram_indexes", Attr::Ints(vec![0, 1, 2, 3, 4, 5, -6])), "negative"),
        (with("pool_int64s", Attr::Ints(vec![2, 2, 5, 4, 5, 6, 7, 8, 6, 7])), "twice"),
        (with("pool_strings", a_strs(&["a"])), "both set"),
        (with("weights", Attr::Floats(vec![1.0; 3])), "weights"),
    ] {
        let e = tfidf(attrs, x()).unwrap_err().to_string();
        assert!(e.contains(why), "{why}: {e}");
    }
    let e = tfidf(tfidf_attrs(1, 2, 0, "TF"), strs(&[1], &["2"])).unwrap_err();
    assert!(e.to_string().contains("int32 or int64"), "{e}");
    let e = tfidf(tfidf_attrs(1, 2, 0, "TF"), Tensor::from_slice(&[1], &[2.0f32]).unwrap()).unwrap_err();
    assert!(e.to_string().contains("int32 or int64"), "{e}");
    let e = tfidf(tfidf_attrs(1, 2, 0, "TF"), Tensor::from_slice(&[1, 1, 1], &[2i64]).unwrap()).unwrap_err();
    assert!(e.to_string().contains("[N, C]"), "{e}");
}

/// Brute force: every increasing position tuple of a row with one common gap
/// `1..=skip+1` (a single position for unigrams) whose items form a pool n-gram.
fn naive_tf(row: &[i64], pool: &[Vec<i64>], min: usize, max: usize, skip: usize) -> Vec<f32> {
    let mut out = vec![0f32; pool.len()];
    let mut tuples: Vec<Vec<usize>> = Vec::new();
    for n in min..=max {
        for s in 0..row.len() {
            if n == 1 {
                tuples.push(vec![s]);
                continue;
            }
            for d in 1..=skip + 1 {
                let t: Vec<usize> = (0..n).map(|k| s + k * d).collect();
                if t[n - 1] < row.len() {
                    tuples.push(t);
                }
            }
        }
    }
    for t in tuples {
        let items: Vec<i64> = t.iter().map(|&p| row[p]).collect();
        if let Some(g) = pool.iter().position(|p| *p == items) {
            out[g] += 1.0;
        }
    }
    out
}

proptest! {
    #[test]
    fn tfidf_matches_brute_force(
        rows in proptest::collection::vec(proptest::collection::vec(0i64..4, 7), 1..3),
        min in 1usize..4,
        extra in 0usize..3,
        skip in 0usize..3,
    ) {
        let max = (min + extra).min(3);
        // Pool: every unigram 0..4, every bigram over 0..3, and a few trigrams.
        let mut pool: Vec<Vec<i64>> = (0..4).map(|a| vec![a]).collect();
        pool.extend((0..3).flat_map(|a| (0..3).map(move |b| vec![a, b])));
        pool.extend([vec![0, 1, 2], vec![1, 1, 1], vec![2, 0, 3]]);
        let flat: Vec<i64> = pool.iter().flatten().copied().collect();
        let attrs = vec![
            ("min_gram_length", Attr::Int(min as i64)),
            ("max_gram_length", Attr::Int(max as i64)),
            ("max_skip_count", Attr::Int(skip as i64)),
            ("mode", a_str("TF")),
            ("ngram_counts", Attr::Ints(vec![0, 4, 22])),
            ("ngram_indexes", Attr::Ints((0..pool.len() as i64).collect())),
            ("pool_int64s", Attr::Ints(flat)),
        ];
        let b = rows.len();
        let data: Vec<i64> = rows.iter().flatten().copied().collect();
        let y = tfidf(attrs, Tensor::from_vec(&[b, 7], data).unwrap()).unwrap();
        prop_assert_eq!(y.shape(), &[b, pool.len()]);
        let want: Vec<f32> = rows.iter().flat_map(|r| naive_tf(r, &pool, min, max, skip)).collect();
        prop_assert_eq!(y.to_vec::<f32>().unwrap(), want);
    }
}
