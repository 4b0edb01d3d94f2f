//! Test support shared by every kernel family's tests: build a node, compile it through the
//! crate's registry and run it, make tensors, compare with tolerances, and run the ONNX node
//! test cases of a family end to end through the provider.
//!
//! Nodes are compiled through [`crate::kernels::registry`], the registry the provider uses, so
//! a test does not depend on which family file registers its op (and keeps working when an op
//! moves to another family).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use proptest::prelude::ProptestConfig;
use vinort_ir::proto::onnx::{OptionalProto, SequenceProto, TensorProto};
use vinort_ir::proto::prost::Message;
use vinort_ir::tensor_proto::{ExternalData, tensor_from_proto};
use vinort_ir::{
    Attr, DType, Elem, Error, Node, Result, RunContext, Sequence, Tensor, Value, ValueId, ValueType, Values,
};

use crate::kernel::{NodeInfo, Registry};

// ---------------------------------------------------------------------------------------------
// Nodes

/// Builds the one-node graphs the kernel tests run: `op(name, opset)`, then inputs, outputs and
/// attributes. Input `i` is `ValueId(i)`, output `k` is `ValueId(1000 + k)`; an absent optional
/// input or output is `None`. Without `.outputs`/`.output_mask` the node has one output.
pub(crate) struct NodeBuilder(Node);

/// Starts a node of the default ONNX domain.
pub(crate) fn op(op_type: &str, opset: i64) -> NodeBuilder {
    NodeBuilder(Node {
        name: format!("{op_type}_test"),
        op_type: op_type.into(),
        domain: String::new(),
        opset,
        inputs: vec![],
        outputs: vec![Some(ValueId(1000))],
        implicit_inputs: vec![],
        attrs: Default::default(),
        proto: None,
    })
}

impl NodeBuilder {
    pub(crate) fn domain(mut self, domain: &str) -> Self {
        self.0.domain = domain.into();
        self
    }

    /// `n` inputs, all present.
    pub(crate) fn inputs(self, n: usize) -> Self {
        self.input_mask(&vec![true; n])
    }

    /// One input per entry; `false` leaves that optional input out.
    pub(crate) fn input_mask(mut self, present: &[bool]) -> Self {
        self.0.inputs = present.iter().enumerate().map(|(i, p)| p.then_some(ValueId(i as u32))).collect();
        self
    }

    /// `n` outputs, all requested.
    pub(crate) fn outputs(self, n: usize) -> Self {
        self.output_mask(&vec![true; n])
    }

    /// One output per entry; `false` leaves that optional output unrequested.
    pub(crate) fn output_mask(mut self, wanted: &[bool]) -> Self {
        self.0.outputs = wanted.iter().enumerate().map(|(i, p)| p.then_some(ValueId(1000 + i as u32))).collect();
        self
    }

    pub(crate) fn attrs<K: Into<String>>(mut self, attrs: impl IntoIterator<Item = (K, Attr)>) -> Self {
        self.0.attrs.extend(attrs.into_iter().map(|(k, v)| (k.into(), v)));
        self
    }

    pub(crate) fn build(self) -> Node {
        self.0
    }
}

// ---------------------------------------------------------------------------------------------
// Compiling and running one node

/// The registry the provider uses, built once per test binary.
fn registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(crate::kernels::registry)
}

/// What the kernel factory is told at compile time. Kernels must work with any of these: the
/// provider knows types only when shape inference found them, and constants only for
/// initializers.
#[derive(Clone, Copy)]
pub(crate) enum Known<'a> {
    /// Every input type is unknown until run time.
    Nothing,
    /// The type and shape of every present tensor input.
    Types,
    /// Types, and the values of the inputs at these positions.
    TypesAndConsts(&'a [usize]),
}

/// Compiles `node` through the registry, telling the factory what `known` says about `inputs`
/// and `outputs` about the output types, then runs the kernel once on `inputs`.
pub(crate) fn run_values(
    node: &Node,
    inputs: &[Option<Value>],
    known: Known<'_>,
    outputs: Vec<ValueType>,
) -> Result<Values> {
    let factory = registry().find(node).map_err(Error::unsupported)?;
    let input_type = |v: &Option<Value>| match (v, known) {
        (Some(Value::Tensor(t)), Known::Types | Known::TypesAndConsts(_)) => ValueType::tensor(t.dtype(), t.shape()),
        _ => ValueType::Unknown,
    };
    let consts = inputs
        .iter()
        .enumerate()
        .map(|(i, v)| match (v, known) {
            (Some(Value::Tensor(t)), Known::TypesAndConsts(c)) if c.contains(&i) => Some(t.clone()),
            _ => None,
        })
        .collect();
    let info =
        NodeInfo { node, inputs: inputs.iter().map(input_type).collect(), consts, outputs, scope: Default::default() };
    let kernel = factory(&info)?;
    let refs: Vec<Option<&Value>> = inputs.iter().map(Option::as_ref).collect();
    kernel.run(&refs, &RunContext::default())
}

/// Runs `op` on values with nothing known at compile time: input `i` is `inputs[i]` (`None`
/// leaves that optional input out), `n_out` outputs of unknown type.
pub(crate) fn run_op(
    op_type: &str,
    opset: i64,
    attrs: Vec<(&str, Attr)>,
    inputs: &[Option<Value>],
    n_out: usize,
) -> Result<Values> {
    let present: Vec<bool> = inputs.iter().map(Option::is_some).collect();
    let n = op(op_type, opset).input_mask(&present).outputs(n_out).attrs(attrs).build();
    run_values(&n, inputs, Known::Nothing, vec![ValueType::Unknown; n_out])
}

/// [`run_values`] on tensors with output types unknown.
pub(crate) fn run_with(node: &Node, inputs: &[Option<Tensor>], known: Known<'_>) -> Result<Vec<Tensor>> {
    let values: Vec<Option<Value>> = inputs.iter().map(|t| t.clone().map(Value::Tensor)).collect();
    run_values(node, &values, known, vec![ValueType::Unknown; node.outputs.len()])?
        .into_iter()
        .map(Value::into_tensor)
        .collect()
}

/// Compiles `node` knowing its input types and runs it: the usual test.
pub(crate) fn run_node(node: &Node, inputs: &[Option<Tensor>]) -> Result<Vec<Tensor>> {
    run_with(node, inputs, Known::Types)
}

/// [`run_node`] on a one-output node with every input present; asserts the kernel made
/// exactly one output.
pub(crate) fn run1(node: &Node, inputs: &[Tensor]) -> Result<Tensor> {
    let inputs: Vec<Option<Tensor>> = inputs.iter().cloned().map(Some).collect();
    let mut out = run_node(node, &inputs)?;
    assert_eq!(out.len(), 1, "{}: outputs", node.op_type);
    Ok(out.remove(0))
}

/// Only compiles `node` for inputs of these dtypes (shapes unknown).
pub(crate) fn compile(node: &Node, dtypes: &[DType]) -> Result<()> {
    let info = NodeInfo {
        node,
        inputs: dtypes.iter().map(|d| ValueType::Tensor(*d, None)).collect(),
        consts: vec![None; dtypes.len()],
        outputs: vec![ValueType::Unknown; node.outputs.len()],
        scope: Default::default(),
    };
    let factory = registry().find(node).map_err(Error::unsupported)?;
    factory(&info).map(|_| ())
}

/// Asserts that `r` failed with an error whose message contains `needle`.
#[track_caller]
pub(crate) fn expect_err<T>(r: Result<T>, needle: &str) {
    match r {
        Ok(_) => panic!("expected an error mentioning '{needle}'"),
        Err(e) => assert!(e.to_string().contains(needle), "error '{e}' does not mention '{needle}'"),
    }
}

// ---------------------------------------------------------------------------------------------
// Tensors

pub(crate) fn tensor_of<T: Elem>(shape: &[usize], data: &[T]) -> Tensor {
    Tensor::from_slice(shape, data).expect("test tensor")
}

/// A 1-D tensor.
pub(crate) fn vec1<T: Elem>(data: &[T]) -> Tensor {
    tensor_of(&[data.len()], data)
}

pub(crate) fn strings(shape: &[usize], data: &[&str]) -> Tensor {
    Tensor::from_strings(shape, data.iter().map(|s| (*s).to_owned()).collect()).expect("test tensor")
}

/// A tensor of `dtype` holding `v` (rounded or truncated to the type): references compute in
/// f64, kernels see the type under test.
pub(crate) fn tensor(dtype: DType, shape: &[usize], v: &[f64]) -> Tensor {
    let t = match dtype {
        DType::F32 => Tensor::from_vec(shape, v.iter().map(|x| *x as f32).collect()),
        DType::F64 => Tensor::from_slice(shape, v),
        DType::F16 => Tensor::from_vec(shape, v.iter().map(|x| half::f16::from_f64(*x)).collect()),
        DType::BF16 => Tensor::from_vec(shape, v.iter().map(|x| half::bf16::from_f64(*x)).collect()),
        DType::I8 => Tensor::from_vec(shape, v.iter().map(|x| *x as i8).collect()),
        DType::U8 => Tensor::from_vec(shape, v.iter().map(|x| *x as u8).collect()),
        DType::I32 => Tensor::from_vec(shape, v.iter().map(|x| *x as i32).collect()),
        DType::I64 => Tensor::from_vec(shape, v.iter().map(|x| *x as i64).collect()),
        DType::U32 => Tensor::from_vec(shape, v.iter().map(|x| *x as u32).collect()),
        DType::U64 => Tensor::from_vec(shape, v.iter().map(|x| *x as u64).collect()),
        d => panic!("test helper does not build {d}"),
    };
    t.expect("test tensor")
}

pub(crate) fn f32_tensor(shape: &[usize], v: &[f64]) -> Tensor {
    tensor(DType::F32, shape, v)
}

// ---------------------------------------------------------------------------------------------
// Index math for naive references

/// Row-major strides.
pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

pub(crate) use vinort_ir::tensor::unravel;

/// Row-major flat offset of `idx` in `shape`.
pub(crate) fn ravel(idx: &[usize], shape: &[usize]) -> usize {
    idx.iter().zip(shape).fold(0, |acc, (i, d)| acc * d + i)
}

// ---------------------------------------------------------------------------------------------
// Comparing

/// Equal, or both NaN, or within `rtol·|want| + atol`.
pub(crate) fn close(got: f64, want: f64, rtol: f64, atol: f64) -> bool {
    (got.is_nan() && want.is_nan()) || got == want || (got - want).abs() <= rtol * want.abs() + atol
}

/// [`close`] over slices, naming the first element that is not.
pub(crate) fn check_close(
    got: &[f64],
    want: &[f64],
    rtol: f64,
    atol: f64,
    what: &str,
) -> std::result::Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} values, want {}", got.len(), want.len()));
    }
    match got.iter().zip(want).position(|(g, w)| !close(*g, *w, rtol, atol)) {
        Some(i) => Err(format!("{what}: element {i}: got {}, want {}", got[i], want[i])),
        None => Ok(()),
    }
}

#[track_caller]
pub(crate) fn assert_close(got: &[f64], want: &[f64], rtol: f64, atol: f64, what: &str) {
    if let Err(e) = check_close(got, want, rtol, atol, what) {
        panic!("{e}");
    }
}

/// Proptest settings: `cases` runs; failing inputs are printed with their minimal case rather
/// than persisted, so test runs write nothing into the source tree.
///
/// The generator seed is fixed, so every run (and CI) tries the same cases and a red run can be
/// reproduced; set `PROPTEST_RNG_SEED=<u64>` to explore other cases.
pub(crate) fn config(cases: u32) -> ProptestConfig {
    let rng_seed = match std::env::var_os("PROPTEST_RNG_SEED") {
        Some(_) => ProptestConfig::default().rng_seed,
        None => proptest::test_runner::RngSeed::Fixed(0x7669_6e6f_7274),
    };
    ProptestConfig { cases, failure_persistence: None, rng_seed, ..ProptestConfig::default() }
}

// ---------------------------------------------------------------------------------------------
// ONNX node test cases

/// Which node test cases of `tests/data/node` a family runs.
pub(crate) enum Cases<'a> {
    /// Exactly these (a missing one fails).
    Listed(&'a [&'a str]),
    /// Every case whose name passes the filter.
    Matching(&'a dyn Fn(&str) -> bool),
}

/// The node cases of these name prefixes, without the `_expanded` function-body variants (those
/// are built from other families' ops and are left to the suite-wide runner).
pub(crate) fn prefixed<'a>(prefixes: &'a [&'a str]) -> impl Fn(&str) -> bool + 'a {
    move |n| !n.ends_with("_expanded") && prefixes.iter().any(|p| n.starts_with(p))
}

/// Runs the chosen ONNX node test cases end to end through the provider (every data set of a
/// case) and fails on any failure not listed in `known_failures` (case, reason). Outputs
/// compare as [`same_value`] with the given tolerance. Without the generated test data the
/// check is skipped with a message.
pub(crate) fn run_node_cases(cases: Cases<'_>, known_failures: &[(&str, &str)], tol: Tol) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/node");
    let Ok(entries) = std::fs::read_dir(&root) else {
        println!("{} does not exist; skipping the ONNX node cases", root.display());
        return;
    };
    let mut names: Vec<String> = match cases {
        Cases::Listed(list) => list.iter().map(|c| c.to_string()).collect(),
        Cases::Matching(pick) => {
            entries.filter_map(|e| e.ok()?.file_name().into_string().ok()).filter(|n| pick(n)).collect()
        }
    };
    names.sort();
    let (mut passed, mut failed, mut unexpected) = (0, 0, vec![]);
    for name in &names {
        let known = known_failures.iter().find(|(n, _)| n == name);
        match (run_case(&root.join(name), tol), known) {
            (Ok(()), None) => passed += 1,
            (Ok(()), Some(_)) => {
                passed += 1;
                println!("PASS (listed as failing) {name}");
            }
            (Err(e), Some((_, why))) => {
                failed += 1;
                println!("FAIL (expected: {why}) {name}: {e}");
            }
            (Err(e), None) => {
                failed += 1;
                println!("FAIL {name}: {e}");
                unexpected.push(name.clone());
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    assert!(unexpected.is_empty(), "unexpected failures: {unexpected:?}");
}

/// Float tolerance of a comparison: `|got - want| <= rtol·|want| + atol`.
#[derive(Clone, Copy)]
pub(crate) struct Tol {
    pub(crate) rtol: f64,
    pub(crate) atol: f64,
}

/// The node cases' usual tolerance (ONNX's backend test default).
pub(crate) const NODE_TOL: Tol = Tol { rtol: 1e-3, atol: 1e-7 };

fn run_case(dir: &Path, tol: Tol) -> std::result::Result<(), String> {
    let s = |e: Error| e.to_string();
    let model = vinort_ir::Model::load(dir.join("model.onnx")).map_err(s)?;
    let g = &model.graph;
    let plan =
        crate::provider::compile_nodes(g, g.topo_order(), g.inputs(), g.outputs(), crate::optimize::OptLevel::Extended)
            .map_err(s)?;
    let mut sets: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    sets.sort();
    for set in sets {
        let read = |file: String, v: &vinort_ir::ValueId| read_value(&set.join(file), &g.value(*v).ty);
        let inputs = g
            .inputs()
            .iter()
            .enumerate()
            .map(|(k, v)| read(format!("input_{k}.pb"), v))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let refs: Vec<&Value> = inputs.iter().collect();
        let got = plan.run(&refs, &RunContext::default()).map_err(s)?;
        if got.len() != g.outputs().len() {
            return Err(format!("{} outputs, want {}", got.len(), g.outputs().len()));
        }
        for (k, (a, v)) in got.iter().zip(g.outputs()).enumerate() {
            let want = read(format!("output_{k}.pb"), v)?;
            same_value(a, &want, tol).map_err(|e| format!("output {k}: {e}"))?;
        }
    }
    Ok(())
}

/// Reads one serialized value of a node case, choosing the message by the declared type.
fn read_value(path: &Path, ty: &ValueType) -> std::result::Result<Value, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let tensor = |p: &TensorProto| {
        tensor_from_proto(p, &ExternalData::default()).map(|t| t.to_aligned()).map_err(|e| e.to_string())
    };
    let sequence = |p: &SequenceProto, declared: &ValueType| -> std::result::Result<Sequence, String> {
        let items = p.tensor_values.iter().map(tensor).collect::<std::result::Result<Vec<_>, _>>()?;
        let dtype = items
            .first()
            .map(Tensor::dtype)
            .or_else(|| declared.tensor_dtype())
            .ok_or("empty sequence of unknown element type")?;
        Ok(Sequence { dtype, items })
    };
    match ty {
        ValueType::Sequence(inner) => {
            let p = SequenceProto::decode(bytes.as_slice()).map_err(|e| e.to_string())?;
            Ok(Value::Sequence(sequence(&p, inner)?))
        }
        ValueType::Optional(inner) => {
            let p = OptionalProto::decode(bytes.as_slice()).map_err(|e| e.to_string())?;
            let content = if let Some(t) = &p.tensor_value {
                Some(Value::Tensor(tensor(t)?))
            } else if let Some(s) = &p.sequence_value {
                let declared = match inner.as_ref() {
                    ValueType::Sequence(e) => e.as_ref().clone(),
                    _ => ValueType::Unknown,
                };
                Some(Value::Sequence(sequence(s, &declared)?))
            } else {
                None
            };
            Ok(Value::Optional(content.map(Box::new), (**inner).clone()))
        }
        _ => Ok(Value::Tensor(vinort_ir::tensor_proto::decode_tensor(bytes.into()).map_err(|e| e.to_string())?.1)),
    }
}

/// Same dtype and shape; strings and integers equal, floats within `tol` (NaN matches NaN).
pub(crate) fn same_tensor(got: &Tensor, want: &Tensor, tol: Tol) -> std::result::Result<(), String> {
    if got.dtype() != want.dtype() || got.shape() != want.shape() {
        return Err(format!("got {}{:?}, want {}{:?}", got.dtype(), got.shape(), want.dtype(), want.shape()));
    }
    let s = |e: Error| e.to_string();
    if want.dtype() == DType::String {
        return if got.as_strings().map_err(s)? == want.as_strings().map_err(s)? {
            Ok(())
        } else {
            Err("strings differ".into())
        };
    }
    if want.dtype().is_float() {
        return check_close(
            &got.to_f64_vec().map_err(s)?,
            &want.to_f64_vec().map_err(s)?,
            tol.rtol,
            tol.atol,
            "values",
        );
    }
    if got.as_bytes() != want.as_bytes() {
        return Err(format!("elements differ: got {got:?}, want {want:?}"));
    }
    Ok(())
}

/// [`same_tensor`] through sequences and optionals.
fn same_value(got: &Value, want: &Value, tol: Tol) -> std::result::Result<(), String> {
    match (got, want) {
        (Value::Tensor(x), Value::Tensor(y)) => same_tensor(x, y, tol),
        (Value::Sequence(x), Value::Sequence(y)) => {
            if x.items.len() != y.items.len() {
                return Err(format!("sequence of {} elements, want {}", x.items.len(), y.items.len()));
            }
            x.items.iter().zip(&y.items).try_for_each(|(p, q)| same_tensor(p, q, tol))
        }
        (Value::Optional(x, _), Value::Optional(y, _)) => match (x, y) {
            (None, None) => Ok(()),
            (Some(p), Some(q)) => same_value(p, q, tol),
            _ => Err(format!("optional presence differs: got {}, want {}", x.is_some(), y.is_some())),
        },
        _ => Err(format!("got {}, want {}", got.kind(), want.kind())),
    }
}
