//! Tests of the ai.onnx.ml and signal kernels: the ONNX node cases end to end through the Cpu
//! provider, hand-derived values from the specs, TreeEnsemble against a naive recursive
//! evaluator of the raw attributes on random ensembles, and malformed inputs.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use vinort_ir::{Attr, DType, Node, Tensor};

use super::ML_DOMAIN;
use super::signal::{Window, mel_weight_matrix};
use super::tree::{PostTransform, post_transform, probit};
use crate::test_support::{self as ts, Cases, NODE_TOL, assert_close, run_node_cases, run1, vec1 as t1};

/// The node cases of this family (the `_expanded` window cases test function bodies built from
/// other families' ops and are left to the suite-wide runner).
const CASES: &[&str] = &[
    "test_ai_onnx_ml_array_feature_extractor",
    "test_ai_onnx_ml_binarizer",
    "test_ai_onnx_ml_label_encoder_string_int",
    "test_ai_onnx_ml_label_encoder_string_int_no_default",
    "test_ai_onnx_ml_label_encoder_tensor_mapping",
    "test_ai_onnx_ml_label_encoder_tensor_value_only_mapping",
    "test_ai_onnx_ml_tree_ensemble_set_membership",
    "test_ai_onnx_ml_tree_ensemble_single_tree",
    "test_blackmanwindow",
    "test_blackmanwindow_symmetric",
    "test_hammingwindow",
    "test_hammingwindow_symmetric",
    "test_hannwindow",
    "test_hannwindow_symmetric",
    "test_melweightmatrix",
];

#[test]
fn onnx_node_cases() {
    run_node_cases(Cases::Listed(CASES), &[], NODE_TOL);
}

// ---------------------------------------------------------------------------------------------
// Helpers

fn ml(op: &str, opset: i64, attrs: Vec<(&str, Attr)>, n_in: usize) -> Node {
    ts::op(op, opset).domain(ML_DOMAIN).inputs(n_in).attrs(attrs).build()
}

fn onnx(op: &str, opset: i64, attrs: Vec<(&str, Attr)>, n_in: usize) -> Node {
    ts::op(op, opset).inputs(n_in).attrs(attrs).build()
}

fn run(node: &Node, inputs: &[Tensor]) -> Tensor {
    run1(node, inputs).unwrap_or_else(|e| panic!("{}: {e}", node.op_type))
}

fn err(node: &Node, inputs: &[Tensor]) -> String {
    match run1(node, inputs) {
        Ok(t) => panic!("{} should fail, got {t:?}", node.op_type),
        Err(e) => e.to_string(),
    }
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn close(got: &[f64], want: &[f64], tol: f64) {
    assert_close(got, want, 0.0, tol, "values");
}

// ---------------------------------------------------------------------------------------------
// ArrayFeatureExtractor and Binarizer

#[test]
fn array_feature_extractor_gathers_last_axis() {
    let x = Tensor::from_slice(&[2, 3], &[1i64, 2, 3, 4, 5, 6]).unwrap();
    let n = ml("ArrayFeatureExtractor", 1, vec![], 2);
    let y = run(&n, &[x, t1(&[2i64, 0, 2])]);
    assert_eq!(y.shape(), &[2, 3]);
    assert_eq!(y.to_vec::<i64>().unwrap(), [3, 1, 3, 6, 4, 6]);
    // A 1-D input gives one row; strings work too.
    let s = Tensor::from_strings(&[3], strs(&["a", "b", "c"])).unwrap();
    let y = run(&n, &[s, Tensor::from_slice(&[1, 2], &[1i64, 1]).unwrap()]);
    assert_eq!(y.shape(), &[1, 2]);
    assert_eq!(y.as_strings().unwrap(), ["b", "b"]);
    let e = err(&n, &[t1(&[1.0f32, 2.0]), t1(&[2i64])]);
    assert!(e.contains("index 2 is out of range"), "{e}");
    let e = err(&n, &[t1(&[1.0f32, 2.0]), t1(&[-1i64])]);
    assert!(e.contains("index -1"), "{e}");
}

#[test]
fn binarizer_compares_strictly_and_exactly() {
    let n = ml("Binarizer", 1, vec![("threshold", Attr::Float(0.5))], 1);
    let y = run(&n, &[t1(&[0.5f32, 0.50001, -3.0, f32::NAN, f32::INFINITY])]);
    assert_eq!(y.to_vec::<f32>().unwrap(), [0.0, 1.0, 0.0, 0.0, 1.0]);
    let y = run(&n, &[t1(&[0.5f64, 0.6])]);
    assert_eq!(y.to_vec::<f64>().unwrap(), [0.0, 1.0]);
    // 2^53 + 1 > 2^53 although both round to the same f64.
    let big = 1i64 << 53;
    let n = ml("Binarizer", 1, vec![("threshold", Attr::Float(big as f32))], 1);
    let y = run(&n, &[t1(&[big, big + 1, -big, 0])]);
    assert_eq!(y.to_vec::<i64>().unwrap(), [0, 1, 0, 0]);
    // Default threshold 0.
    let n = ml("Binarizer", 1, vec![], 1);
    assert_eq!(run(&n, &[t1(&[-1i32, 0, 1])]).to_vec::<i32>().unwrap(), [0, 0, 1]);
    assert!(err(&n, &[Tensor::from_strings(&[1], strs(&["x"])).unwrap()]).contains("Binarizer of string"));
}

// ---------------------------------------------------------------------------------------------
// LabelEncoder

#[test]
fn label_encoder_spec_example_and_defaults() {
    // The spec's example: ["Dori", "Amy", "Amy", "Sally", "Sally"] -> [-1, 5, 5, 6, 6].
    let attrs = || {
        vec![
            ("keys_strings", Attr::Strings(strs(&["Amy", "Sally"]))),
            ("values_int64s", Attr::Ints(vec![5, 6])),
            ("default_int64", Attr::Int(-1)),
        ]
    };
    let x = Tensor::from_strings(&[5], strs(&["Dori", "Amy", "Amy", "Sally", "Sally"])).unwrap();
    for opset in [2, 3, 4] {
        let y = run(&ml("LabelEncoder", opset, attrs(), 1), std::slice::from_ref(&x));
        assert_eq!(y.to_vec::<i64>().unwrap(), [-1, 5, 5, 6, 6], "opset {opset}");
    }
    // int64 -> string with the default "_Unused"; 2-D shape kept.
    let n = ml(
        "LabelEncoder",
        2,
        vec![("keys_int64s", Attr::Ints(vec![1, 2])), ("values_strings", Attr::Strings(strs(&["one", "two"])))],
        1,
    );
    let y = run(&n, &[Tensor::from_slice(&[2, 2], &[2i64, 7, 1, 2]).unwrap()]);
    assert_eq!(y.shape(), &[2, 2]);
    assert_eq!(y.as_strings().unwrap(), ["two", "_Unused", "one", "two"]);
    // string -> float with the default -0.0.
    let n = ml(
        "LabelEncoder",
        2,
        vec![("keys_strings", Attr::Strings(strs(&["a"]))), ("values_floats", Attr::Floats(vec![1.5]))],
        1,
    );
    let y = run(&n, &[Tensor::from_strings(&[2], strs(&["a", "b"])).unwrap()]).to_vec::<f32>().unwrap();
    assert_eq!(y[0], 1.5);
    assert!(y[1] == 0.0 && y[1].is_sign_negative());
}

#[test]
fn label_encoder_float_keys_match_by_value_and_last_key_wins() {
    let n = ml(
        "LabelEncoder",
        4,
        vec![
            ("keys_floats", Attr::Floats(vec![f32::NAN, 0.0, 2.5, 2.5])),
            ("values_int64s", Attr::Ints(vec![10, 20, 30, 40])),
            ("default_int64", Attr::Int(7)),
        ],
        1,
    );
    // A NaN with another payload still matches the NaN key; -0.0 matches 0.0.
    let other_nan = f32::from_bits(0x7fc0_1234);
    let y = run(&n, &[t1(&[other_nan, -0.0f32, 2.5, 1.0])]);
    assert_eq!(y.to_vec::<i64>().unwrap(), [10, 20, 40, 7]);
}

#[test]
fn label_encoder_tensor_attributes() {
    // int32 keys -> double values with a default_tensor.
    let n = ml(
        "LabelEncoder",
        4,
        vec![
            ("keys_tensor", Attr::Tensor(t1(&[3i32, -4]))),
            ("values_tensor", Attr::Tensor(t1(&[0.25f64, 1e300]))),
            ("default_tensor", Attr::Tensor(t1(&[-9.5f64]))),
        ],
        1,
    );
    let y = run(&n, &[t1(&[-4i32, 3, 0])]);
    assert_eq!(y.to_vec::<f64>().unwrap(), [1e300, 0.25, -9.5]);
    // int16 values without a default fall back to the spec's -1.
    let n = ml(
        "LabelEncoder",
        4,
        vec![("keys_strings", Attr::Strings(strs(&["x", "y"]))), ("values_tensor", Attr::Tensor(t1(&[5i16, 6])))],
        1,
    );
    let y = run(&n, &[Tensor::from_strings(&[3], strs(&["y", "z", "x"])).unwrap()]);
    assert_eq!(y.to_vec::<i16>().unwrap(), [6, -1, 5]);
    // string values from a tensor, with a string default_tensor.
    let n = ml(
        "LabelEncoder",
        4,
        vec![
            ("keys_int64s", Attr::Ints(vec![1])),
            ("values_tensor", Attr::Tensor(Tensor::from_strings(&[1], strs(&["uno"])).unwrap())),
            ("default_tensor", Attr::Tensor(Tensor::from_strings(&[1], strs(&["?"])).unwrap())),
        ],
        1,
    );
    assert_eq!(run(&n, &[t1(&[1i64, 2])]).as_strings().unwrap(), ["uno", "?"]);
}

#[test]
fn label_encoder_v1_both_directions() {
    let attrs = || vec![("classes_strings", Attr::Strings(strs(&["a", "b", "a"])))];
    let n = ml("LabelEncoder", 1, attrs(), 1);
    // Strings map to the index of their first occurrence; unknown ones to -1.
    let y = run(&n, &[Tensor::from_strings(&[3], strs(&["a", "b", "q"])).unwrap()]);
    assert_eq!(y.to_vec::<i64>().unwrap(), [0, 1, -1]);
    // Indices map back to strings; out of range ones to default_string.
    let mut a = attrs();
    a.push(("default_string", Attr::String("none".into())));
    let y = run(&ml("LabelEncoder", 1, a, 1), &[t1(&[2i64, 3, -1, 1])]);
    assert_eq!(y.as_strings().unwrap(), ["a", "none", "none", "b"]);
}

#[test]
fn label_encoder_rejects_bad_attributes_and_inputs() {
    let keys = ("keys_strings", Attr::Strings(strs(&["a", "b"])));
    let n = ml("LabelEncoder", 2, vec![keys.clone(), ("values_int64s", Attr::Ints(vec![1]))], 1);
    let e = err(&n, &[Tensor::from_strings(&[1], strs(&["a"])).unwrap()]);
    assert!(e.contains("2 keys but 1 values"), "{e}");
    let n = ml(
        "LabelEncoder",
        2,
        vec![keys.clone(), ("keys_int64s", Attr::Ints(vec![1, 2])), ("values_int64s", Attr::Ints(vec![1, 2]))],
        1,
    );
    assert!(err(&n, &[t1(&[1i64])]).contains("only one of keys_"));
    let n = ml("LabelEncoder", 2, vec![keys.clone(), ("values_int64s", Attr::Ints(vec![1, 2]))], 1);
    let e = err(&n, &[t1(&[1i64])]);
    assert!(e.contains("does not match the key type string"), "{e}");
    let n = ml(
        "LabelEncoder",
        4,
        vec![keys, ("values_tensor", Attr::Tensor(t1(&[1i16, 2]))), ("default_tensor", Attr::Tensor(t1(&[1i32])))],
        1,
    );
    let e = err(&n, &[Tensor::from_strings(&[1], strs(&["a"])).unwrap()]);
    assert!(e.contains("default_tensor must be a single int16"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// TreeEnsemble

/// The attributes of an ensemble in the spec's flat encoding.
#[derive(Clone, Debug, Default)]
struct Flat {
    features: Vec<i64>,
    splits: Vec<f64>,
    modes: Vec<u8>,
    true_ids: Vec<i64>,
    false_ids: Vec<i64>,
    true_leafs: Vec<i64>,
    false_leafs: Vec<i64>,
    missing: Vec<i64>,
    membership: Vec<f64>,
    leaf_targets: Vec<i64>,
    leaf_weights: Vec<f64>,
    roots: Vec<i64>,
    n_targets: i64,
}

impl Flat {
    fn node(&self, dtype: DType, aggregate: i64, post: i64) -> Node {
        let floats = |v: &[f64]| match dtype {
            DType::F64 => t1(v),
            DType::F32 => t1(&v.iter().map(|x| *x as f32).collect::<Vec<_>>()),
            _ => t1(&v.iter().map(|x| half::f16::from_f64(*x)).collect::<Vec<_>>()),
        };
        let mut attrs = vec![
            ("nodes_featureids", Attr::Ints(self.features.clone())),
            ("nodes_splits", Attr::Tensor(floats(&self.splits))),
            ("nodes_modes", Attr::Tensor(t1(&self.modes))),
            ("nodes_truenodeids", Attr::Ints(self.true_ids.clone())),
            ("nodes_falsenodeids", Attr::Ints(self.false_ids.clone())),
            ("nodes_trueleafs", Attr::Ints(self.true_leafs.clone())),
            ("nodes_falseleafs", Attr::Ints(self.false_leafs.clone())),
            ("nodes_missing_value_tracks_true", Attr::Ints(self.missing.clone())),
            ("leaf_targetids", Attr::Ints(self.leaf_targets.clone())),
            ("leaf_weights", Attr::Tensor(floats(&self.leaf_weights))),
            ("tree_roots", Attr::Ints(self.roots.clone())),
            ("n_targets", Attr::Int(self.n_targets)),
            ("aggregate_function", Attr::Int(aggregate)),
            ("post_transform", Attr::Int(post)),
        ];
        if !self.membership.is_empty() {
            attrs.push(("membership_values", Attr::Tensor(floats(&self.membership))));
        }
        ml("TreeEnsemble", 5, attrs, 1)
    }

    /// Naive reference: recursion over the raw attributes, with the set of each member node
    /// found by counting NaN separators before it.
    fn eval_tree(&self, row: &[f64], i: usize) -> (usize, f64) {
        let x = row[self.features[i] as usize];
        let v = self.splits[i];
        let hit = match self.modes[i] {
            0 => x <= v,
            1 => x < v,
            2 => x >= v,
            3 => x > v,
            4 => x == v,
            5 => x != v,
            _ => {
                let k = self.modes[..i].iter().filter(|m| **m == 6).count();
                self.membership.split(|m| m.is_nan()).nth(k).unwrap().contains(&x)
            }
        };
        let go_true = hit || (self.missing[i] != 0 && x.is_nan());
        let (id, leaf) =
            if go_true { (self.true_ids[i], self.true_leafs[i]) } else { (self.false_ids[i], self.false_leafs[i]) };
        if leaf != 0 {
            (self.leaf_targets[id as usize] as usize, self.leaf_weights[id as usize])
        } else {
            self.eval_tree(row, id as usize)
        }
    }

    fn reference(&self, x: &[f64], feats: usize, aggregate: i64, big: f64) -> Vec<f64> {
        let t = self.n_targets as usize;
        let mut out = Vec::new();
        for row in x.chunks(feats) {
            let mut acc = vec![
                match aggregate {
                    2 => big,
                    3 => -big,
                    _ => 0.0,
                };
                t
            ];
            for &r in &self.roots {
                let (target, w) = self.eval_tree(row, r as usize);
                acc[target] = match aggregate {
                    2 => acc[target].min(w),
                    3 => acc[target].max(w),
                    _ => acc[target] + w,
                };
            }
            if aggregate == 0 {
                acc.iter_mut().for_each(|a| *a /= self.roots.len() as f64);
            }
            out.extend(acc);
        }
        out
    }

    /// Appends a random tree of the given depth; returns its root.
    fn grow(&mut self, rng: &mut StdRng, depth: usize, feats: usize) -> i64 {
        let i = self.features.len();
        self.features.push(rng.random_range(0..feats as i64));
        let mode = rng.random_range(0..7u8);
        self.modes.push(mode);
        // Splits on a coarse grid so that equality tests sometimes hit.
        self.splits.push(if mode == 6 { f64::NAN } else { rng.random_range(-4..=4) as f64 * 0.5 });
        if mode == 6 {
            for _ in 0..rng.random_range(0..4) {
                self.membership.push(rng.random_range(-4..=4) as f64 * 0.5);
            }
            self.membership.push(f64::NAN);
        }
        self.missing.push(rng.random_range(0..2));
        // Placeholders, filled in once the children exist.
        self.true_ids.push(0);
        self.false_ids.push(0);
        self.true_leafs.push(0);
        self.false_leafs.push(0);
        for branch in 0..2 {
            let (id, leaf) = if depth == 0 || rng.random_bool(0.3) {
                let l = self.leaf_weights.len() as i64;
                self.leaf_weights.push(rng.random_range(-8..=8) as f64 * 0.25);
                self.leaf_targets.push(rng.random_range(0..self.n_targets));
                (l, 1)
            } else {
                (self.grow(rng, depth - 1, feats), 0)
            };
            if branch == 0 {
                self.true_ids[i] = id;
                self.true_leafs[i] = leaf;
            } else {
                self.false_ids[i] = id;
                self.false_leafs[i] = leaf;
            }
        }
        i as i64
    }
}

/// The ensemble of `test_ai_onnx_ml_tree_ensemble_single_tree` (root split 3.25, not 3.14).
fn single_tree() -> Flat {
    Flat {
        features: vec![0, 0, 0],
        splits: vec![3.25, 1.2, 4.2],
        modes: vec![0, 0, 0],
        true_ids: vec![1, 0, 1],
        false_ids: vec![2, 2, 3],
        true_leafs: vec![0, 1, 1],
        false_leafs: vec![0, 1, 1],
        missing: vec![0, 0, 0],
        membership: vec![],
        leaf_targets: vec![0, 1, 0, 1],
        leaf_weights: vec![5.23, 12.12, -12.23, 7.21],
        roots: vec![0],
        n_targets: 2,
    }
}

#[test]
fn tree_ensemble_hand_derived_paths() {
    let f = single_tree();
    // x0 = 1.2: <= 3.25 -> node 1: <= 1.2 -> leaf 0 (5.23, target 0).
    // x0 = 3.5: > 3.25 -> node 2: <= 4.2 -> leaf 1 (12.12, target 1).
    // x0 = 9.0: > 4.2 -> leaf 3 (7.21, target 1).   x0 = 2.0: node 1 false -> leaf 2 (-12.23, 0).
    let x = Tensor::from_slice(&[4, 2], &[1.2f64, 0.0, 3.5, 0.0, 9.0, 0.0, 2.0, 0.0]).unwrap();
    let y = run(&f.node(DType::F64, 1, 0), &[x]);
    assert_eq!(y.shape(), &[4, 2]);
    assert_eq!(y.to_vec::<f64>().unwrap(), [5.23, 0.0, 0.0, 12.12, 0.0, 7.21, -12.23, 0.0]);
}

#[test]
fn tree_ensemble_nan_routing_and_set_membership() {
    // Root: x0 in {1, 2} ? leaf 0 : node 1;  node 1: x0 != 5 ? leaf 1 : leaf 2.
    let mut f = Flat {
        features: vec![0, 0],
        splits: vec![f64::NAN, 5.0],
        modes: vec![6, 5],
        true_ids: vec![0, 1],
        false_ids: vec![1, 2],
        true_leafs: vec![1, 1],
        false_leafs: vec![0, 1],
        missing: vec![0, 0],
        membership: vec![1.0, 2.0],
        leaf_targets: vec![0, 1, 2],
        leaf_weights: vec![1.0, 2.0, 3.0],
        roots: vec![0],
        n_targets: 3,
    };
    let x = t1(&[2.0f32, 5.0, 7.0, f32::NAN]).reshaped(&[4, 1]).unwrap();
    let y = run(&f.node(DType::F32, 1, 0), std::slice::from_ref(&x)).to_vec::<f32>().unwrap();
    // NaN is in no set, and NaN != 5 is true: leaf 1.
    assert_eq!(y, [1., 0., 0., 0., 0., 3., 0., 2., 0., 0., 2., 0.]);
    // With missing values tracking true at the root, NaN goes to leaf 0.
    f.missing = vec![1, 0];
    let y = run(&f.node(DType::F32, 1, 0), &[x]).to_vec::<f32>().unwrap();
    assert_eq!(&y[9..], [1., 0., 0.]);
}

#[test]
fn tree_ensemble_aggregates_and_float16() {
    // Three one-leaf trees (true and false branch share the leaf) on targets 0, 0, 1.
    let f = Flat {
        features: vec![0, 0, 0],
        splits: vec![0.0; 3],
        modes: vec![0; 3],
        true_ids: vec![0, 1, 2],
        false_ids: vec![0, 1, 2],
        true_leafs: vec![1; 3],
        false_leafs: vec![1; 3],
        missing: vec![0; 3],
        membership: vec![],
        leaf_targets: vec![0, 0, 1],
        leaf_weights: vec![2.0, 4.0, -1.0],
        roots: vec![0, 1, 2],
        n_targets: 3,
    };
    let x = t1(&[0.0f64]).reshaped(&[1, 1]).unwrap();
    let agg = |a: i64| run(&f.node(DType::F64, a, 0), std::slice::from_ref(&x)).to_vec::<f64>().unwrap();
    assert_eq!(agg(0), [2.0, -1.0 / 3.0, 0.0]);
    assert_eq!(agg(1), [6.0, -1.0, 0.0]);
    // Untouched targets keep the start value, as the reference does.
    assert_eq!(agg(2), [2.0, -1.0, f64::MAX]);
    assert_eq!(agg(3), [4.0, -1.0, -f64::MAX]);
    let xh = Tensor::from_slice(&[1, 1], &[half::f16::from_f32(0.0)]).unwrap();
    let y = run(&f.node(DType::F16, 2, 0), &[xh]);
    assert_eq!(y.dtype(), DType::F16);
    assert_eq!(y.to_f64_vec().unwrap(), [2.0, -1.0, 65504.0]);
}

#[test]
fn tree_ensemble_matches_naive_reference_on_random_ensembles() {
    let mut rng = StdRng::seed_from_u64(7);
    for _ in 0..40 {
        let feats = rng.random_range(1..4usize);
        let mut f = Flat { n_targets: rng.random_range(1..4), ..Flat::default() };
        for _ in 0..rng.random_range(1..5) {
            let depth = rng.random_range(0..4);
            let r = f.grow(&mut rng, depth, feats);
            f.roots.push(r);
        }
        let rows = rng.random_range(0..6usize);
        let x: Vec<f64> = (0..rows * feats)
            .map(|_| if rng.random_bool(0.1) { f64::NAN } else { rng.random_range(-5..=5) as f64 * 0.5 })
            .collect();
        for aggregate in 0..4 {
            let y = run(&f.node(DType::F64, aggregate, 0), &[Tensor::from_slice(&[rows, feats], &x).unwrap()]);
            assert_eq!(y.shape(), &[rows, f.n_targets as usize]);
            let want = f.reference(&x, feats, aggregate, f64::MAX);
            close(&y.to_vec::<f64>().unwrap(), &want, 1e-12);
        }
    }
}

#[test]
fn post_transforms_hand_derived() {
    let mut v = [0.0, 2f64.ln()];
    post_transform(PostTransform::Softmax, &mut v);
    close(&v, &[1.0 / 3.0, 2.0 / 3.0], 1e-12);
    let mut v = [0.0, -3f64.ln(), 1000.0];
    post_transform(PostTransform::Logistic, &mut v);
    close(&v, &[0.5, 0.25, 1.0], 1e-12);
    // Zeros stay zero; the rest is a softmax of (ln 1, ln 3).
    let mut v = [0.0, 0.0, 3f64.ln(), 1e-3];
    post_transform(PostTransform::SoftmaxZero, &mut v);
    let e = (1e-3f64).exp();
    close(&v, &[0.0, 0.0, 3.0 / (3.0 + e), e / (3.0 + e)], 1e-12);
    let mut v = [0.0, 0.0];
    post_transform(PostTransform::SoftmaxZero, &mut v);
    assert_eq!(v, [0.5, 0.5]);
    // Probit: the standard normal quantiles 0, ±1.959964, 1 (at p = Φ(1)) within Winitzki's
    // approximation error.
    let mut v = [0.5, 0.975, 0.025, 0.841_344_746_068_542_9];
    post_transform(PostTransform::Probit, &mut v);
    close(&v, &[0.0, 1.959_964, -1.959_964, 1.0], 2e-3);
    assert_eq!(probit(1.0), f64::INFINITY);
    assert!(probit(1.5).is_nan());
}

#[test]
fn tree_ensemble_post_transform_applies_per_row() {
    let f = single_tree();
    let x = Tensor::from_slice(&[2, 2], &[1.2f32, 0.0, 9.0, 0.0]).unwrap();
    let y = run(&f.node(DType::F32, 1, 1), &[x]).to_f64_vec().unwrap();
    let (a, b) = (5.23f32 as f64, 7.21f32 as f64);
    let want =
        [1.0 / (1.0 + (-a).exp()), (-a).exp() / (1.0 + (-a).exp()), 1.0 / (1.0 + b.exp()), 1.0 / (1.0 + (-b).exp())];
    close(&y, &want, 1e-6);
}

#[test]
fn tree_ensemble_rejects_malformed_ensembles() {
    let x = Tensor::from_slice(&[1, 1], &[0.0f64]).unwrap();
    let bad = |edit: &dyn Fn(&mut Flat), what: &str| {
        let mut f = single_tree();
        edit(&mut f);
        let e = err(&f.node(DType::F64, 1, 0), std::slice::from_ref(&x));
        assert!(e.contains(what), "expected '{what}' in: {e}");
    };
    bad(&|f| (f.false_ids[0], f.false_leafs[0]) = (4, 1), "node 0: false branch leaf 4 is outside 0..4");
    bad(&|f| f.true_ids[2] = 9, "node 2: true branch leaf 9 is outside 0..4");
    bad(&|f| (f.true_ids[2], f.true_leafs[2]) = (0, 0), "cycle");
    bad(&|f| f.modes[1] = 9, "unknown mode 9");
    bad(&|f| f.leaf_targets[0] = 2, "leaf target id 2 is outside 0..2");
    bad(&|f| f.modes[1] = 6, "1 BRANCH_MEMBER node(s) but membership_values holds 0");
    bad(
        &|f| {
            f.splits.pop();
        },
        "nodes_splits has 2 entries",
    );
    bad(&|f| f.features[2] = 3, "input X has 1 features but the trees test feature 3");
    // A float input for double attributes, and a 1-D input.
    let f = single_tree();
    let e = err(&f.node(DType::F64, 1, 0), &[Tensor::from_slice(&[1, 1], &[0.0f32]).unwrap()]);
    assert!(e.contains("input X is float but the tree attributes are double"), "{e}");
    let e = err(&f.node(DType::F64, 1, 0), &[t1(&[0.0f64])]);
    assert!(e.contains("shape [N, F]"), "{e}");
    let e = err(&f.node(DType::F64, 7, 0), std::slice::from_ref(&x));
    assert!(e.contains("unknown aggregate_function 7"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// Windows and MelWeightMatrix

fn window(op: &str, attrs: Vec<(&str, Attr)>, size: Tensor) -> Tensor {
    run(&onnx(op, 17, attrs, 1), &[size])
}

#[test]
fn windows_hand_derived() {
    let size4 = Tensor::scalar(4i64);
    let get = |op: &str, periodic: i64, size: Tensor| {
        window(op, vec![("periodic", Attr::Int(periodic))], size).to_f64_vec().unwrap()
    };
    // Periodic, N = 4: 2πn/N = 0, π/2, π, 3π/2.
    close(&get("HannWindow", 1, size4.clone()), &[0.0, 0.5, 1.0, 0.5], 1e-7);
    close(&get("HammingWindow", 1, size4.clone()), &[4.0 / 46.0, 25.0 / 46.0, 1.0, 25.0 / 46.0], 1e-7);
    close(&get("BlackmanWindow", 1, size4.clone()), &[0.0, 0.34, 1.0, 0.34], 1e-7);
    // Symmetric, size 5 (N = 4): the same points plus the closing one.
    let size5 = Tensor::scalar(5i32);
    close(&get("HannWindow", 0, size5.clone()), &[0.0, 0.5, 1.0, 0.5, 0.0], 1e-7);
    close(&get("BlackmanWindow", 0, size5), &[0.0, 0.34, 1.0, 0.34, 0.0], 1e-7);
    // Default attributes: periodic, float output.
    let y = window("HannWindow", vec![], size4.clone());
    assert_eq!((y.dtype(), y.shape()), (DType::F32, &[4usize][..]));
    // Degenerate sizes.
    assert_eq!(get("HannWindow", 0, Tensor::scalar(1i64)), [1.0]);
    assert!(get("HammingWindow", 1, Tensor::scalar(0i64)).is_empty());
    assert_eq!(Window::Hann.values(2, true), [0.0, 1.0]);
}

#[test]
fn windows_output_types_and_errors() {
    let y = window("HannWindow", vec![("output_datatype", Attr::Int(DType::F64 as i64))], Tensor::scalar(4i64));
    assert_eq!(y.to_vec::<f64>().unwrap(), Window::Hann.values(4, true));
    // Integer outputs truncate: only the peak stays 1.
    let y = window("HannWindow", vec![("output_datatype", Attr::Int(DType::I32 as i64))], Tensor::scalar(4i64));
    assert_eq!(y.to_vec::<i32>().unwrap(), [0, 0, 1, 0]);
    let y = window("HammingWindow", vec![("output_datatype", Attr::Int(DType::F16 as i64))], Tensor::scalar(2i64));
    assert_eq!(y.dtype(), DType::F16);
    let e = err(&onnx("HannWindow", 17, vec![], 1), &[Tensor::scalar(-3i64)]);
    assert!(e.contains("size must be non-negative, got -3"), "{e}");
    let n = onnx("HannWindow", 17, vec![("output_datatype", Attr::Int(DType::String as i64))], 1);
    let e = err(&n, &[Tensor::scalar(3i64)]);
    assert!(e.contains("output_datatype 8 is not a numeric"), "{e}");
    let e = err(&onnx("BlackmanWindow", 17, vec![], 1), &[t1(&[2i64, 3])]);
    assert!(e.contains("exactly one value"), "{e}");
}

#[test]
fn mel_weight_matrix_hand_derived() {
    // upper = 10500 Hz makes 1 + f/700 = 16, so with num_mel_bins + 2 = 4 steps the edges are
    // 700 (2^i - 1) Hz = 0, 700, 2100, 4900; with dft_length 99 and sample_rate 13000 they are
    // bins floor(100 f / 13000) = 0, 5, 16, 37 of 50.
    let (shape, m) = mel_weight_matrix(2, 99, 13000, 0.0, 10500.0).unwrap();
    assert_eq!(shape, [50, 2]);
    let at = |r: usize, c: usize| m[r * 2 + c];
    let mut want = vec![0.0; 100];
    for j in 0..=5 {
        want[j * 2] = j as f64 / 5.0;
    }
    for j in 5..16 {
        want[j * 2] = (16 - j) as f64 / 11.0;
    }
    for j in 5..=16 {
        want[j * 2 + 1] = (j - 5) as f64 / 11.0;
    }
    for j in 16..37 {
        want[j * 2 + 1] = (37 - j) as f64 / 21.0;
    }
    close(&m, &want, 1e-12);
    assert_eq!((at(5, 0), at(16, 1), at(37, 1)), (1.0, 1.0, 0.0));
}

#[test]
fn mel_weight_matrix_kernel_and_errors() {
    let n = onnx("MelWeightMatrix", 17, vec![("output_datatype", Attr::Int(DType::F64 as i64))], 5);
    let args = |mels: i64, upper: f32| {
        vec![
            Tensor::scalar(mels),
            Tensor::scalar(99i64),
            Tensor::scalar(13000i64),
            Tensor::scalar(0.0f32),
            Tensor::scalar(upper),
        ]
    };
    let y = run(&n, &args(2, 10500.0));
    assert_eq!((y.dtype(), y.shape()), (DType::F64, &[50usize, 2][..]));
    assert_eq!(y.to_vec::<f64>().unwrap(), mel_weight_matrix(2, 99, 13000, 0.0, 10500.0).unwrap().1);
    // Edges past the Nyquist bin cannot be placed.
    let e = err(&n, &args(2, 60000.0));
    assert!(e.contains("outside 0..50"), "{e}");
    let e = err(&n, &args(0, 4000.0));
    assert!(e.contains("num_mel_bins must be positive, got 0"), "{e}");
}
