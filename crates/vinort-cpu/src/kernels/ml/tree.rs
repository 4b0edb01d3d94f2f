//! [TreeEnsemble](https://onnx.ai/onnx/operators/onnx_aionnxml_TreeEnsemble.html), ai.onnx.ml 5,
//! for float, double and float16 inputs (the type of `nodes_splits`, `leaf_weights` and
//! `membership_values` too).
//!
//! Every row `X[n, :]` walks each tree from its root: an interior node compares feature
//! `nodes_featureids[i]` with `nodes_splits[i]` (or, for `BRANCH_MEMBER`, tests membership of its
//! set from `membership_values`), and follows the true or false branch, which is another node or
//! a leaf as `nodes_trueleafs` / `nodes_falseleafs` say. A NaN feature takes the true branch
//! only when `nodes_missing_value_tracks_true` says so — unless the comparison itself is true,
//! as `BRANCH_NEQ` is for NaN. Each reached leaf adds `leaf_weights[l]` to target
//! `leaf_targetids[l]` by the aggregate function, then `post_transform` maps each output row.
//!
//! Decisions follow the reference implementation where the spec is silent:
//! - the `BRANCH_MEMBER` sets are read from `membership_values` in node order, each ended by a
//!   NaN (the last one may also end with the list);
//! - MIN / MAX start every target at the type's largest / smallest finite value, so a target no
//!   leaf reaches keeps it (onnxruntime would report 0);
//! - AVERAGE divides the sum by the number of trees;
//! - SOFTMAX_ZERO leaves zero scores at zero, and a row of zeros becomes 0.5 everywhere;
//! - PROBIT is `√2 · erfinv(2p − 1)` with Winitzki's closed-form erfinv (a = 0.147), the
//!   approximation both onnxruntime and the reference use (good to about 1e-3 relative).
//!
//! Scores are computed in f64 and rounded once into the input's type. `nodes_hitrates` is a
//! performance hint and is ignored.

use rayon::prelude::*;
use vinort_ir::Values;
use vinort_ir::{DType, Error, Node, Result, RunContext, Tensor, Value};

use super::{ML_DOMAIN, ML_MAX_OPSET, store_f64};
use crate::kernel::{Kernel, NodeInfo, Registry, index_below, tensor_in};

pub(crate) fn register(r: &mut Registry) {
    r.add(ML_DOMAIN, "TreeEnsemble", 5..=ML_MAX_OPSET, factory);
}

/// How leaf weights of one target combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregate {
    /// Sum divided by the number of trees.
    Average,
    /// Sum.
    Sum,
    /// Smallest weight.
    Min,
    /// Largest weight.
    Max,
}

/// The transform applied to each output row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostTransform {
    /// Identity.
    None,
    /// Softmax over the targets.
    Softmax,
    /// `1 / (1 + e^-x)` per value.
    Logistic,
    /// Softmax over the non-zero targets; zeros stay zero.
    SoftmaxZero,
    /// The normal quantile function per value.
    Probit,
}

/// Where a branch leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    Node(usize),
    Leaf(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cmp {
    Leq,
    Lt,
    Gte,
    Gt,
    Eq,
    Neq,
    /// Membership of set `.0`.
    Member(usize),
}

#[derive(Clone, Debug)]
struct Split {
    feature: usize,
    cmp: Cmp,
    value: f64,
    nan_true: bool,
    on_true: Next,
    on_false: Next,
}

/// A compiled TreeEnsemble node.
pub struct TreeEnsemble {
    dtype: DType,
    nodes: Vec<Split>,
    /// Member sets, sorted by `total_cmp` with -0.0 folded into 0.0.
    sets: Vec<Vec<f64>>,
    leaf_weights: Vec<f64>,
    leaf_targets: Vec<usize>,
    roots: Vec<usize>,
    n_targets: usize,
    aggregate: Aggregate,
    post: PostTransform,
    /// Number of features the input must have at least.
    min_features: usize,
}

/// -0.0 folded into 0.0, so that a sorted set can be searched by `total_cmp`.
fn fold_zero(v: f64) -> f64 {
    if v == 0.0 { 0.0 } else { v }
}

fn float_attr(node: &Node, name: &str) -> Result<Tensor> {
    let t = node.req_attr::<Tensor>(name)?.to_aligned();
    if !matches!(t.dtype(), DType::F32 | DType::F64 | DType::F16) {
        return Err(node.error(format!("{name} must be a float, double or float16 tensor, got {}", t.dtype())));
    }
    Ok(t)
}

fn factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(Box::new(TreeEnsemble::from_node(info.node)?))
}

impl TreeEnsemble {
    /// Parses and checks a node's attributes.
    pub fn from_node(n: &Node) -> Result<TreeEnsemble> {
        let features = n.req_attr::<Vec<i64>>("nodes_featureids")?;
        let splits_t = float_attr(n, "nodes_splits")?;
        let dtype = splits_t.dtype();
        let splits = splits_t.to_f64_vec()?;
        let modes = n
            .req_attr::<Tensor>("nodes_modes")?
            .to_aligned()
            .to_i64_vec()
            .map_err(|e| n.error(format!("nodes_modes: {e}")))?;
        let true_ids = n.req_attr::<Vec<i64>>("nodes_truenodeids")?;
        let false_ids = n.req_attr::<Vec<i64>>("nodes_falsenodeids")?;
        let true_leafs = n.req_attr::<Vec<i64>>("nodes_trueleafs")?;
        let false_leafs = n.req_attr::<Vec<i64>>("nodes_falseleafs")?;
        let count = features.len();
        let missing = n.attr::<Vec<i64>>("nodes_missing_value_tracks_true")?.unwrap_or_else(|| vec![0; count]);
        for (name, len) in [
            ("nodes_splits", splits.len()),
            ("nodes_modes", modes.len()),
            ("nodes_truenodeids", true_ids.len()),
            ("nodes_falsenodeids", false_ids.len()),
            ("nodes_trueleafs", true_leafs.len()),
            ("nodes_falseleafs", false_leafs.len()),
            ("nodes_missing_value_tracks_true", missing.len()),
        ] {
            if len != count {
                return Err(n.error(format!("{name} has {len} entries but nodes_featureids has {count}")));
            }
        }

        let weights_t = float_attr(n, "leaf_weights")?;
        if weights_t.dtype() != dtype {
            return Err(n.error(format!("leaf_weights is {} but nodes_splits is {dtype}", weights_t.dtype())));
        }
        let leaf_weights = weights_t.to_f64_vec()?;
        let targets = n.req_attr::<Vec<i64>>("leaf_targetids")?;
        if targets.len() != leaf_weights.len() {
            return Err(n.error(format!(
                "leaf_targetids has {} entries but leaf_weights has {}",
                targets.len(),
                leaf_weights.len()
            )));
        }
        let n_targets = match n.attr::<i64>("n_targets")? {
            Some(t) => usize::try_from(t).map_err(|_| n.error(format!("n_targets must be non-negative, got {t}")))?,
            None => targets.iter().map(|t| t.saturating_add(1).max(0) as usize).max().unwrap_or(0),
        };
        let leaf_targets: Vec<usize> = targets
            .iter()
            .map(|&t| {
                index_below(t, n_targets)
                    .ok_or_else(|| n.error(format!("leaf target id {t} is outside 0..{n_targets} (n_targets)")))
            })
            .collect::<Result<_>>()?;
        let leaves = leaf_weights.len();

        // Member sets, in node order.
        let member_nodes = modes.iter().filter(|m| **m == 6).count();
        let mut sets: Vec<Vec<f64>> = Vec::new();
        if let Some(t) = n.attr::<Tensor>("membership_values")? {
            let t = t.to_aligned();
            if t.dtype() != dtype {
                return Err(n.error(format!("membership_values is {} but nodes_splits is {dtype}", t.dtype())));
            }
            let vals = t.to_f64_vec()?;
            let mut cur = Vec::new();
            for v in &vals {
                if v.is_nan() {
                    sets.push(std::mem::take(&mut cur));
                } else {
                    cur.push(fold_zero(*v));
                }
            }
            if !cur.is_empty() {
                sets.push(cur);
            }
            for s in &mut sets {
                s.sort_by(f64::total_cmp);
            }
        }
        if sets.len() != member_nodes {
            return Err(n.error(format!(
                "{member_nodes} BRANCH_MEMBER node(s) but membership_values holds {} NaN-separated set(s)",
                sets.len()
            )));
        }

        let child = |id: i64, leaf: i64, which: &str, i: usize| -> Result<Next> {
            let (limit, what) = if leaf != 0 { (leaves, "leaf") } else { (count, "node") };
            let k = index_below(id, limit)
                .ok_or_else(|| n.error(format!("node {i}: {which} branch {what} {id} is outside 0..{limit}")))?;
            Ok(if leaf != 0 { Next::Leaf(k) } else { Next::Node(k) })
        };
        let mut next_set = 0;
        let mut nodes = Vec::with_capacity(count);
        for i in 0..count {
            let cmp = match modes[i] {
                0 => Cmp::Leq,
                1 => Cmp::Lt,
                2 => Cmp::Gte,
                3 => Cmp::Gt,
                4 => Cmp::Eq,
                5 => Cmp::Neq,
                6 => {
                    next_set += 1;
                    Cmp::Member(next_set - 1)
                }
                m => return Err(n.error(format!("node {i}: unknown mode {m} (expected 0..=6)"))),
            };
            let feature = usize::try_from(features[i])
                .map_err(|_| n.error(format!("node {i}: negative feature id {}", features[i])))?;
            nodes.push(Split {
                feature,
                cmp,
                value: splits[i],
                nan_true: missing[i] != 0,
                on_true: child(true_ids[i], true_leafs[i], "true", i)?,
                on_false: child(false_ids[i], false_leafs[i], "false", i)?,
            });
        }

        let roots: Vec<usize> = n
            .req_attr::<Vec<i64>>("tree_roots")?
            .iter()
            .map(|&r| index_below(r, count).ok_or_else(|| n.error(format!("tree root {r} is outside 0..{count}"))))
            .collect::<Result<_>>()?;
        check_acyclic(&nodes, &roots).map_err(|i| n.error(format!("the trees have a cycle through node {i}")))?;
        let min_features = reachable(&nodes, &roots)
            .filter(|&i| nodes[i].on_true != nodes[i].on_false)
            .map(|i| nodes[i].feature + 1)
            .max()
            .unwrap_or(0);

        let aggregate = match n.attr_or::<i64>("aggregate_function", 1)? {
            0 => Aggregate::Average,
            1 => Aggregate::Sum,
            2 => Aggregate::Min,
            3 => Aggregate::Max,
            a => return Err(n.error(format!("unknown aggregate_function {a} (expected 0..=3)"))),
        };
        let post = match n.attr_or::<i64>("post_transform", 0)? {
            0 => PostTransform::None,
            1 => PostTransform::Softmax,
            2 => PostTransform::Logistic,
            3 => PostTransform::SoftmaxZero,
            4 => PostTransform::Probit,
            p => return Err(n.error(format!("unknown post_transform {p} (expected 0..=4)"))),
        };
        Ok(TreeEnsemble {
            dtype,
            nodes,
            sets,
            leaf_weights,
            leaf_targets,
            roots,
            n_targets,
            aggregate,
            post,
            min_features,
        })
    }

    /// The leaf a row reaches from a root.
    fn leaf(&self, row: &[f64], root: usize) -> usize {
        let mut i = root;
        loop {
            let s = &self.nodes[i];
            // A node whose branches agree needs no feature (a one-leaf tree is encoded so).
            let next = if s.on_true == s.on_false {
                s.on_true
            } else {
                let x = row[s.feature];
                let v = s.value;
                let hit = match s.cmp {
                    Cmp::Leq => x <= v,
                    Cmp::Lt => x < v,
                    Cmp::Gte => x >= v,
                    Cmp::Gt => x > v,
                    Cmp::Eq => x == v,
                    Cmp::Neq => x != v,
                    Cmp::Member(k) => {
                        !x.is_nan() && self.sets[k].binary_search_by(|m| m.total_cmp(&fold_zero(x))).is_ok()
                    }
                };
                if hit || (s.nan_true && x.is_nan()) { s.on_true } else { s.on_false }
            };
            match next {
                Next::Leaf(l) => return l,
                Next::Node(j) => i = j,
            }
        }
    }

    /// The scores of one row into `out` (`n_targets` values).
    fn score_row(&self, row: &[f64], out: &mut [f64]) {
        let big = match self.dtype {
            DType::F16 => half::f16::MAX.to_f64(),
            DType::F32 => f32::MAX as f64,
            _ => f64::MAX,
        };
        let init = match self.aggregate {
            Aggregate::Average | Aggregate::Sum => 0.0,
            Aggregate::Min => big,
            Aggregate::Max => -big,
        };
        out.fill(init);
        for &root in &self.roots {
            let l = self.leaf(row, root);
            let (t, w) = (self.leaf_targets[l], self.leaf_weights[l]);
            let o = &mut out[t];
            match self.aggregate {
                Aggregate::Average | Aggregate::Sum => *o += w,
                Aggregate::Min => *o = o.min(w),
                Aggregate::Max => *o = o.max(w),
            }
        }
        if self.aggregate == Aggregate::Average && !self.roots.is_empty() {
            let k = self.roots.len() as f64;
            out.iter_mut().for_each(|v| *v /= k);
        }
        post_transform(self.post, out);
    }

    /// Scores `[N, F]` input.
    pub fn predict(&self, x: &Tensor) -> Result<Tensor> {
        if x.dtype() != self.dtype {
            return Err(Error::invalid(format!("input X is {} but the tree attributes are {}", x.dtype(), self.dtype)));
        }
        let &[rows, feats] = x.shape() else {
            return Err(Error::invalid(format!("input X must have shape [N, F], got {:?}", x.shape())));
        };
        if feats < self.min_features {
            return Err(Error::invalid(format!(
                "input X has {feats} features but the trees test feature {}",
                self.min_features - 1
            )));
        }
        let xs = x.to_f64_vec()?;
        let t = self.n_targets;
        let mut out = vec![0.0f64; rows * t];
        if t > 0 && feats > 0 {
            let score = |(o, r): (&mut [f64], &[f64])| self.score_row(r, o);
            if crate::par::worth(rows * self.roots.len(), crate::par::TREE_VISITS) {
                out.par_chunks_mut(t).zip(xs.par_chunks(feats)).for_each(score);
            } else {
                out.chunks_mut(t).zip(xs.chunks(feats)).for_each(score);
            }
        } else if t > 0 {
            // No features: every row walks the same (feature-free) paths.
            let empty: [f64; 0] = [];
            out.chunks_mut(t).for_each(|o| self.score_row(&empty, o));
        }
        store_f64(self.dtype, &[rows, t], &out)
    }
}

impl Kernel for TreeEnsemble {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        Ok(smallvec::smallvec![self.predict(tensor_in(inputs, 0)?)?.into()])
    }
}

/// Nodes reachable from the roots (each once).
fn reachable<'a>(nodes: &'a [Split], roots: &[usize]) -> impl Iterator<Item = usize> + 'a {
    let mut seen = vec![false; nodes.len()];
    let mut stack: Vec<usize> = roots.to_vec();
    let mut order = Vec::new();
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        order.push(i);
        for next in [nodes[i].on_true, nodes[i].on_false] {
            if let Next::Node(j) = next {
                stack.push(j);
            }
        }
    }
    order.into_iter()
}

/// Ok when no path from a root returns to a node it passed; else a node on a cycle.
fn check_acyclic(nodes: &[Split], roots: &[usize]) -> std::result::Result<(), usize> {
    // 0 unvisited, 1 on the current path, 2 finished.
    let mut state = vec![0u8; nodes.len()];
    for &root in roots {
        if state[root] != 0 {
            continue;
        }
        // (node, children pushed?)
        let mut stack = vec![(root, false)];
        while let Some((i, expanded)) = stack.pop() {
            if expanded {
                state[i] = 2;
                continue;
            }
            match state[i] {
                1 => return Err(i),
                2 => continue,
                _ => {}
            }
            state[i] = 1;
            stack.push((i, true));
            for next in [nodes[i].on_true, nodes[i].on_false] {
                if let Next::Node(j) = next {
                    match state[j] {
                        1 => return Err(j),
                        0 => stack.push((j, false)),
                        _ => {}
                    }
                }
            }
        }
    }
    Ok(())
}

/// Applies a post transform to one row of scores.
pub fn post_transform(p: PostTransform, v: &mut [f64]) {
    match p {
        PostTransform::None => {}
        PostTransform::Softmax => {
            let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            v.iter_mut().for_each(|x| *x = (*x - m).exp());
            let s: f64 = v.iter().sum();
            v.iter_mut().for_each(|x| *x /= s);
        }
        PostTransform::Logistic => v.iter_mut().for_each(|x| *x = logistic(*x)),
        PostTransform::SoftmaxZero => {
            let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            for x in v.iter_mut() {
                // Near-zero scores are scaled like the others rather than exponentiated, so an
                // exact zero stays zero.
                *x = if x.abs() > 1e-7 {
                    (*x - m).exp()
                } else if *x == 0.0 {
                    0.0
                } else {
                    *x * (-m).exp()
                };
            }
            let s: f64 = v.iter().sum();
            if s == 0.0 {
                v.fill(0.5);
            } else {
                v.iter_mut().for_each(|x| *x /= s);
            }
        }
        PostTransform::Probit => v.iter_mut().for_each(|x| *x = probit(*x)),
    }
}

/// The logistic function, without overflow for large |x|.
fn logistic(x: f64) -> f64 {
    let e = (-x.abs()).exp();
    if x >= 0.0 { 1.0 / (1.0 + e) } else { e / (1.0 + e) }
}

/// `√2 · erfinv(2p − 1)` with Winitzki's approximation of erfinv (a = 0.147):
/// `erfinv(y) ≈ sgn(y) · sqrt(sqrt(b² − ln(1−y²)/a) − b)` where `b = 2/(πa) + ln(1−y²)/2`.
pub fn probit(p: f64) -> f64 {
    const A: f64 = 0.147;
    let y = 2.0 * p - 1.0;
    let l = ((1.0 - y) * (1.0 + y)).ln();
    let b = 2.0 / (std::f64::consts::PI * A) + 0.5 * l;
    let e = ((b * b - l / A).sqrt() - b).sqrt();
    std::f64::consts::SQRT_2 * if y < 0.0 { -e } else { e }
}
