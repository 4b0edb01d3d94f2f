//! ONNX Runtime's fused linear ops (`com.microsoft`), built on the linalg and conv kernels:
//!
//! - FusedMatMul: `alpha · op(A) @ op(B)`, where `transBatchA/B` (both inputs of one rank, 3
//!   or more) move the first axis behind the batch axes and `transA/B` swap the last two
//!   ([`vinort_ir::infer::fused_matmul_dims`]).
//! - FusedGemm: Gemm followed by `activation` with parameters `activation_alpha`, `_beta`,
//!   `_gamma` (Relu, Sigmoid, Tanh, Softplus, Softsign; LeakyRelu, Elu, ThresholdedRelu with
//!   alpha; HardSigmoid, ScaledTanh, ParametricSoftplus with alpha and beta; Selu with alpha and
//!   gamma), each parameter required as in ONNX Runtime.
//! - FusedConv: Conv plus the optional `Z` (same shape as the output) followed by `activation`
//!   with `activation_params` (Relu, Tanh, Sigmoid; LeakyRelu `[alpha]`; Clip `[min, max]`;
//!   HardSigmoid `[alpha, beta]`); no activation attribute means none.
//! - GemmFastGelu: `FastGelu(X @ W + bias)`, bias 1-D over the last axis.
//!
//! f16 and bf16 inputs are widened to f32 before the product, so each output rounds once.

use vinort_ir::Values;
use vinort_ir::{DType, Error, Node, Result, RunContext, Tensor, Value, ValueType};

use super::{FLOATS, check_types, fast_gelu, floats, same_type, store};
use crate::kernel::{Factory, Kernel, NodeInfo, Registry, opt_tensor_in, tensor_in};
use crate::kernels::conv::standard::conv_factory;
use crate::kernels::linalg::common::to_compute;
use crate::kernels::linalg::matmul::{gemm_factory, matmul_factory};
use crate::kernels::shape::transpose::transpose_tensor;

pub(crate) fn register(r: &mut Registry) {
    r.op("com.microsoft", "FusedMatMul", fused_factory);
    r.op("com.microsoft", "FusedGemm", fused_factory);
    r.op("com.microsoft", "FusedConv", fused_factory);
    r.op("com.microsoft", "GemmFastGelu", fused_factory);
}

/// The activation applied to the product.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Act {
    None,
    Relu,
    Tanh,
    Sigmoid,
    Softplus,
    Softsign,
    FastGelu,
    LeakyRelu(f64),
    Elu(f64),
    ThresholdedRelu(f64),
    Clip(f64, f64),
    HardSigmoid(f64, f64),
    ScaledTanh(f64, f64),
    ParametricSoftplus(f64, f64),
    Selu(f64, f64),
}

impl Act {
    fn apply(self, x: f64) -> f64 {
        let softplus = |x: f64| if x > 0.0 { x + (-x).exp().ln_1p() } else { x.exp().ln_1p() };
        match self {
            Act::None => x,
            Act::Relu => x.max(0.0),
            Act::Tanh => x.tanh(),
            Act::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            Act::Softplus => softplus(x),
            Act::Softsign => x / (1.0 + x.abs()),
            Act::FastGelu => fast_gelu(x),
            Act::LeakyRelu(a) => {
                if x >= 0.0 {
                    x
                } else {
                    a * x
                }
            }
            Act::Elu(a) => {
                if x >= 0.0 {
                    x
                } else {
                    a * (x.exp() - 1.0)
                }
            }
            Act::ThresholdedRelu(a) => {
                if x > a {
                    x
                } else {
                    0.0
                }
            }
            Act::Clip(lo, hi) => x.max(lo).min(hi),
            Act::HardSigmoid(a, b) => (a * x + b).clamp(0.0, 1.0),
            Act::ScaledTanh(a, b) => a * (b * x).tanh(),
            Act::ParametricSoftplus(a, b) => a * softplus(b * x),
            Act::Selu(a, g) => g * if x > 0.0 { x } else { a * (x.exp() - 1.0) },
        }
    }

    /// FusedGemm's `activation` with its `activation_*` parameters.
    fn of_gemm(n: &Node) -> Result<Act> {
        let name = n.req_attr::<String>("activation")?;
        let p = |k: &str| n.req_attr::<f32>(&format!("activation_{k}")).map(f64::from);
        Ok(match name.as_str() {
            "Relu" => Act::Relu,
            "Tanh" => Act::Tanh,
            "Sigmoid" => Act::Sigmoid,
            "Softplus" => Act::Softplus,
            "Softsign" => Act::Softsign,
            "LeakyRelu" => Act::LeakyRelu(p("alpha")?),
            "Elu" => Act::Elu(p("alpha")?),
            "ThresholdedRelu" => Act::ThresholdedRelu(p("alpha")?),
            "HardSigmoid" => Act::HardSigmoid(p("alpha")?, p("beta")?),
            "ScaledTanh" => Act::ScaledTanh(p("alpha")?, p("beta")?),
            "ParametricSoftplus" => Act::ParametricSoftplus(p("alpha")?, p("beta")?),
            "Selu" => Act::Selu(p("alpha")?, p("gamma")?),
            other => return Err(n.error(format!("activation '{other}' is not one FusedGemm knows"))),
        })
    }

    /// FusedConv's `activation` with `activation_params`.
    fn of_conv(n: &Node) -> Result<Act> {
        let Some(name) = n.attr::<String>("activation")? else {
            return Ok(Act::None);
        };
        let params: Vec<f64> =
            n.attr::<Vec<f32>>("activation_params")?.unwrap_or_default().into_iter().map(f64::from).collect();
        let need = |k: usize| {
            if params.len() == k {
                Ok(())
            } else {
                Err(n.error(format!("activation {name} needs {k} activation_params, got {}", params.len())))
            }
        };
        Ok(match name.as_str() {
            "Relu" => Act::Relu,
            "Tanh" => Act::Tanh,
            "Sigmoid" => Act::Sigmoid,
            "LeakyRelu" => need(1).map(|_| Act::LeakyRelu(params[0]))?,
            "Clip" => need(2).map(|_| Act::Clip(params[0], params[1]))?,
            "HardSigmoid" => need(2).map(|_| Act::HardSigmoid(params[0], params[1]))?,
            other => return Err(n.error(format!("activation '{other}' is not one FusedConv knows"))),
        })
    }
}

/// One fused node: the base kernel, what it reads, and what follows it.
struct Fused {
    inner: Box<dyn Kernel>,
    /// Inputs handed to the base kernel.
    n_inner: usize,
    /// FusedMatMul's (transBatchA, transA, transBatchB, transB) and alpha.
    matmul: Option<([bool; 4], f64)>,
    /// GemmFastGelu's bias (input 2) or FusedConv's Z (input 3).
    addend: Option<usize>,
    act: Act,
}

/// The base op's kernel, built by its own factory on a copy of the node.
fn base(info: &NodeInfo<'_>, op: &str, opset: i64, n: usize, f: Factory) -> Result<Box<dyn Kernel>> {
    let mut node = info.node.clone();
    node.op_type = op.into();
    node.domain = String::new();
    node.opset = opset;
    node.inputs.truncate(n);
    let inner = NodeInfo {
        node: &node,
        inputs: info.inputs.iter().take(n).cloned().collect(),
        consts: info.consts.iter().take(n).cloned().collect(),
        outputs: vec![ValueType::Unknown],
        scope: Default::default(),
    };
    f(&inner)
}

fn fused_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    check_types(info, &[0, 1, 2, 3], &FLOATS)?;
    let flag = |k: &str| n.attr_or::<i64>(k, 0).map(|v| v != 0);
    let k = match n.op_type.as_str() {
        "FusedMatMul" => Fused {
            inner: base(info, "MatMul", 13, 2, matmul_factory)?,
            n_inner: 2,
            matmul: Some((
                [flag("transBatchA")?, flag("transA")?, flag("transBatchB")?, flag("transB")?],
                n.attr_or::<f32>("alpha", 1.0)? as f64,
            )),
            addend: None,
            act: Act::None,
        },
        "FusedGemm" => Fused {
            inner: base(info, "Gemm", 13, 3, gemm_factory)?,
            n_inner: 3,
            matmul: None,
            addend: None,
            act: Act::of_gemm(n)?,
        },
        "FusedConv" => Fused {
            inner: base(info, "Conv", 11, 3, conv_factory)?,
            n_inner: 3,
            matmul: None,
            addend: Some(3),
            act: Act::of_conv(n)?,
        },
        _ => Fused {
            inner: base(info, "MatMul", 13, 2, matmul_factory)?,
            n_inner: 2,
            matmul: None,
            addend: Some(2),
            act: Act::FastGelu,
        },
    };
    Ok(Box::new(k))
}

/// FusedMatMul's operand: `transBatch` moves axis 0 behind the batch axes, `trans` swaps the
/// last two.
fn arrange(t: Tensor, trans_batch: bool, trans: bool) -> Result<Tensor> {
    let axes: Vec<usize> = (0..t.rank()).collect();
    let perm = vinort_ir::infer::fused_matmul_dims(&axes, trans_batch, trans);
    if perm == axes {
        return Ok(t);
    }
    let perm: Vec<i64> = perm.iter().map(|a| *a as i64).collect();
    transpose_tensor(&t, Some(&perm))
}

impl Kernel for Fused {
    fn run(&self, inputs: &[Option<&Value>], ctx: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let dtype = x.dtype();
        if !FLOATS.contains(&dtype) {
            return Err(Error::unsupported(format!("element type {dtype} (expected a float type)")));
        }
        // The base kernel's inputs, widened so a half type rounds only once, at the end.
        let mut ins: Vec<Option<Tensor>> = Vec::with_capacity(self.n_inner);
        for i in 0..self.n_inner {
            ins.push(match opt_tensor_in(inputs, i)? {
                Some(t) => {
                    same_type(x, t, &format!("input {i}"))?;
                    Some(if dtype == DType::F64 { t.clone() } else { to_compute(t)?.into_owned() })
                }
                None => None,
            });
        }
        if let Some(([tba, ta, tbb, tb], _)) = self.matmul {
            let (a, b) = match (ins[0].take(), ins[1].take()) {
                (Some(a), Some(b)) => (a, b),
                _ => return Err(Error::invalid("FusedMatMul needs A and B")),
            };
            if (tba || tbb) && (a.rank() < 3 || a.rank() != b.rank()) {
                return Err(Error::invalid(format!(
                    "transBatchA/B need A and B of one rank of 3 or more, got {:?} and {:?}",
                    a.shape(),
                    b.shape()
                )));
            }
            ins = vec![Some(arrange(a, tba, ta)?), Some(arrange(b, tbb, tb)?)];
        }
        let values: Vec<Option<Value>> = ins.into_iter().map(|t| t.map(Value::Tensor)).collect();
        let refs: Vec<Option<&Value>> = values.iter().map(Option::as_ref).collect();
        let y = self.inner.run(&refs, ctx)?.into_iter().next().ok_or_else(|| Error::invalid("no output"))?;
        let y = y.into_tensor()?;
        let shape = y.shape().to_vec();
        let mut v = y.to_f64_vec()?;
        if let Some((_, alpha)) = self.matmul {
            v.iter_mut().for_each(|x| *x *= alpha);
        }
        if let Some(i) = self.addend
            && let Some(t) = opt_tensor_in(inputs, i)?
        {
            same_type(x, t, &format!("input {i}"))?;
            let add = floats(t, &format!("input {i}"))?;
            // GemmFastGelu's bias runs over the last axis; FusedConv's Z is the output's shape.
            let ok = if i == 2 { t.shape() == [*shape.last().unwrap_or(&0)] } else { t.shape() == shape };
            if !ok || (add.is_empty() && !v.is_empty()) {
                return Err(Error::invalid(format!("input {i} {:?} does not fit the product {shape:?}", t.shape())));
            }
            let len = add.len().max(1);
            v.iter_mut().enumerate().for_each(|(k, x)| *x += add[k % len]);
        }
        if self.act != Act::None {
            v.iter_mut().for_each(|x| *x = self.act.apply(*x));
        }
        Ok(smallvec::smallvec![store(dtype, &shape, &v)?.into()])
    }
}
