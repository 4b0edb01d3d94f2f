//! Refusals that depend on a node's attributes, constant inputs or shapes.
//!
//! The measured table ([`crate::rules`]) is keyed by op, opset and element type, and its probes
//! use default attributes and random data. Some ONNX semantics the measured OpenVINO release ([`MEASURED`]) gets wrong only
//! under particular attributes, input kinds or data (infinities, ties, empty reductions). The
//! ONNX node tests found each of these; every rule below names what OpenVINO does instead, so a
//! node that matches one is refused and runs on the next provider. The rule of this module:
//! when the wrong case cannot be excluded from the graph alone (it depends on run-time data),
//! the node is refused.
//!
//! [`refusal`] is asked before the table; `None` means "no semantic objection".

use vinort_ir::ops::window::{AutoPad, WindowAttrs};
use vinort_ir::{DType, Dim, Graph, Node, NodeIndex, ValueType};

use crate::version::MEASURED;

mod contrib;

/// Why OpenVINO must not run this node, if a semantic rule says so.
pub fn refusal(g: &Graph, ix: NodeIndex) -> Option<String> {
    let n = g.node(ix);
    if let Some(why) = int64_constant_beyond_int32(g, n) {
        return Some(why);
    }
    if let Some(why) = size_from_data(g, n) {
        return Some(why);
    }
    if let Some(why) = static_size_past_limit(g, n) {
        return Some(why);
    }
    if n.domain == "com.microsoft" {
        return contrib::refusal(g, n);
    }
    if !matches!(n.domain.as_str(), "" | "ai.onnx") {
        return None;
    }
    match n.op_type.as_str() {
        "Cast" | "CastLike" => cast(g, n),
        "ReduceMax" | "ReduceMin" => extremum_reduction(g, n),
        "MaxPool" => max_pool(g, n),
        "Resize" => resize(g, n),
        "Tile" => tile(g, n),
        "Pad" => reflect_pad(g, n),
        "Softmax" if (11..=12).contains(&n.opset) => flattened_softmax(g, n),
        "TopK" => Some(format!(
            "OpenVINO {MEASURED} orders equal values differently from ONNX (ties must keep the lower index \
             first; test_top_k_same_values returns index 0 for every tie), and ties depend on run-time data"
        )),
        "NonMaxSuppression" => Some(format!(
            "OpenVINO {MEASURED} also suppresses boxes whose IoU equals iou_threshold (ONNX suppresses only \
             above it; test_nonmaxsuppression_iou_threshold_boundary keeps 1 box instead of 2), and the \
             IoU values depend on run-time data"
        )),
        "DynamicQuantizeLinear" => Some(format!(
            "OpenVINO {MEASURED} rounds the zero point differently from ONNX's round-half-to-even \
             (test_dynamicquantizelinear: 25 instead of 26)"
        )),
        "LSTM" => lstm(g, n),
        "RNN" | "GRU" if n.attr_or::<i64>("layout", 0).unwrap_or(0) != 0 => Some(format!(
            "OpenVINO {MEASURED} reads {} layout=1 (batch-major) inputs as sequence-major (test_lstm_batchwise)",
            n.op_type
        )),
        "Attention" => Some(format!(
            "OpenVINO {MEASURED} gives wrong results for the opset 23/24 Attention op with sliding windows, \
             causal masks combined with past key/values or bias, and bfloat16 inputs (13 ONNX node tests \
             differ, e.g. test_attention_local_window)"
        )),
        "RoiAlign" => {
            let mode = n.attr_or::<String>("mode", "avg".into()).unwrap_or_default();
            (mode == "max").then(|| {
                format!(
                    "OpenVINO {MEASURED} RoiAlign mode 'max' takes the max over sampling points of the bilinear \
                 values differently from ONNX (test_roialign_mode_max differs by 0.40)"
                )
            })
        }
        "DFT" => Some(format!(
            "OpenVINO {MEASURED} gets DFT wrong: it misreads opset 20's axis input (test_dft_axis: -50 instead \
             of 945), gives one-sided transforms the wrong shape (test_dft_rfft: [1,6,10,1,2] instead of \
             [1,6,10,2]; test_dft_irfft drops the last dim), and misses exact zeros by 7e-5 (test_dft)"
        )),
        "SpaceToDepth" => {
            let mode = n.attr_or::<String>("mode", "DCR".into()).unwrap_or_default();
            (mode != "DCR").then(|| {
                format!(
                    "OpenVINO {MEASURED} ignores SpaceToDepth mode '{mode}' and always uses DCR \
                     (test_spacetodepth_crd_mode_example)"
                )
            })
        }
        _ => None,
    }
}

/// OpenVINO's CPU plugin computes int64 in int32: an int64 constant beyond ±2^31 saturates
/// and int64 arithmetic wraps at 32 bits (measured: `Add(1, 2^40)` gives -2147483648,
/// `Mul(2^20, 2^20)` gives 0). A node reading such a constant is refused, except where ONNX
/// clamps the value anyway and OpenVINO was measured right: Slice's starts, ends, axes and
/// steps (±2^63-1 "to the end", also reversed) and Loop's trip count (2^63-1 "until the
/// condition"). Values fed at run time cannot be checked from the graph; int64 data beyond
/// ±2^31 from the caller (rare: ids, masks and shapes are small) is narrowed as it is with ONNX
/// Runtime's OpenVINO EP — run such a model with `[Cpu]`.
fn int64_constant_beyond_int32(g: &Graph, n: &Node) -> Option<String> {
    let clamped = |i: usize| matches!((n.op_type.as_str(), i), ("Slice", 1..=4) | ("Loop", 0));
    n.inputs.iter().enumerate().filter(|(i, _)| !clamped(*i)).find_map(|(i, v)| {
        let v = (*v)?;
        if g.value(v).ty.tensor_dtype() != Some(DType::I64) {
            return None;
        }
        let big = g.constant(v)?.to_aligned().to_vec::<i64>().ok()?.into_iter().find(|x| i32::try_from(*x).is_err())?;
        Some(format!(
            "OpenVINO {MEASURED}'s CPU plugin computes int64 in int32, and input {i} ('{}') is a constant \
             holding {big}, beyond int32 (measured: Add(1, 2^40) gives -2147483648)",
            g.value(v).name
        ))
    })
}

fn dtype(g: &Graph, n: &Node, input: usize) -> Option<DType> {
    n.inputs.get(input).copied().flatten().and_then(|v| g.value(v).ty.tensor_dtype())
}

fn dims(g: &Graph, n: &Node, input: usize) -> Option<Vec<Option<usize>>> {
    let v = n.inputs.get(input).copied().flatten()?;
    match &g.value(v).ty {
        ValueType::Tensor(_, Some(d)) => Some(
            d.iter()
                .map(|d| match d {
                    Dim::Fixed(x) => Some(*x),
                    _ => None,
                })
                .collect(),
        ),
        _ => None,
    }
}

/// The inputs of ops whose output size (or, for Loop, iteration count) is read from that
/// input's values: `(domain, op, inputs)`.
const SIZE_OPERANDS: &[(&str, &str, &[usize])] = &[
    ("", "ConstantOfShape", &[0]),
    ("", "Expand", &[1]),
    ("", "Tile", &[1]),
    ("", "Range", &[0, 1, 2]),
    ("", "Resize", &[1, 2, 3]),
    ("", "Upsample", &[1]),
    ("", "Pad", &[1]),
    ("", "OneHot", &[1]),
    ("", "CenterCropPad", &[1]),
    ("", "Col2Im", &[1, 2]),
    ("", "MaxUnpool", &[2]),
    ("", "DFT", &[1]),
    ("", "STFT", &[1, 3]),
    ("", "HannWindow", &[0]),
    ("", "HammingWindow", &[0]),
    ("", "BlackmanWindow", &[0]),
    ("", "MelWeightMatrix", &[0, 1]),
    ("", "Loop", &[0]),
];

/// A node whose output size comes from run-time *data* (a value computed from tensor contents,
/// not from shapes) is refused: OpenVINO allocates whatever that data asks for, with no limit
/// (a mutated ConstantOfShape fed `|max(x)| * 2^31` took 24 GB and the process was killed),
/// and a Loop runs as many iterations as it says. The Cpu provider checks every such size
/// against the memory limits. Sizes from constants and from `Shape`/`Size` arithmetic, which
/// is what exporters emit, stay with OpenVINO.
fn size_from_data(g: &Graph, n: &Node) -> Option<String> {
    let domain = if n.domain == "ai.onnx" { "" } else { n.domain.as_str() };
    let (_, _, operands) = SIZE_OPERANDS.iter().find(|(d, op, _)| *d == domain && *op == n.op_type)?;
    let at = operands.iter().copied().find(|&i| {
        n.inputs.get(i).copied().flatten().is_some_and(|v| !from_shapes(g, v, &mut Default::default(), 0))
    })?;
    let what = if n.op_type == "Loop" { "iteration count" } else { "output size" };
    Some(format!(
        "its {what} comes from run-time data (input {at} is computed from tensor values, not from shapes or          constants): OpenVINO {MEASURED} would allocate or iterate whatever that data asks, with no memory          limit"
    ))
}

/// OpenVINO plans and allocates the memory of statically shaped tensors itself, when it
/// compiles, outside vinort's memory limits, and it materializes constants derived from dims
/// (index ranges over an axis, triangle masks over the last two): measured on 2026.4.1, a
/// model input declared `float[4294967297]` made the compile take 22 s of system time touching
/// 16 GiB, and Trilu of an *empty* `int64[0, 2147483648]` grew to 24 GiB and was killed. A node
/// with an input or output whose static size, any one dim as an int64 range, or last two dims
/// as a byte mask is past the limit in force (the session's, else the process budget) stays
/// with the Cpu provider, which checks every buffer it makes against that limit.
fn static_size_past_limit(g: &Graph, n: &Node) -> Option<String> {
    use vinort_ir::limits::byte_size;
    let limit = vinort_ir::limits::single_limit();
    n.inputs.iter().chain(&n.outputs).flatten().find_map(|v| {
        let info = g.value(*v);
        let vinort_ir::ValueType::Tensor(dtype, Some(dims)) = &info.ty else { return None };
        let fixed: Vec<Option<usize>> = dims.iter().map(Dim::fixed).collect();
        let all: Option<Vec<usize>> = fixed.iter().copied().collect();
        let size = all.map(|shape| byte_size(&shape, dtype.size().max(1)).unwrap_or(usize::MAX));
        let range = fixed.iter().flatten().map(|d| byte_size(&[*d], 8).unwrap_or(usize::MAX)).max();
        let mask = match fixed.as_slice() {
            [.., Some(a), Some(b)] => byte_size(&[*a, *b], 1),
            _ => None,
        };
        let (what, bytes) =
            [("size", size), ("largest dim as an int64 range", range), ("last two dims as a mask", mask)]
                .into_iter()
                .find_map(|(what, bytes)| bytes.filter(|b| *b > limit).map(|b| (what, b)))?;
        Some(format!(
            "'{}' is a static {} whose {what} is {bytes} bytes, past the memory limit of {limit}: OpenVINO \
             {MEASURED} allocates static tensors and dim-derived constants itself, outside vinort's limits",
            info.name, info.ty
        ))
    })
}

/// True when `v` is a constant or is computed from constants and tensor shapes only (`Shape`,
/// `Size`, and shape arithmetic over them), so its values follow from the model's input shapes.
fn from_shapes(
    g: &Graph,
    v: vinort_ir::ValueId,
    seen: &mut std::collections::HashMap<vinort_ir::ValueId, bool>,
    depth: usize,
) -> bool {
    const ARITHMETIC: &[&str] = &[
        "Identity",
        "Cast",
        "CastLike",
        "Gather",
        "GatherElements",
        "Concat",
        "Slice",
        "Squeeze",
        "Unsqueeze",
        "Reshape",
        "Flatten",
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Mod",
        "Neg",
        "Abs",
        "Floor",
        "Ceil",
        "Round",
        "Max",
        "Min",
        "Sqrt",
        "Equal",
        "Less",
        "Greater",
        "LessOrEqual",
        "GreaterOrEqual",
        "Not",
        "And",
        "Or",
        "Where",
        "ReduceProd",
        "ReduceSum",
        "ReduceMax",
        "ReduceMin",
        "Expand",
        "ConstantOfShape",
        "Range",
        "Tile",
        "Transpose",
        "Clip",
        "Sign",
    ];
    if g.constant(v).is_some() {
        return true;
    }
    if let Some(&known) = seen.get(&v) {
        return known;
    }
    let Some(ix) = g.producer(v) else { return false };
    let n = g.node(ix);
    let verdict = match n.op_type.as_str() {
        _ if !matches!(n.domain.as_str(), "" | "ai.onnx") => false,
        "Shape" | "Size" | "Constant" => true,
        "If" => false,
        op if ARITHMETIC.contains(&op) && depth < 64 => {
            n.inputs.iter().flatten().all(|i| from_shapes(g, *i, seen, depth + 1))
        }
        _ => false,
    };
    seen.insert(v, verdict);
    verdict
}

fn is_constant(g: &Graph, n: &Node, input: usize) -> bool {
    n.inputs.get(input).copied().flatten().is_some_and(|v| g.constant(v).is_some())
}

/// OpenVINO's Convert turns ±inf into ±FLT_MAX whenever double is the source or the target
/// (measured: f32→f64, f16→f64 and f64→f32 all give 3.4028235e38 for inf; the ONNX node tests
/// test_cast_FLOAT_to_DOUBLE, test_cast_DOUBLE_to_FLOAT, test_castlike_*_expanded).
fn cast(g: &Graph, n: &Node) -> Option<String> {
    let from = dtype(g, n, 0);
    let to = if n.op_type == "Cast" {
        n.attr::<i64>("to").ok().flatten().and_then(|t| DType::from_onnx(t as i32))
    } else {
        dtype(g, n, 1)
    };
    let float = |d: Option<DType>| matches!(d, Some(DType::F16 | DType::F32 | DType::F64 | DType::BF16));
    // ONNX rounds to nearest even when narrowing to bfloat16; OpenVINO truncates (measured:
    // 0.4707 becomes 0.46875, not 0.47070313; test_cast_FLOAT_to_BFLOAT16 and
    // test_castlike_FLOAT_to_BFLOAT16 as onnx 1.23.2 with ml_dtypes 0.6 writes them).
    if to == Some(DType::BF16) && float(from) && from != to {
        return Some(format!(
            "OpenVINO {MEASURED} truncates when casting {} to bfloat16 (ONNX rounds to nearest even)",
            from.map_or("?".into(), |d| d.to_string())
        ));
    }
    let involves_double = from == Some(DType::F64) || to == Some(DType::F64);
    (involves_double && float(from) && float(to) && from != to).then(|| {
        format!(
            "OpenVINO {MEASURED} converts ±inf to ±3.4e38 when casting {} to {} (ONNX keeps infinities)",
            from.map_or("?".into(), |d| d.to_string()),
            to.map_or("?".into(), |d| d.to_string())
        )
    })
}

/// Max/min over a slice that is empty or all ±inf gives ∓FLT_MAX in OpenVINO instead of ∓inf
/// (measured: a row of -inf reduces to -3.4028235e38; test_reduce_max_empty_set). Integers are
/// exact. A float16 reduction alone looks right (FLT_MAX rounds back to inf when the output is
/// converted to float16), but inside a graph the CPU plugin computes float16 in f32 and the next
/// node sees -3.4e38 (test_attention_24_qk_matmul_output_mode3_softmax_precision_expanded), so
/// every float type is refused.
fn extremum_reduction(g: &Graph, n: &Node) -> Option<String> {
    let float = matches!(dtype(g, n, 0), Some(DType::F16 | DType::F32 | DType::F64 | DType::BF16));
    float.then(|| {
        format!(
            "OpenVINO {MEASURED} {} of an empty or all-{}inf slice gives {}3.4e38 instead of {}inf, \
             and whether a slice is all infinite depends on run-time data",
            n.op_type,
            if n.op_type == "ReduceMax" { "-" } else { "+" },
            if n.op_type == "ReduceMax" { "-" } else { "+" },
            if n.op_type == "ReduceMax" { "-" } else { "+" },
        )
    })
}

/// ONNX drops a ceil-mode window that would start inside the end padding (or past the input);
/// OpenVINO keeps it (test_maxpool_2d_ceil_output_size_reduce_by_one: 2x2 instead of 1x1).
fn max_pool(g: &Graph, n: &Node) -> Option<String> {
    if n.attr_or::<i64>("ceil_mode", 0).unwrap_or(0) == 0 {
        return None;
    }
    let why = format!("OpenVINO {MEASURED} keeps a ceil_mode window that starts in the end padding, which ONNX drops");
    let Some(shape) = dims(g, n, 0) else {
        return Some(format!("{why}; the input shape is not known, so this cannot be ruled out"));
    };
    let spatial = shape.len().saturating_sub(2);
    let window = WindowAttrs::parse(n).ok().and_then(|a| match &a.kernel {
        Some(k) if k.len() == spatial && a.auto_pad == AutoPad::NotSet => a.resolve(k).ok(),
        _ => None,
    });
    let Some(window) = window else {
        return Some(format!("{why}; this node's padding cannot be checked statically"));
    };
    for (i, size) in shape[2..].iter().enumerate() {
        let Some(size) = *size else {
            return Some(format!("{why}; spatial dimension {i} is not known"));
        };
        if window.ceil_window_starts_in_end_pad(i, size) {
            let (k, s) = (window.kernel[i], window.strides[i]);
            return Some(format!("{why} (spatial dimension {i}: size {size}, kernel {k}, stride {s})"));
        }
    }
    None
}

/// Resize attributes OpenVINO 2026.4 does not honour (each found by an ONNX node test).
fn resize(g: &Graph, n: &Node) -> Option<String> {
    let s = |name: &str, default: &str| n.attr_or::<String>(name, default.into()).unwrap_or_default();
    if n.attr_or::<i64>("antialias", 0).unwrap_or(0) != 0 {
        return Some(format!("OpenVINO {MEASURED} ignores Resize antialias=1 (test_resize_downsample_*_antialias)"));
    }
    let policy = s("keep_aspect_ratio_policy", "stretch");
    if policy != "stretch" {
        return Some(format!(
            "OpenVINO {MEASURED} ignores Resize keep_aspect_ratio_policy='{policy}' (test_resize_*_nearest_{policy})"
        ));
    }
    let mode = s("mode", "nearest");
    if mode == "cubic" && n.attr_or::<i64>("exclude_outside", 0).unwrap_or(0) != 0 {
        return Some(format!(
            "OpenVINO {MEASURED} ignores Resize exclude_outside=1 for cubic mode (test_resize_*_cubic_A_n0p5_exclude_outside)"
        ));
    }
    if s("coordinate_transformation_mode", "half_pixel") == "align_corners" && mode != "nearest" && !upsampling(g, n) {
        return Some(format!(
            "OpenVINO {MEASURED} computes align_corners downsampling wrongly for linear and cubic Resize \
             (test_resize_downsample_scales_*_align_corners); not provably an upsample here"
        ));
    }
    None
}

/// Whether every resized axis of this Resize provably grows (constant scales ≥ 1, or constant
/// sizes ≥ a known input extent).
fn upsampling(g: &Graph, n: &Node) -> bool {
    let constant = |i: usize| n.inputs.get(i).copied().flatten().and_then(|v| g.constant(v));
    if let Some(scales) = constant(2).filter(|t| !t.is_empty()) {
        return scales.to_vec::<f32>().is_ok_and(|v| v.iter().all(|s| *s >= 1.0));
    }
    let (Some(sizes), Some(shape)) = (constant(3), dims(g, n, 0)) else {
        return false;
    };
    let Ok(sizes) = sizes.to_vec::<i64>() else {
        return false;
    };
    sizes.len() == shape.len() && sizes.iter().zip(&shape).all(|(o, i)| i.is_some_and(|i| *o >= i as i64))
}

/// With `repeats` fed at run time OpenVINO 2026.4 returns garbage (test_tile: every element NaN);
/// with constant repeats it is exact.
fn tile(g: &Graph, n: &Node) -> Option<String> {
    (!is_constant(g, n, 1)).then(|| {
        format!("OpenVINO {MEASURED} Tile with run-time (non-constant) repeats returns wrong data (test_tile: every element differs)")
    })
}

/// OpenVINO's Pad in reflect mode checks, when it infers shapes at run time, that every padded
/// axis is known to hold at least 2 elements, and a dimension its model does not fix fails that
/// check whatever the input (measured on silero_vad's STFT padding, input `[?, ?]`: "REFLECT
/// padding mode requires an input of dimension of at least 2 at each spatial axis" from
/// infer). So a reflect Pad is refused unless each axis it pads has a fixed size of 2 or more;
/// without constant pads (or with an `axes` input) every axis counts as padded.
fn reflect_pad(g: &Graph, n: &Node) -> Option<String> {
    if n.attr_or::<String>("mode", "constant".into()).unwrap_or_default() != "reflect" {
        return None;
    }
    let dims = dims(g, n, 0);
    let rank = dims.as_ref().map(Vec::len);
    let pads: Option<Vec<i64>> = if n.opset < 11 {
        n.attr::<Vec<i64>>("pads").ok().flatten()
    } else if n.inputs.get(3).copied().flatten().is_some() {
        None
    } else {
        let v = n.inputs.get(1).copied().flatten()?;
        g.constant(v).and_then(|t| t.to_aligned().to_vec::<i64>().ok())
    };
    let padded = |axis: usize| match (&pads, rank) {
        (Some(p), Some(r)) if p.len() == 2 * r => p[axis] != 0 || p[axis + r] != 0,
        _ => true,
    };
    let ok = dims.as_ref().is_some_and(|d| d.iter().enumerate().all(|(i, d)| !padded(i) || d.is_some_and(|x| x >= 2)));
    (!ok).then(|| {
        format!(
            "OpenVINO {MEASURED}'s reflect Pad fails at run time unless every padded axis has a fixed size of \
             at least 2, and input '{}' does not (measured: silero_vad's STFT padding of an [?, ?] input)",
            n.inputs.first().copied().flatten().map_or(String::new(), |v| g.value(v).name.clone())
        )
    })
}

/// Softmax before opset 13 normalises over the input flattened from `axis` on; OpenVINO
/// normalises over `axis` alone (measured on [2, 3, 4] with axis 1, opsets 11 and 12: max diff
/// 0.63 in f32 and f16). The two agree when every dim after `axis` is 1, which covers the usual
/// last-axis Softmax of OCR and classifier heads (measured: 5e-8 f32, within f16 rounding).
/// A shape of unknown rank or unknown trailing dims cannot show that, so it is refused.
fn flattened_softmax(g: &Graph, n: &Node) -> Option<String> {
    let shape = n.inputs.first().copied().flatten().and_then(|v| g.value(v).ty.tensor_shape());
    let axis = n.attr_or::<i64>("axis", 1).unwrap_or(1);
    let single_axis = shape.is_some_and(|s| {
        let r = s.len() as i64;
        let a = if axis < 0 { axis + r } else { axis };
        (0..r).contains(&a) && s[a as usize + 1..].iter().all(|d| *d == Dim::Fixed(1))
    });
    (!single_axis).then(|| {
        format!(
            "OpenVINO {MEASURED} normalises Softmax-{} over axis {axis} alone instead of over every dim from it on \
             (max diff 0.63 on [2, 3, 4] with axis 1); only a Softmax whose later dims are all 1 is taken",
            n.opset
        )
    })
}

/// Peephole weights (input 7) are mis-applied (test_lstm_with_peepholes differs by 5e-3).
/// Batch-major layout (layout=1) is read as sequence-major (test_lstm_batchwise differs by 0.26).
fn lstm(g: &Graph, n: &Node) -> Option<String> {
    let _ = g;
    if n.inputs.get(7).copied().flatten().is_some() {
        return Some(format!(
            "OpenVINO {MEASURED} applies LSTM peephole weights (input P) differently from ONNX (test_lstm_with_peepholes)"
        ));
    }
    (n.attr_or::<i64>("layout", 0).unwrap_or(0) != 0).then(|| {
        format!("OpenVINO {MEASURED} reads LSTM layout=1 (batch-major) inputs as sequence-major (test_lstm_batchwise)")
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use prost::Message;
    use vinort_ir::Model;
    use vinort_ir::proto::onnx;

    use super::refusal;

    fn attr(name: &str, v: Attr) -> onnx::AttributeProto {
        use vinort_ir::proto::build::attr;
        match v {
            Attr::I(i) => attr::int(name, i),
            Attr::S(s) => attr::string(name, s),
            Attr::Is(v) => attr::ints(name, &v),
        }
    }

    enum Attr {
        I(i64),
        S(&'static str),
        Is(Vec<i64>),
    }

    pub(crate) use vinort_ir::proto::build::fixed_tensor_info as vi;

    /// The refusal for the single node of `model`.
    fn verdict(model: Model) -> Option<String> {
        let g = &model.graph;
        refusal(g, g.topo_order()[0])
    }

    /// A model of one default-domain node `n` with output `y`.
    pub(crate) fn one_node(
        op: &str,
        opset: i64,
        inputs: &[onnx::ValueInfoProto],
        inits: Vec<onnx::TensorProto>,
        node_inputs: &[&str],
        attrs: Vec<onnx::AttributeProto>,
    ) -> Model {
        node_model(("", op), &[("", opset)], inputs, inits, node_inputs, &["y"], attrs)
    }

    /// A model of one node `n` of `(domain, op)` with the given inputs (graph inputs and
    /// initializers) and outputs ("" for an omitted one).
    pub(crate) fn node_model(
        (domain, op): (&str, &str),
        opsets: &[(&str, i64)],
        inputs: &[onnx::ValueInfoProto],
        inits: Vec<onnx::TensorProto>,
        node_inputs: &[&str],
        outputs: &[&str],
        attrs: Vec<onnx::AttributeProto>,
    ) -> Model {
        let node = onnx::NodeProto {
            op_type: Some(op.into()),
            domain: (!domain.is_empty()).then(|| domain.into()),
            name: Some("n".into()),
            input: node_inputs.iter().map(|s| s.to_string()).collect(),
            output: outputs.iter().map(|s| s.to_string()).collect(),
            attribute: attrs,
            ..Default::default()
        };
        let graph = onnx::GraphProto {
            name: Some("g".into()),
            node: vec![node],
            input: inputs.to_vec(),
            output: outputs
                .iter()
                .filter(|o| !o.is_empty())
                .map(|o| onnx::ValueInfoProto { name: Some(o.to_string()), ..Default::default() })
                .collect(),
            initializer: inits,
            ..Default::default()
        };
        let model = vinort_ir::proto::build::model(9, opsets, graph);
        Model::from_bytes(model.encode_to_vec()).expect("test model loads")
    }

    /// A 1-d initializer.
    fn init<T: vinort_ir::Elem>(name: &str, v: &[T]) -> onnx::TensorProto {
        vinort_ir::tensor_proto::tensor_to_proto(
            name,
            &vinort_ir::Tensor::from_slice(&[v.len()], v).expect("1-d tensor"),
        )
    }

    const F32: i32 = 1;
    const F64: i32 = 11;

    #[test]
    fn semantics_cast_involving_double_is_refused_other_casts_are_not() {
        let x32 = [vi("x", F32, &[4])];
        let x64 = [vi("x", F64, &[4])];
        let to = |t: i64| vec![attr("to", Attr::I(t))];
        assert!(verdict(one_node("Cast", 21, &x32, vec![], &["x"], to(11))).unwrap().contains("±inf"));
        assert!(verdict(one_node("Cast", 21, &x64, vec![], &["x"], to(1))).is_some());
        assert_eq!(verdict(one_node("Cast", 21, &x32, vec![], &["x"], to(10))), None);
        assert_eq!(
            verdict(one_node("Cast", 21, &x64, vec![], &["x"], to(7))),
            None,
            "double to int64 keeps no infinities"
        );
        let like = [vi("x", F32, &[4]), vi("t", F64, &[1])];
        assert!(verdict(one_node("CastLike", 21, &like, vec![], &["x", "t"], vec![])).is_some());
        // Narrowing to bfloat16 (16) truncates in OpenVINO.
        assert!(verdict(one_node("Cast", 21, &x32, vec![], &["x"], to(16))).unwrap().contains("truncates"));
        let like16 = [vi("x", F32, &[4]), vi("t", 16, &[1])];
        assert!(verdict(one_node("CastLike", 21, &like16, vec![], &["x", "t"], vec![])).is_some());
    }

    #[test]
    fn semantics_float_max_min_reductions_refused_integer_ones_not() {
        assert!(verdict(one_node("ReduceMax", 18, &[vi("x", F32, &[2, 3])], vec![], &["x"], vec![])).is_some());
        assert!(verdict(one_node("ReduceMin", 18, &[vi("x", F32, &[2, 3])], vec![], &["x"], vec![])).is_some());
        assert_eq!(verdict(one_node("ReduceMax", 18, &[vi("x", 7, &[2, 3])], vec![], &["x"], vec![])), None);
        assert!(verdict(one_node("ReduceMax", 18, &[vi("x", 10, &[2, 3])], vec![], &["x"], vec![])).is_some());
    }

    #[test]
    fn semantics_maxpool_ceil_window_in_padding_is_refused() {
        let pool = |size: i64, stride: i64, ceil: i64| {
            verdict(one_node(
                "MaxPool",
                22,
                &[vi("x", F32, &[1, 1, size, size])],
                vec![],
                &["x"],
                vec![
                    attr("kernel_shape", Attr::Is(vec![1, 1])),
                    attr("strides", Attr::Is(vec![stride, stride])),
                    attr("ceil_mode", Attr::I(ceil)),
                ],
            ))
        };
        // 2 wide, kernel 1, stride 2: ceil gives windows at 0 and 2; the one at 2 lies past the input.
        assert!(pool(2, 2, 1).is_some());
        // 3 wide: windows at 0 and 2, both inside.
        assert_eq!(pool(3, 2, 1), None);
        assert_eq!(pool(2, 2, 0), None);
    }

    #[test]
    fn semantics_resize_attributes() {
        let x = [vi("x", F32, &[1, 1, 4, 4])];
        let scales = |s: f32| vec![init::<f32>("scales", &[1.0, 1.0, s, s])];
        let ins = ["x", "", "scales"];
        let r = |s: f32, attrs| verdict(one_node("Resize", 19, &x, scales(s), &ins, attrs));
        assert!(r(0.5, vec![attr("antialias", Attr::I(1)), attr("mode", Attr::S("linear"))]).is_some());
        assert!(r(2.0, vec![attr("keep_aspect_ratio_policy", Attr::S("not_larger"))]).is_some());
        assert!(r(2.0, vec![attr("mode", Attr::S("cubic")), attr("exclude_outside", Attr::I(1))]).is_some());
        let ac =
            || vec![attr("mode", Attr::S("linear")), attr("coordinate_transformation_mode", Attr::S("align_corners"))];
        assert!(r(0.5, ac()).is_some(), "align_corners downsampling is refused");
        assert_eq!(r(2.0, ac()), None, "align_corners upsampling is fine");
        assert_eq!(r(0.5, vec![attr("mode", Attr::S("linear"))]), None);
    }

    #[test]
    fn semantics_softmax_before_13_only_where_the_flattened_tail_is_one_axis() {
        let sm = |opset: i64, shape: &[i64], axis: Option<i64>| {
            let attrs = axis.map(|a| vec![attr("axis", Attr::I(a))]).unwrap_or_default();
            verdict(one_node("Softmax", opset, &[vi("x", F32, shape)], vec![], &["x"], attrs))
        };
        // Default axis 1 of a rank-3 input flattens two dims: OpenVINO normalises over one.
        assert!(sm(11, &[2, 3, 4], None).is_some());
        assert!(sm(12, &[2, 3, 4], Some(1)).is_some());
        assert!(sm(11, &[2, 3, 4], Some(0)).is_some());
        // The last axis (or trailing dims of 1) is one axis either way.
        assert_eq!(sm(11, &[2, 3, 4], Some(-1)), None);
        assert_eq!(sm(12, &[2, 3, 4], Some(2)), None);
        assert_eq!(sm(11, &[3, 5], None), None);
        assert_eq!(sm(11, &[2, 3, 1], Some(1)), None);
        // Opset 13 changed the semantics to OpenVINO's; before 11 it is measured right.
        assert_eq!(sm(13, &[2, 3, 4], Some(1)), None);
        assert_eq!(sm(10, &[2, 3, 4], Some(1)), None);
        // A trailing dim that is not known to be 1 cannot be shown to be harmless.
        let x = onnx::ValueInfoProto { name: Some("x".into()), ..Default::default() };
        assert!(verdict(one_node("Softmax", 11, &[x], vec![], &["x"], vec![attr("axis", Attr::I(-1))])).is_some());
    }

    /// Sizes from shapes stay with OpenVINO; a size computed from tensor values is refused
    /// (OpenVINO allocated 24 GB for one), as is a Loop whose trip count is data.
    #[test]
    fn semantics_sizes_from_run_time_data_are_refused() {
        use vinort_ir::proto::build::node;
        let graph = onnx::GraphProto {
            name: Some("g".into()),
            node: vec![
                node("Shape", "shape", &["x"], &["s"]),
                node("Mul", "double", &["s", "two"], &["s2"]),
                node("ConstantOfShape", "from_shape", &["s2"], &["y1"]),
                node("ReduceMax", "max", &["x"], &["m"]),
                node("Cast", "cast", &["m"], &["mi"]),
                node("Reshape", "as_shape", &["mi", "one"], &["sh"]),
                node("ConstantOfShape", "from_data", &["sh"], &["y2"]),
                node("Expand", "from_input", &["x", "target"], &["y3"]),
            ],
            input: vec![vi("x", F32, &[2, 3]), vi("target", 7, &[2])],
            output: ["y1", "y2", "y3"]
                .iter()
                .map(|o| onnx::ValueInfoProto { name: Some(o.to_string()), ..Default::default() })
                .collect(),
            initializer: vec![init::<i64>("two", &[2]), init::<i64>("one", &[1])],
            ..Default::default()
        };
        let model = Model::from_bytes(vinort_ir::proto::build::model(9, &[("", 17)], graph).encode_to_vec()).unwrap();
        let g = &model.graph;
        let why = |name: &str| {
            let ix = g.node_indices().find(|ix| g.node(*ix).name == name).unwrap();
            refusal(g, ix)
        };
        assert_eq!(why("from_shape"), None);
        let data = why("from_data").unwrap();
        assert!(data.contains("output size comes from run-time data"), "{data}");
        assert!(why("from_input").is_some(), "a shape fed as a graph input is data");
    }

    #[test]
    fn semantics_static_tensors_past_the_memory_limit_stay_off_openvino() {
        let sum_of = |n: usize| one_node("ReduceSum", 13, &[vi("x", F32, &[n as i64])], vec![], &["x"], vec![]);
        // A declared input of 2^32 + 1 floats (16 GiB): OpenVINO would allocate it when compiling.
        let why = verdict(sum_of((1 << 32) + 1)).expect("refused under the default budget");
        assert!(why.contains("'x' is a static") && why.contains("past the memory limit"), "{why}");
        // 4 KiB fits the default budget, and not a session limit of 1000 bytes.
        assert_eq!(verdict(sum_of(1024)), None);
        let why = vinort_ir::limits::with_session_limit(Some(1000), || verdict(sum_of(1024))).expect("past 1000 bytes");
        assert!(why.contains("size is 4096 bytes") && why.contains("limit of 1000"), "{why}");
        // An empty tensor with a huge dim: OpenVINO's Trilu built 24 GiB from int64[0, 2^31].
        let trilu =
            |dims: &[i64]| one_node("Trilu", 14, &[vi("x", 7, dims), vi("k", 7, &[])], vec![], &["x", "k"], vec![]);
        let why = verdict(trilu(&[0, 1 << 31])).expect("a 2^31 dim is refused though the tensor is empty");
        assert!(why.contains("largest dim as an int64 range is 17179869184 bytes"), "{why}");
        let why = vinort_ir::limits::with_session_limit(Some(1 << 20), || verdict(trilu(&[0, 2000, 2000])))
            .expect("a 2000 x 2000 mask is past 1 MiB");
        assert!(why.contains("last two dims as a mask is 4000000 bytes"), "{why}");
        assert_eq!(verdict(trilu(&[0, 2000, 2000])), None);
    }

    #[test]
    fn semantics_tile_needs_constant_repeats_and_lstm_no_peepholes() {
        let x = vi("x", F32, &[2, 3]);
        assert!(verdict(one_node("Tile", 13, &[x.clone(), vi("r", 7, &[2])], vec![], &["x", "r"], vec![])).is_some());
        assert_eq!(
            verdict(one_node(
                "Tile",
                13,
                std::slice::from_ref(&x),
                vec![init::<i64>("r", &[2, 1])],
                &["x", "r"],
                vec![]
            )),
            None
        );
        assert!(
            verdict(one_node("TopK", 11, std::slice::from_ref(&x), vec![init::<i64>("k", &[1])], &["x", "k"], vec![]))
                .is_some()
        );
        assert_eq!(verdict(one_node("Relu", 14, &[x], vec![], &["x"], vec![])), None);
    }

    #[test]
    fn semantics_reflect_pad_needs_fixed_padded_axes_of_two_or_more() {
        let mode = |m: &'static str| vec![attr("mode", Attr::S(m))];
        let pads = || vec![init::<i64>("p", &[0, 2, 0, 2])];
        let pad = |x: onnx::ValueInfoProto, m: &'static str, p: Vec<onnx::TensorProto>| {
            verdict(one_node("Pad", 13, &[x], p, &["x", "p"], mode(m)))
        };
        // Fixed sizes: only the padded (last) axis matters, so a batch of 1 is fine.
        assert_eq!(pad(vi("x", F32, &[1, 8]), "reflect", pads()), None);
        assert!(pad(vi("x", F32, &[1, 1]), "reflect", pads()).is_some());
        // A dimension the model leaves open, or pads known only at run time.
        use vinort_ir::proto::build::{dim, tensor_info};
        let open = || tensor_info("x", F32, [dim::fixed(1), dim::named("n")]);
        assert!(pad(open(), "reflect", pads()).is_some());
        let runtime_pads = verdict(one_node(
            "Pad",
            13,
            &[vi("x", F32, &[1, 8]), vi("p", 7, &[4])],
            vec![],
            &["x", "p"],
            mode("reflect"),
        ));
        assert!(runtime_pads.is_some());
        // Other modes are not affected.
        assert_eq!(pad(open(), "edge", pads()), None);
        assert_eq!(pad(open(), "constant", pads()), None);
    }

    #[test]
    fn semantics_int64_constants_beyond_int32_are_refused_where_not_clamped() {
        const I64: i32 = 7;
        let x = [vi("x", I64, &[2])];
        let add = |c: i64| verdict(one_node("Add", 14, &x, vec![init::<i64>("c", &[5, c])], &["x", "c"], vec![]));
        assert!(add(1 << 40).unwrap().contains("'c'"), "2^40 is beyond int32");
        assert!(add(i64::from(i32::MIN) - 1).is_some());
        assert_eq!(add(i64::from(i32::MAX)), None, "int32's own range is exact");
        assert_eq!(add(-1), None);
        // Slice's ends of 2^63-1 mean "to the end": clamped by ONNX, measured right.
        let ends = vec![init::<i64>("s", &[1]), init::<i64>("e", &[i64::MAX])];
        assert_eq!(verdict(one_node("Slice", 13, &x, ends, &["x", "s", "e"], vec![])), None);
        // Not for the data input of a Slice.
        let data = vec![init::<i64>("d", &[1 << 40, 0]), init::<i64>("s", &[0]), init::<i64>("e", &[1])];
        assert!(verdict(one_node("Slice", 13, &[], data, &["d", "s", "e"], vec![])).is_some());
        let f = [vi("x", F32, &[2])];
        assert_eq!(verdict(one_node("Relu", 14, &f, vec![], &["x"], vec![])), None);
    }

    #[test]
    fn semantics_dft_is_refused_at_every_opset() {
        let x = [vi("x", F32, &[1, 10, 10, 1])];
        let opset17 = verdict(one_node("DFT", 17, &x, vec![], &["x"], vec![attr("axis", Attr::I(1))]));
        assert!(opset17.unwrap().contains("test_dft_axis"));
        let axis = vec![init::<i64>("axis", &[2])];
        assert!(verdict(one_node("DFT", 20, &x, axis, &["x", "", "axis"], vec![])).is_some());
    }
}
