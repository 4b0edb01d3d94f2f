use super::parse::{dtype_by_name, parse_key_inputs};
use super::*;

const SEED_OPS: &[&str] = &[
    "Abs",
    "Acos",
    "Acosh",
    "Add",
    "And",
    "ArgMax",
    "ArgMin",
    "Asin",
    "Asinh",
    "Atan",
    "Atanh",
    "AveragePool",
    "BatchNormalization",
    "BitShift",
    "Ceil",
    "Celu",
    "Cast",
    "Clip",
    "Concat",
    "Constant",
    "ConstantOfShape",
    "Conv",
    "ConvInteger",
    "ConvTranspose",
    "Cos",
    "Cosh",
    "CumSum",
    "DepthToSpace",
    "DequantizeLinear",
    "Div",
    "Dropout",
    "Einsum",
    "Elu",
    "Equal",
    "Erf",
    "Exp",
    "Expand",
    "EyeLike",
    "Flatten",
    "Floor",
    "Gather",
    "GatherElements",
    "GatherND",
    "Gemm",
    "GlobalAveragePool",
    "GlobalLpPool",
    "GlobalMaxPool",
    "Greater",
    "GreaterOrEqual",
    "GridSample",
    "Hardmax",
    "HardSigmoid",
    "Identity",
    "If",
    "ImageScaler",
    "InstanceNormalization",
    "LeakyRelu",
    "Less",
    "LessOrEqual",
    "Log",
    "LogSoftmax",
    "Loop",
    "LRN",
    "LSTM",
    "MatMul",
    "MatMulInteger",
    "Max",
    "MaxPool",
    "Mean",
    "MeanVarianceNormalization",
    "Min",
    "Mod",
    "Mul",
    "Neg",
    "NonMaxSuppression",
    "NonZero",
    "Not",
    "OneHot",
    "Or",
    "Pad",
    "Pow",
    "PRelu",
    "QuantizeLinear",
    "QLinearMatMul",
    "Range",
    "Reciprocal",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "ReduceSumSquare",
    "Relu",
    "Reshape",
    "Resize",
    "ReverseSequence",
    "RoiAlign",
    "Round",
    "Scatter",
    "ScatterElements",
    "ScatterND",
    "Selu",
    "Shape",
    "Shrink",
    "Sigmoid",
    "Sign",
    "Sin",
    "Sinh",
    "Size",
    "Slice",
    "Softmax",
    "Softplus",
    "Softsign",
    "SpaceToDepth",
    "Split",
    "Sqrt",
    "Squeeze",
    "Sub",
    "Sum",
    "Tan",
    "Tanh",
    "ThresholdedRelu",
    "Tile",
    "TopK",
    "Transpose",
    "Unsqueeze",
    "Upsample",
    "Where",
    "Xor",
    "LayerNormalization",
    "Gelu",
    "HardSwish",
    "GroupNormalization",
    "Mish",
    "Trilu",
];

fn embedded() -> RuleTable {
    match RuleTable::parse(TABLE_TSV) {
        Ok(t) => t,
        Err(e) => panic!("embedded table does not parse: {e}"),
    }
}

fn mini(rows: &str) -> Result<RuleTable, ParseError> {
    RuleTable::parse(&format!("# openvino_version\t9.9.9\n{COLUMNS}\n{rows}"))
}

#[test]
fn rules_embedded_table_parses() {
    let t = embedded();
    assert!(t.rules().count() > 500, "suspiciously few rules");
    assert_eq!(table_version(), t.version());
    assert!(table_version().starts_with("2026.4"), "{}", table_version());
    assert_eq!(covered_ops(), t.covered_ops());
}

#[test]
fn rules_every_seed_op_is_covered() {
    let ops = covered_ops();
    let missing: Vec<&str> = SEED_OPS.iter().copied().filter(|op| !ops.contains(op)).collect();
    assert!(missing.is_empty(), "ops without rules: {missing:?}");
}

#[test]
fn rules_relu_float_supported_and_domain_alias() {
    let f32s = [Some(DType::F32)];
    let a = lookup("", "Relu", 14, "CPU", &f32s);
    assert!(matches!(&a, Verdict::Supported { reason } if reason.contains("Relu")), "{a:?}");
    assert_eq!(a, lookup("ai.onnx", "Relu", 14, "CPU", &f32s));
    assert_eq!(lookup("", "Relu", 7, "CPU", &f32s), lookup("ai.onnx", "Relu", 7, "CPU", &f32s));
}

#[test]
fn rules_opset_beyond_table_and_unknown_things() {
    let f32s = [Some(DType::F32)];
    assert_eq!(lookup("", "Relu", 10_000, "CPU", &f32s), Verdict::Unknown);
    assert_eq!(lookup("", "NoSuchOp", 14, "CPU", &f32s), Verdict::Unknown);
    assert_eq!(lookup("com.example", "Relu", 14, "CPU", &f32s), Verdict::Unknown);
    // A type the schema does not allow was never measured.
    assert_eq!(lookup("", "Relu", 14, "CPU", &[Some(DType::Complex64)]), Verdict::Unknown);
}

#[test]
fn rules_every_refusal_in_the_table_is_refused_with_its_reason() {
    let t = embedded();
    let mut wrong = 0;
    for r in t.rules().filter(|r| matches!(r.measured, Measured::WrongResult | Measured::Unsupported)) {
        let Some(dt) = dtype_by_name(&r.dtype) else { panic!("bad dtype {}", r.dtype) };
        if t.key_inputs(&r.domain, &r.op) == KeyInputs::Output {
            continue;
        }
        let mut dtypes = vec![None; 4];
        if let KeyInputs::Inputs { indices, .. } = t.key_inputs(&r.domain, &r.op) {
            dtypes[indices[0]] = Some(dt);
        }
        let v = t.lookup(&r.domain, &r.op, r.until_opset, "CPU", &dtypes);
        let Verdict::Refused { reason, firm } = v else { panic!("{r:?} not refused: {v:?}") };
        assert_eq!(firm, r.measured == Measured::WrongResult || r.crashes(), "{r:?}");
        assert!(reason.contains(&r.reason), "{reason} lacks {}", r.reason);
        assert!(reason.contains(&format!("OpenVINO {} CPU: {}", t.version(), r.op)), "{reason}");
        if r.measured == Measured::WrongResult {
            wrong += 1;
            assert!(reason.contains("gives wrong results"), "{reason}");
        } else {
            assert!(reason.contains("is not supported"), "{reason}");
        }
    }
    assert!(wrong > 0, "the table should record at least one wrong_result finding");
}

#[test]
fn rules_gpu_uses_cpu_table_and_says_so() {
    let f32s = [Some(DType::F32)];
    let Verdict::Supported { reason } = lookup("", "Relu", 14, "GPU.0", &f32s) else { panic!("not supported") };
    assert!(reason.contains("measured on CPU, GPU.0 unverified"), "{reason}");
    let Verdict::Supported { reason } = lookup("", "Relu", 14, "CPU", &f32s) else { panic!("not supported") };
    assert!(!reason.contains("unverified"), "{reason}");
}

#[test]
fn rules_key_inputs_and_aggregation() {
    let t = mini(concat!(
        "ai.onnx\tWhere\t9\t15\tfloat\tsupported\tok\n",
        "ai.onnx\tWhere\t9\t15\tint8\twrong_result\tmax diff 3\n",
        "ai.onnx\tMod\t10\t28\tint8\twrong_result\tmax diff 3\n",
        "ai.onnx\tMod\t10\t28\tint16\tunsupported\tnope\n",
        "ai.onnx\tConstant\t7\t28\tfloat\tsupported\tok\n",
        "ai.onnx\tConstant\t7\t28\tstring\tunsupported\tno strings\n",
        "ai.onnx\tSum\t8\t28\tfloat\tsupported\tok\n",
        "ai.onnx\tUpsample\t10\t28\tfloat\tmodel_invalid\tdeprecated\n",
    ));
    let t = match t {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    };
    let t = RuleTable {
        key_inputs: [
            ("Where".to_string(), parse_key_inputs("1,2").unwrap_or_default()),
            ("Constant".to_string(), KeyInputs::Output),
            ("Sum".to_string(), parse_key_inputs("0+").unwrap_or_default()),
        ]
        .into_iter()
        .collect(),
        ..t
    };
    // Where: the condition (input 0, bool) does not decide; input 1, else 2, does.
    let w = t.lookup("", "Where", 9, "CPU", &[Some(DType::Bool), Some(DType::I8), Some(DType::I8)]);
    assert!(matches!(&w, Verdict::Refused { reason, firm: true } if reason.contains("max diff 3")), "{w:?}");
    let w = t.lookup("", "Where", 9, "CPU", &[Some(DType::Bool), None, Some(DType::F32)]);
    assert!(matches!(w, Verdict::Supported { .. }), "{w:?}");
    // Unknown types: mixed verdicts are Unknown, unanimous ones are answered.
    assert_eq!(t.lookup("", "Where", 9, "CPU", &[Some(DType::Bool), None, None]), Verdict::Unknown);
    let m = t.lookup("", "Mod", 12, "CPU", &[None, None]);
    assert!(matches!(m, Verdict::Refused { .. }), "{m:?}");
    let m = t.lookup("", "Mod", 12, "CPU", &[Some(DType::I8), Some(DType::I8)]);
    assert_eq!(
        m,
        Verdict::Refused {
            reason: "OpenVINO 9.9.9 CPU: Mod opset 12 with int8 gives wrong results (opsets 10-28: max diff 3)".into(),
            firm: true,
        }
    );
    // Output-keyed ops aggregate over every measured type.
    assert_eq!(t.lookup("", "Constant", 13, "CPU", &[]), Verdict::Unknown);
    // Variadic key inputs: any later input may decide.
    let s = t.lookup("", "Sum", 13, "CPU", &[None, None, Some(DType::F32)]);
    assert!(matches!(s, Verdict::Supported { .. }), "{s:?}");
    // model_invalid teaches nothing.
    assert_eq!(t.lookup("", "Upsample", 11, "CPU", &[Some(DType::F32)]), Verdict::Unknown);
}

#[test]
fn rules_malformed_tables_are_parse_errors() {
    let line_err = |rows: &str| match mini(rows) {
        Err(ParseError::Line { line, message }) => (line, message),
        other => panic!("{rows:?}: expected a line error, got {other:?}"),
    };
    assert_eq!(line_err("ai.onnx\tRelu\t7\t28\tfloat\tsupported\n").0, 3);
    assert!(line_err("ai.onnx\tRelu\tseven\t28\tfloat\tsupported\tok\n").1.contains("since_opset"));
    assert!(line_err("ai.onnx\tRelu\t7\tx\tfloat\tsupported\tok\n").1.contains("until_opset"));
    assert!(line_err("ai.onnx\tRelu\t9\t7\tfloat\tsupported\tok\n").1.contains("range"));
    assert!(line_err("ai.onnx\tRelu\t7\t28\tfloat32\tsupported\tok\n").1.contains("dtype"));
    assert!(line_err("ai.onnx\tRelu\t7\t28\tfloat\tfine\tok\n").1.contains("verdict"));
    assert!(line_err("ai.onnx\t\t7\t28\tfloat\tsupported\tok\n").1.contains("op"));
    assert!(line_err("# key_input\tWhere\tone\n").1.contains("key input"));
    assert!(line_err("# key_input\tWhere\n").1.contains("directive"));
    assert_eq!(RuleTable::parse(&format!("{COLUMNS}\n")).err(), Some(ParseError::MissingVersion));
    assert_eq!(
        RuleTable::parse("# openvino_version\t1\nai.onnx\tRelu\t7\t28\tfloat\tsupported\tok\n").err(),
        Some(ParseError::MissingHeader)
    );
    // Comments, blank lines and an empty reason are fine.
    let ok = mini("# a comment\n\nai.onnx\tRelu\t7\t28\tfloat\tsupported\t\n");
    assert!(ok.is_ok(), "{ok:?}");
}

#[test]
fn rules_contrib_rows_are_keyed_by_their_domain() {
    let t = embedded();
    // com.microsoft QLinearConcat carries its type at input 2 (input 0 is Y_scale, a float);
    // ONNX has no QLinearConcat, and its QuantizeLinear keeps its own key.
    assert_eq!(t.key_inputs("com.microsoft", "QLinearConcat"), parse_key_inputs("2").unwrap_or_default());
    assert_eq!(t.key_inputs("", "QLinearConcat"), KeyInputs::default());
    let u8_in_2 = [Some(DType::F32), Some(DType::U8), Some(DType::U8)];
    assert!(matches!(t.lookup("com.microsoft", "QLinearConcat", 1, "CPU", &u8_in_2), Verdict::Supported { .. }));
    // Measured: OpenVINO wraps saturated QLinearAdd results around; int8 QLinearSigmoid is wrong.
    for (op, dt) in [("QLinearAdd", DType::U8), ("QLinearAdd", DType::I8), ("QLinearSigmoid", DType::I8)] {
        let v = t.lookup("com.microsoft", op, 1, "CPU", &[Some(dt)]);
        assert!(matches!(v, Verdict::Refused { firm: true, .. }), "{op} {dt}: {v:?}");
    }
    assert!(matches!(
        t.lookup("com.microsoft", "QLinearSigmoid", 1, "CPU", &[Some(DType::U8)]),
        Verdict::Supported { .. }
    ));
    // The same op name in the default domain is another op, not measured here.
    assert_eq!(t.lookup("", "QLinearAdd", 1, "CPU", &[Some(DType::U8)]), Verdict::Unknown);
}
