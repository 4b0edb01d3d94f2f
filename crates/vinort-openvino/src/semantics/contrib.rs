//! Refusals for ONNX Runtime's com.microsoft contrib ops that OpenVINO converts but gets wrong
//! (or cannot convert) only under some attributes, inputs or outputs.
//!
//! Measured by `scripts/probe_contrib_ops.py` on the contrib suite's cases against onnxruntime
//! (INFERENCE_PRECISION_HINT=f32); the probe's `SEMANTIC` table names, per rule below, the
//! cases it refuses, and the capability table's com.microsoft rows stay "supported" for the
//! other variants. Whatever OpenVINO gets wrong for every variant of an element type (QLinearAdd
//! and QLinearMul saturation, int8 QLinearSigmoid, DynamicQuantizeMatMul…) is a row of the
//! table instead, not a rule here.

use vinort_ir::{DType, Graph, Node};

use crate::version::MEASURED;

/// Why OpenVINO must not run this com.microsoft node, if a rule says so.
pub(super) fn refusal(g: &Graph, n: &Node) -> Option<String> {
    match n.op_type.as_str() {
        "Attention" => has_attr::<f32>(n, "scale").then(|| {
            format!(
                "OpenVINO {MEASURED} ignores com.microsoft Attention's 'scale' attribute and always scales by \
                 1/sqrt(head_size) (contrib case Attention_scale_mask_filter differs by 0.42)"
            )
        }),
        "EmbedLayerNormalization" => output_present(n, 2).then(|| {
            format!(
                "OpenVINO {MEASURED} does not produce EmbedLayerNormalization's optional 'embedding_sum' output \
                 (read_model fails)"
            )
        }),
        "FusedGemm" => fused_gemm(n),
        "FusedMatMul" => (["transBatchA", "transBatchB"].iter().any(|a| n.attr_or::<i64>(a, 0).unwrap_or(1) != 0))
            .then(|| format!("OpenVINO {MEASURED} cannot convert FusedMatMul with transBatchA/transBatchB set")),
        "MatMulNBits" => input_present(n, 4).then(|| {
            format!(
                "OpenVINO {MEASURED} ignores MatMulNBits' g_idx input (the group of each row of K): contrib case \
                 MatMulNBits_b4_blk16_g_idx differs by 7.4"
            )
        }),
        "RotaryEmbedding" => rotary(g, n),
        "SkipLayerNormalization" | "SkipSimplifiedLayerNormalization" => half_statistics(g, n),
        "QLinearConcat" => qlinear_concat(g, n),
        _ => None,
    }
}

/// The attribute is set (or set to something that is not a `T`).
fn has_attr<T: vinort_ir::FromAttr>(n: &Node, name: &str) -> bool {
    !matches!(n.attr::<T>(name), Ok(None))
}

fn input_present(n: &Node, i: usize) -> bool {
    matches!(n.inputs.get(i), Some(Some(_)))
}

fn output_present(n: &Node, i: usize) -> bool {
    matches!(n.outputs.get(i), Some(Some(_)))
}

/// FusedGemm's activations measured right; OpenVINO drops the others (Sigmoid, Tanh and
/// HardSigmoid give the bare Gemm) and the rest were never measured.
const FUSED_GEMM_ACTIVATIONS: [&str; 3] = ["", "Relu", "LeakyRelu"];

fn fused_gemm(n: &Node) -> Option<String> {
    let act = n.attr_or::<String>("activation", String::new()).unwrap_or_else(|_| "?".into());
    (!FUSED_GEMM_ACTIVATIONS.contains(&act.as_str())).then(|| {
        format!(
            "OpenVINO {MEASURED} runs FusedGemm with activation '{act}' as a bare Gemm (measured for Sigmoid, Tanh \
             and HardSigmoid: FusedGemm_sigmoid differs by 5.9); only Relu and LeakyRelu were measured right"
        )
    })
}

/// Partial rotation (`rotary_embedding_dim`) and a single position offset (1-element
/// `position_ids`) both give wrong rotations; 2-D position ids over the whole head are right.
fn rotary(g: &Graph, n: &Node) -> Option<String> {
    if n.attr_or::<i64>("rotary_embedding_dim", 0).unwrap_or(1) != 0 {
        return Some(format!(
            "OpenVINO {MEASURED} rotates the whole head when RotaryEmbedding's rotary_embedding_dim asks for part \
             of it (RotaryEmbedding_partial_rotary differs by 4.1)"
        ));
    }
    let two_d =
        n.inputs.get(1).copied().flatten().and_then(|v| g.value(v).ty.tensor_shape().map(<[_]>::len)) == Some(2);
    (!two_d).then(|| {
        format!(
            "OpenVINO {MEASURED} misreads RotaryEmbedding position_ids that are not a (batch, sequence) matrix \
             (a one-element start offset: RotaryEmbedding_position_offset differs by 4.4)"
        )
    })
}

/// With float16 (or bfloat16) data, OpenVINO gives the `mean` and `inv_std_var` outputs the
/// data's type instead of float.
fn half_statistics(g: &Graph, n: &Node) -> Option<String> {
    let half = matches!(
        n.inputs.first().copied().flatten().and_then(|v| g.value(v).ty.tensor_dtype()),
        Some(DType::F16 | DType::BF16)
    );
    (half && (output_present(n, 1) || output_present(n, 2))).then(|| {
        format!("OpenVINO {MEASURED} types {}'s mean/inv_std_var outputs like the float16 input, not float", n.op_type)
    })
}

/// QLinearConcat that requantizes (an input's scale or zero point differs from the output's)
/// wraps saturated values around instead of clamping them (QLinearConcat_u8_axis1: 251 for 0).
/// Inputs quantized exactly like the output make it a plain Concat, which is right.
fn qlinear_concat(g: &Graph, n: &Node) -> Option<String> {
    let value = |i: usize| {
        n.inputs.get(i).copied().flatten().and_then(|v| g.constant(v)).and_then(|t| t.to_aligned().to_f64_vec().ok())
    };
    let (y_scale, y_zero) = (value(0), value(1));
    let same = y_scale.is_some()
        && y_zero.is_some()
        && (2..n.inputs.len()).step_by(3).all(|x| value(x + 1) == y_scale && value(x + 2) == y_zero);
    (!same).then(|| {
        format!(
            "OpenVINO {MEASURED} wraps QLinearConcat's requantized values around instead of saturating them \
             (QLinearConcat_u8_axis1: 251 instead of 0); only inputs quantized like the output (constant, equal \
             scales and zero points) are left to it"
        )
    })
}

#[cfg(test)]
mod tests {
    use vinort_ir::proto::build::{attr, fixed_tensor_info as vi};
    use vinort_ir::proto::onnx;

    use super::super::refusal;

    const F32: i32 = 1;
    const U8: i32 = 2;
    const I64: i32 = 7;
    const F16: i32 = 10;

    /// A model of one com.microsoft node with the given inputs (graph inputs and initializers)
    /// and outputs ("" for an omitted one).
    fn contrib(
        op: &str,
        inputs: &[onnx::ValueInfoProto],
        inits: Vec<onnx::TensorProto>,
        node_inputs: &[&str],
        outputs: &[&str],
        attrs: Vec<onnx::AttributeProto>,
    ) -> Option<String> {
        let model = super::super::tests::node_model(
            ("com.microsoft", op),
            &[("", 17), ("com.microsoft", 1)],
            inputs,
            inits,
            node_inputs,
            outputs,
            attrs,
        );
        let g = &model.graph;
        refusal(g, g.topo_order()[0])
    }

    fn scalar<T: vinort_ir::Elem>(name: &str, v: T) -> onnx::TensorProto {
        vinort_ir::tensor_proto::tensor_to_proto(name, &vinort_ir::Tensor::from_slice(&[], &[v]).expect("scalar"))
    }

    #[test]
    fn semantics_contrib_attention_scale_and_fused_gemm_activations() {
        let x = [vi("x", F32, &[2, 5, 16]), vi("w", F32, &[16, 48])];
        let att = |attrs| contrib("Attention", &x, vec![], &["x", "w"], &["y"], attrs);
        assert_eq!(att(vec![attr::int("num_heads", 2)]), None);
        assert!(att(vec![attr::int("num_heads", 2), attr::float("scale", 0.5)]).unwrap().contains("'scale'"));
        let ab = [vi("a", F32, &[4, 3]), vi("b", F32, &[3, 2])];
        let gemm =
            |act: &str| contrib("FusedGemm", &ab, vec![], &["a", "b"], &["y"], vec![attr::string("activation", act)]);
        assert_eq!(gemm("Relu"), None);
        assert_eq!(gemm("LeakyRelu"), None);
        for act in ["Sigmoid", "Tanh", "HardSigmoid", "Elu"] {
            assert!(gemm(act).unwrap().contains(act), "{act}");
        }
        assert_eq!(contrib("FusedGemm", &ab, vec![], &["a", "b"], &["y"], vec![]), None, "no activation");
        let mm = |a: &str| contrib("FusedMatMul", &ab, vec![], &["a", "b"], &["y"], vec![attr::int(a, 1)]);
        assert_eq!(mm("transA"), None);
        assert!(mm("transBatchB").is_some());
    }

    #[test]
    fn semantics_contrib_optional_inputs_and_outputs() {
        let ins = [vi("a", F32, &[2, 32]), vi("b", U8, &[4, 2, 8]), vi("s", F32, &[8]), vi("g", 6, &[32])];
        let nbits = |inputs: &[&str]| contrib("MatMulNBits", &ins, vec![], inputs, &["y"], vec![]);
        assert_eq!(nbits(&["a", "b", "s"]), None);
        assert!(nbits(&["a", "b", "s", "", "g"]).unwrap().contains("g_idx"));
        let ids = [vi("ids", 6, &[2, 4]), vi("we", F32, &[10, 8])];
        let emb = |outs: &[&str]| contrib("EmbedLayerNormalization", &ids, vec![], &["ids", "", "we"], outs, vec![]);
        assert_eq!(emb(&["y", "m"]), None);
        assert!(emb(&["y", "m", "sum"]).unwrap().contains("embedding_sum"));
        let skip = |t: i32, outs: &[&str]| {
            let x = [vi("x", t, &[2, 3, 4]), vi("s", t, &[2, 3, 4]), vi("g", t, &[4])];
            contrib("SkipLayerNormalization", &x, vec![], &["x", "s", "g"], outs, vec![])
        };
        assert_eq!(skip(F16, &["y"]), None);
        assert_eq!(skip(F16, &["y", "", "", "sum"]), None, "the sum output has the input's type");
        assert!(skip(F16, &["y", "mean"]).is_some());
        assert_eq!(skip(F32, &["y", "mean", "inv"]), None);
    }

    #[test]
    fn semantics_contrib_rotary_needs_whole_heads_and_2d_positions() {
        let rot = |pos: &[i64], attrs| {
            let x = [vi("x", F32, &[2, 5, 32]), vi("p", I64, pos), vi("c", F32, &[16, 8]), vi("s", F32, &[16, 8])];
            contrib("RotaryEmbedding", &x, vec![], &["x", "p", "c", "s"], &["y"], attrs)
        };
        assert_eq!(rot(&[2, 5], vec![]), None);
        assert!(rot(&[1], vec![]).unwrap().contains("position_ids"));
        assert!(rot(&[2, 5], vec![attr::int("rotary_embedding_dim", 8)]).unwrap().contains("rotary_embedding_dim"));
    }

    #[test]
    fn semantics_contrib_qlinear_concat_only_without_requantizing() {
        let xs = [vi("a", U8, &[2, 3]), vi("b", U8, &[2, 3])];
        let concat = |b_scale: f32, b_zero: u8| {
            let inits = vec![
                scalar("ys", 0.05f32),
                scalar("yz", 128u8),
                scalar("as", 0.05f32),
                scalar("az", 128u8),
                scalar("bs", b_scale),
                scalar("bz", b_zero),
            ];
            let ins = ["ys", "yz", "a", "as", "az", "b", "bs", "bz"];
            contrib("QLinearConcat", &xs, inits, &ins, &["y"], vec![attr::int("axis", 0)])
        };
        assert_eq!(concat(0.05, 128), None);
        assert!(concat(0.02, 128).unwrap().contains("saturating"));
        assert!(concat(0.05, 120).is_some());
        let fed = [vi("ys", F32, &[]), vi("a", U8, &[2, 3])];
        let ins = ["ys", "yz", "a", "ys", "yz"];
        let fed_scale = contrib("QLinearConcat", &fed, vec![scalar("yz", 128u8)], &ins, &["y"], vec![]);
        assert!(fed_scale.is_some(), "a scale fed at run time cannot be checked");
    }
}
