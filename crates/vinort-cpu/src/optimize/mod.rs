//! The Cpu provider's graph optimizer: rewrites the nodes of a Cpu partition before they
//! become kernels, as ONNX Runtime's level 1 and 2 graph transformers do. It runs only on
//! what the Cpu provider compiles, so what OpenVINO receives never changes.
//!
//! Passes, in order (each only where its level allows, see [`OptLevel`]):
//! - [`qdq::qdq_conv`] (Extended): `DequantizeLinear → Conv → QuantizeLinear` becomes one
//!   QLinearConv (exact int8 product, requantized once), as ONNX Runtime's QDQ transformer does.
//! - [`qdq::qdq_add`] (Extended): `Add` of two dequantized int8 tensors, quantized again,
//!   becomes one com.microsoft QLinearAdd (a residual add of a quantized CNN).
//! - [`qdq::qdq_matmul`] (Extended): `DequantizeLinear → MatMul / Gemm` by dequantized
//!   constant int8 weights becomes a MatMulInteger (weights packed once for the int8 kernels)
//!   whose sums are scaled by `a_scale · b_scale` (and given Gemm's bias), as ONNX Runtime's
//!   QDQ transformer makes MatMulIntegerToFloat.
//! - [`fold`] (Basic): constant folding. A node whose inputs are all known at compile time runs
//!   once, with its own kernel, and its outputs become constants: dequantized weights of QDQ
//!   models, shape arithmetic on static shapes (`Shape` of a static value is a constant too).
//! - [`fuse::conv_bn`] (Basic): a Conv followed by an inference BatchNormalization becomes one
//!   Conv with scaled weights and a shifted bias.
//! - [`fuse::gelu`] (Extended): the erf form of GELU spelled in five ops (Div or Mul by √2,
//!   Erf, Add 1, Mul x, Mul ½) becomes one Gelu.
//! - [`norm::layer_norm`] (Extended): layer normalization spelled out in nine ops (ReduceMean,
//!   Sub, Pow or Mul, ReduceMean, Add ε, Sqrt, Div, Mul γ, Add β) becomes one LayerNormalization.
//! - [`fuse::epilogues`] (Extended): Conv, Gemm and MatMul absorb what follows them: a bias
//!   Add, a residual Add, and one activation (Relu, LeakyRelu, Clip, Sigmoid, HardSigmoid,
//!   HardSwish, Tanh, Gelu), then a clamp by constants (Max or Min with a scalar, or a Clip
//!   after the activation), applied to the product before its output is sealed
//!   ([`crate::kernels::epilogue`]); a MatMulInteger by constant weights (dynamic
//!   quantization's) absorbs its Cast to float and Mul by the scales, then the same chain.
//!
//! - [`layout::nchwc`] (All): f32 2-D Convs, with their fused tails, run in the blocked
//!   NCHWc layout on CPUs with AVX-512, with reorders where values cross into and out of it.
//! - [`nhwc::qconv`] (All): QLinearConvs with constant parameters (including those the QDQ
//!   fusion made), and the per-tensor Q/DQ and elementwise ops between them, run channels-last,
//!   with Transposes where values cross into and out of the layout. Unlike NCHWc it changes no
//!   value: the int8 sums are exact and requantized by the same formula.
//!
//! Folding and the epilogue fusions compute exactly what the unfused graph computes (same
//! kernels, same f32 formulas in the same order); Conv+BatchNormalization and GELU round
//! differently, as in ONNX Runtime, and their tests bound the difference.
//!
//! The optimizer works on [`Work`]: the partition's nodes as a list of [`Item`]s in
//! topological order, plus the values it learned (constants, types of values it made). A pass
//! that fuses nodes puts the fused item where the last node of the pattern was, so everything
//! it reads is produced before it.

use std::collections::{HashMap, HashSet};

use vinort_ir::{Error, Graph, Node, NodeIndex, Result, Tensor, ValueId, ValueType};

use crate::kernel::{Kernel, NodeInfo};
use crate::kernels::conv::standard::fused_conv_factory;
use crate::kernels::epilogue::Epilogue;
use crate::kernels::linalg::matmul::{fused_gemm_factory, fused_matmul_factory};

pub(crate) mod fold;
pub(crate) mod fuse;
pub(crate) mod layout;
pub(crate) mod nhwc;
pub(crate) mod norm;
pub(crate) mod qdq;
mod tail;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_nhwc;
#[cfg(test)]
mod tests_qdq;

/// How much the Cpu provider rewrites a partition before compiling it, like ONNX Runtime's
/// `GraphOptimizationLevel`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum OptLevel {
    /// No rewriting: every node runs as written (for debugging a suspected optimizer bug).
    Disabled,
    /// Rewrites that keep every op an ONNX op: constant folding, Conv+BatchNormalization.
    Basic,
    /// Basic plus fusions into kernels that do several ops' work in one pass.
    Extended,
    /// Extended plus layout changes (ONNX Runtime's `ORT_ENABLE_ALL`): f32 Convs run in the
    /// blocked NCHWc layout on CPUs with AVX-512, whose products sum in another order, so
    /// results differ from Extended by rounding; QLinearConvs run channels-last, with values
    /// unchanged.
    #[default]
    All,
}

/// One node of the partition as it will be compiled.
pub(crate) struct Item {
    /// The node (original or made by a pass). Its inputs are followed by `extra` inputs.
    pub node: Node,
    /// What a fusion appended to the product kernel.
    pub epi: Epilogue,
    /// Inputs read only by the epilogue (a residual), after the node's own inputs and
    /// implicit inputs.
    pub extra: Vec<ValueId>,
}

impl Item {
    /// Every value the item reads, in kernel input order.
    pub fn reads(&self) -> Vec<Option<ValueId>> {
        let n = &self.node;
        n.inputs
            .iter()
            .copied()
            .chain(n.implicit_inputs.iter().map(|v| Some(*v)))
            .chain(self.extra.iter().map(|v| Some(*v)))
            .collect()
    }
}

/// A partition being optimized.
pub(crate) struct Work<'g> {
    pub graph: &'g Graph,
    /// Items in topological order; `None` where a pass removed one.
    pub items: Vec<Option<Item>>,
    /// Values known at compile time that are not the graph's initializers.
    pub consts: HashMap<ValueId, Tensor>,
    /// Types of values the optimizer made.
    types: HashMap<ValueId, ValueType>,
    /// Values that must stay produced under their own id: the partition's outputs.
    pub keep: HashSet<ValueId>,
    /// Values fed at run time (never constants, even with an initializer as default).
    fed: HashSet<ValueId>,
    next_id: u32,
    /// Who reads and who makes each value, built on demand; [`Work::touch`] drops it after a
    /// pass changes the items.
    index: std::cell::OnceCell<Index>,
    /// The level [`Work::optimize`] ran at (bodies of control-flow nodes are compiled with it).
    level: OptLevel,
}

#[derive(Default)]
struct Index {
    readers: HashMap<ValueId, Vec<usize>>,
    producer: HashMap<ValueId, usize>,
}

impl<'g> Work<'g> {
    /// The nodes as written.
    pub fn new(graph: &'g Graph, nodes: &[NodeIndex], inputs: &[ValueId], outputs: &[ValueId]) -> Work<'g> {
        let items = nodes
            .iter()
            .map(|&ix| Some(Item { node: graph.node(ix).clone(), epi: Epilogue::default(), extra: vec![] }))
            .collect();
        Work {
            graph,
            items,
            consts: HashMap::new(),
            types: HashMap::new(),
            keep: outputs.iter().copied().collect(),
            fed: inputs.iter().copied().collect(),
            next_id: u32::try_from(graph.values().count()).unwrap_or(u32::MAX),
            index: std::cell::OnceCell::new(),
            level: OptLevel::Disabled,
        }
    }

    /// Runs the passes `level` allows.
    pub fn optimize(&mut self, level: OptLevel) {
        self.level = level;
        if level == OptLevel::Disabled {
            return;
        }
        if level >= OptLevel::Extended {
            qdq::qdq_conv(self);
            qdq::qdq_add(self);
            qdq::qdq_matmul(self);
        }
        fold::constants(self);
        fuse::conv_bn(self);
        if level >= OptLevel::Extended {
            fuse::gelu(self);
            norm::layer_norm(self);
            fuse::epilogues(self);
        }
        if level >= OptLevel::All {
            layout::nchwc(self);
            nhwc::qconv(self);
        }
    }

    /// The type of a value.
    pub fn ty(&self, v: ValueId) -> ValueType {
        match self.types.get(&v) {
            Some(t) => t.clone(),
            None if v.index() < self.graph.values().count() => self.graph.value(v).ty.clone(),
            None => ValueType::Unknown,
        }
    }

    /// The value of `v` when known before running.
    pub fn constant(&self, v: ValueId) -> Option<Tensor> {
        if self.fed.contains(&v) {
            return None;
        }
        if let Some(t) = self.consts.get(&v) {
            return Some(t.clone());
        }
        if v.index() < self.graph.values().count() { self.graph.constant(v) } else { None }
    }

    /// A new constant value.
    pub fn new_const(&mut self, t: Tensor) -> ValueId {
        let v = ValueId(self.next_id);
        self.next_id = self.next_id.saturating_add(1);
        self.types.insert(v, ValueType::tensor(t.dtype(), t.shape()));
        self.consts.insert(v, t);
        v
    }

    /// A new value made at run time by an item a pass added.
    pub fn new_value(&mut self, ty: ValueType) -> ValueId {
        let v = ValueId(self.next_id);
        self.next_id = self.next_id.saturating_add(1);
        self.types.insert(v, ty);
        v
    }

    /// Forgets the reader/producer index: call after changing `items`.
    pub fn touch(&mut self) {
        self.index = std::cell::OnceCell::new();
    }

    fn index(&self) -> &Index {
        self.index.get_or_init(|| {
            let mut ix = Index::default();
            for (i, it) in self.items.iter().enumerate() {
                let Some(it) = it else { continue };
                let mut seen = HashSet::new();
                for v in it.reads().into_iter().flatten() {
                    if seen.insert(v) {
                        ix.readers.entry(v).or_default().push(i);
                    }
                }
                for v in it.node.outputs.iter().flatten() {
                    ix.producer.insert(*v, i);
                }
            }
            ix
        })
    }

    /// Positions of the live items reading `v` (once per item).
    pub fn readers(&self, v: ValueId) -> Vec<usize> {
        self.index().readers.get(&v).cloned().unwrap_or_default()
    }

    /// The one live item reading `v`, when exactly one does and `v` is not a partition output:
    /// the condition for fusing the producer of `v` into its reader.
    pub fn sole_reader(&self, v: ValueId) -> Option<usize> {
        if self.keep.contains(&v) {
            return None;
        }
        match self.readers(v).as_slice() {
            [one] => Some(*one),
            _ => None,
        }
    }

    /// The position of the live item producing `v`.
    pub fn producer(&self, v: ValueId) -> Option<usize> {
        self.index().producer.get(&v).copied()
    }

    /// The live item at `i`.
    pub fn item(&self, i: usize) -> Option<&Item> {
        self.items.get(i)?.as_ref()
    }

    /// The live items, in order.
    pub fn live(&self) -> impl Iterator<Item = &Item> {
        self.items.iter().flatten()
    }
}

/// Builds the kernel of an item: the registry's for a plain node, the fused factory of its op
/// when a pass gave it an epilogue.
pub(crate) fn build_item(w: &Work<'_>, it: &Item) -> Result<Box<dyn Kernel>> {
    let node = &it.node;
    let info = node_info(w, node);
    if node.domain == crate::kernels::conv::nchwc::DOMAIN {
        return crate::kernels::conv::nchwc::factory(&info, it.epi.clone());
    }
    if it.epi.is_empty() {
        let factory = crate::provider::registry().find(node).map_err(Error::Unsupported)?;
        return factory(&info);
    }
    let epi = it.epi.clone();
    match node.op_type.as_str() {
        "Conv" => fused_conv_factory(&info, epi),
        "MatMul" => fused_matmul_factory(&info, epi),
        "Gemm" => fused_gemm_factory(&info, epi),
        "MatMulInteger" => crate::kernels::quant::qmatmul::fused_integer_factory(&info, epi),
        other => Err(Error::invalid(format!("the optimizer fused an epilogue into {other}"))),
    }
}

/// What a kernel factory sees of `node`: its values' types and constants as the optimizer
/// knows them.
pub(crate) fn node_info<'a>(w: &Work<'_>, node: &'a Node) -> NodeInfo<'a> {
    let ty = |v: &Option<ValueId>| v.map(|v| w.ty(v)).unwrap_or(ValueType::Unknown);
    NodeInfo {
        node,
        inputs: node.inputs.iter().map(ty).collect(),
        // Kernels read constants with typed access when they are built; protobuf leaves raw_data
        // unaligned, so a misaligned one (common for 2-byte f16 weights) is aligned here, once
        // per build, instead of making the factory refuse the node.
        consts: node.inputs.iter().map(|v| v.and_then(|v| w.constant(v)).map(|t| t.to_aligned())).collect(),
        outputs: node.outputs.iter().map(ty).collect(),
        scope: crate::kernel::BodyScope {
            // Bodies get the partition's rewrites short of layout changes: their values cross
            // the node's boundary in the plain layout every run.
            level: w.level.min(OptLevel::Extended),
            outer_consts: node.implicit_inputs.iter().map(|v| w.constant(*v).map(|t| t.to_aligned())).collect(),
        },
    }
}

/// The f32 scalar held by a constant of one element, if `v` is one.
pub(crate) fn const_scalar(w: &Work<'_>, v: Option<ValueId>) -> Option<f32> {
    let t = w.constant(v?)?;
    if t.len() != 1 {
        return None;
    }
    match t.dtype() {
        vinort_ir::DType::F32 => t.to_aligned().as_slice::<f32>().ok().map(|s| s[0]),
        _ => None,
    }
}

/// True when `v` is an f32 tensor.
pub(crate) fn is_f32(w: &Work<'_>, v: Option<ValueId>) -> bool {
    v.is_some_and(|v| w.ty(v).tensor_dtype() == Some(vinort_ir::DType::F32))
}
