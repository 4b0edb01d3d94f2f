//! [TfIdfVectorizer](https://onnx.ai/onnx/operators/onnx__TfIdfVectorizer.html) (9) over int32,
//! int64 and string input of shape `[C]` or `[N, C]` (a scalar counts as `[1]`).
//!
//! An n-gram of size `n` at skip distance `d` is the items at positions `s, s+d, ..., s+(n-1)d`
//! of one row, for `1 <= d <= max_skip_count + 1`; a unigram is counted once, not once per
//! distance. Every size in `min_gram_length..=max_gram_length` found in the pool is counted.
//!
//! Pool items are mapped to small token ids once, at compile time, so int and string input
//! share one counting loop over ids.
//!
//! Weights: the spec says `weights[i]` belongs to the i-th pool n-gram, but the ONNX reference
//! and onnxruntime both apply `weights[j]` to output column `j`. The two agree whenever
//! `ngram_indexes` is `0, 1, 2...` (what converters emit); where they differ this kernel
//! follows the runtimes, so models keep the numbers they were validated with.

use std::collections::HashMap;
use vinort_ir::Values;

use vinort_ir::{DType, Error, Node, Result, RunContext, Tensor, Value};

use crate::kernel::{Kernel, NodeInfo, Registry, tensor_in};

pub(crate) fn register(r: &mut Registry) {
    r.op("", "TfIdfVectorizer", factory);
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Tf,
    Idf,
    TfIdf,
}

/// The pool's distinct items, each with its token id.
enum Vocab {
    Ints(HashMap<i64, u32>),
    Strings(HashMap<String, u32>),
}

struct TfIdf {
    mode: Mode,
    min_gram: usize,
    max_gram: usize,
    max_skip: usize,
    vocab: Vocab,
    /// Pool n-grams (as token ids) of the sizes in range, each with its output column.
    grams: HashMap<Vec<u32>, usize>,
    out_size: usize,
    /// Weight of each output column (empty: all ones).
    weights: Vec<f32>,
}

fn factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    build(info.node).map(|k| Box::new(k) as Box<dyn Kernel>)
}

fn build(n: &Node) -> Result<TfIdf> {
    let mode = n.choice_attr("mode", None, &[("TF", Mode::Tf), ("IDF", Mode::Idf), ("TFIDF", Mode::TfIdf)])?;
    let min_gram = n.req_attr::<i64>("min_gram_length")?;
    let max_gram = n.req_attr::<i64>("max_gram_length")?;
    let max_skip = n.req_attr::<i64>("max_skip_count")?;
    if min_gram < 1 || max_gram < min_gram {
        return Err(n.error(format!("need 1 <= min_gram_length <= max_gram_length, got {min_gram} and {max_gram}")));
    }
    if max_skip < 0 {
        return Err(n.error(format!("max_skip_count must be non-negative, got {max_skip}")));
    }
    let counts = n.req_attr::<Vec<i64>>("ngram_counts")?;
    let indexes = n.req_attr::<Vec<i64>>("ngram_indexes")?;
    let pool_ints = n.attr::<Vec<i64>>("pool_int64s")?;
    let pool_strings = n.attr::<Vec<String>>("pool_strings")?;

    // Token ids for the pool items, and the pool rewritten as ids.
    let (vocab, pool): (Vocab, Vec<u32>) = match (pool_ints, pool_strings) {
        (Some(p), None) => {
            let mut m = HashMap::new();
            let ids = p.iter().map(|v| intern(&mut m, *v)).collect();
            (Vocab::Ints(m), ids)
        }
        (None, Some(p)) => {
            let mut m = HashMap::new();
            let ids = p.into_iter().map(|v| intern(&mut m, v)).collect();
            (Vocab::Strings(m), ids)
        }
        (Some(_), Some(_)) => return Err(n.error("pool_int64s and pool_strings are both set; give exactly one")),
        (None, None) => return Err(n.error("one of pool_int64s or pool_strings is required")),
    };

    // ngram_counts[k] is where the (k+1)-grams start in the pool.
    let mut grams = HashMap::new();
    let mut gram_id = 0usize;
    for (k, &start) in counts.iter().enumerate() {
        let size = k + 1;
        let end = counts.get(k + 1).copied().unwrap_or(pool.len() as i64);
        if start < 0 || end < start || end > pool.len() as i64 {
            return Err(n.error(format!(
                "ngram_counts {counts:?} do not describe ascending offsets into a pool of {} items",
                pool.len()
            )));
        }
        let items = &pool[start as usize..end as usize];
        if items.len() % size != 0 {
            return Err(n.error(format!("{} pool items of {size}-grams do not make whole {size}-grams", items.len())));
        }
        for g in items.chunks(size) {
            let column = *indexes.get(gram_id).ok_or_else(|| {
                n.error(format!("ngram_indexes has {} entries, fewer than the pool's n-grams", indexes.len()))
            })?;
            let column = usize::try_from(column)
                .map_err(|_| n.error(format!("ngram_indexes holds a negative index {column}")))?;
            if (min_gram as usize..=max_gram as usize).contains(&size) && grams.insert(g.to_vec(), column).is_some() {
                return Err(n.error(format!("the pool holds a {size}-gram twice")));
            }
            gram_id += 1;
        }
    }
    if gram_id != indexes.len() {
        return Err(n.error(format!("ngram_indexes has {} entries for {gram_id} pool n-grams", indexes.len())));
    }
    let out_size =
        indexes.iter().max().map(|m| *m as usize + 1).ok_or_else(|| n.error("ngram_indexes must not be empty"))?;
    let weights = n.attr_or::<Vec<f32>>("weights", Vec::new())?;
    if !weights.is_empty() && (weights.len() != indexes.len() || weights.len() < out_size) {
        return Err(n.error(format!(
            "weights has {} entries; it needs one per n-gram ({}) covering all {out_size} output columns",
            weights.len(),
            indexes.len()
        )));
    }
    Ok(TfIdf {
        mode,
        min_gram: min_gram as usize,
        max_gram: max_gram as usize,
        max_skip: max_skip as usize,
        vocab,
        grams,
        out_size,
        weights,
    })
}

/// The id of `v` in `m`, adding it when new.
fn intern<K: std::hash::Hash + Eq>(m: &mut HashMap<K, u32>, v: K) -> u32 {
    let next = m.len() as u32;
    *m.entry(v).or_insert(next)
}

impl TfIdf {
    /// Adds the n-gram counts of one row of token ids (`None`: not in the pool) to `freq`.
    fn count_row(&self, row: &[Option<u32>], freq: &mut [u32]) {
        let mut gram = Vec::with_capacity(self.max_gram);
        for start in 0..row.len() {
            for dist in 1..=self.max_skip + 1 {
                gram.clear();
                let mut pos = start;
                while gram.len() < self.max_gram && pos < row.len() {
                    // An item outside the pool ends every longer n-gram too.
                    let Some(tok) = row[pos] else { break };
                    gram.push(tok);
                    let size = gram.len();
                    if size >= self.min_gram
                        && (size > 1 || dist == 1)
                        && let Some(&col) = self.grams.get(gram.as_slice())
                    {
                        freq[col] += 1;
                    }
                    pos += dist;
                }
            }
        }
    }

    /// Token ids of the input's items.
    fn tokens(&self, x: &Tensor) -> Result<Vec<Option<u32>>> {
        match (&self.vocab, x.dtype()) {
            (Vocab::Ints(m), DType::I32 | DType::I64) => {
                Ok(x.to_i64_vec()?.iter().map(|v| m.get(v).copied()).collect())
            }
            (Vocab::Strings(m), DType::String) => Ok(x.as_strings()?.iter().map(|v| m.get(v).copied()).collect()),
            (Vocab::Ints(_), t) => Err(Error::invalid(format!(
                "TfIdfVectorizer: the pool is pool_int64s, so input must be int32 or int64, got {t}"
            ))),
            (Vocab::Strings(_), t) => Err(Error::invalid(format!(
                "TfIdfVectorizer: the pool is pool_strings, so input must be string, got {t}"
            ))),
        }
    }
}

impl Kernel for TfIdf {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let (rows, out_shape) = match *x.shape() {
            [] => (1, vec![self.out_size]),
            [_] => (1, vec![self.out_size]),
            [b, _] => (b, vec![b, self.out_size]),
            ref s => {
                return Err(Error::invalid(format!("TfIdfVectorizer: input must have shape [C] or [N, C], got {s:?}")));
            }
        };
        let tokens = self.tokens(x)?;
        let width = tokens.len().checked_div(rows).unwrap_or(0);
        let mut freq = vec![0u32; rows * self.out_size];
        if width > 0 {
            for (row, f) in tokens.chunks(width).zip(freq.chunks_mut(self.out_size)) {
                self.count_row(row, f);
            }
        }
        let w = |col: usize| self.weights.get(col).copied().unwrap_or(1.0);
        let y = Tensor::build::<f32>(&out_shape, |o| {
            for (i, (o, &f)) in o.iter_mut().zip(&freq).enumerate() {
                let col = i % self.out_size;
                *o = match self.mode {
                    Mode::Tf => f as f32,
                    Mode::Idf if f > 0 => w(col),
                    Mode::Idf => 0.0,
                    Mode::TfIdf => f as f32 * w(col),
                };
            }
        });
        Ok(smallvec::smallvec![Value::Tensor(y)])
    }
}
