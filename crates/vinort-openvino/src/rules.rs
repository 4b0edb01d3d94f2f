//! The data-driven capability rule table: which ONNX nodes OpenVINO can really run.
//!
//! Unlike a hand-written op-name list, the table is keyed by
//! (domain, op type, opset range, element type) and was *measured*: the
//! script `scripts/probe_openvino_ops.py` builds a single-node model for every
//! op, schema version and element type, asks the installed OpenVINO to read,
//! query, compile and run it on CPU, and compares the results with
//! onnxruntime. Its output, `data/ov_cpu_rules.tsv`, is checked in and embedded
//! here; every entry carries the reason for its verdict.
//!
//! The table is the provider's fast first answer. The provider still verifies
//! at run time (compiling partitions, probing single nodes), so
//! [`Verdict::Unknown`] is a normal answer: "not measured, let verification
//! decide".
//!
//! # File format
//!
//! Tab-separated, one rule a line:
//!
//! ```text
//! # openvino_version<TAB>2026.4.1
//! # key_input<TAB>Where<TAB>1,2
//! domain  op  since_opset  until_opset  dtype  verdict  reason
//! ai.onnx Relu 14 28 int8 supported matches onnxruntime
//! ```
//!
//! * `# openvino_version` names the OpenVINO release the table was measured on.
//! * `# key_input` says which node inputs carry the `dtype` column's element
//!   type: a comma list of input indices (the first one whose type is known
//!   decides; `N+` means input N and every later, variadic, input), or `out`
//!   when no input carries it (`Constant`, `ConstantOfShape`, `If`, `Loop`:
//!   the column is the output / value type). Without a line, input 0 decides.
//!   Exceptions worth knowing: `Where` is keyed on its data inputs (1, 2),
//!   `OneHot` on its `values` input (2), `Cast` on its *input* type (the probe
//!   tried several target types and recorded the worst outcome).
//! * Other lines starting with `#` are comments.
//! * `verdict` is `supported`, `unsupported` (OpenVINO refused or crashed),
//!   `wrong_result` (OpenVINO ran it but the results differ from onnxruntime)
//!   or `model_invalid` (the probe model is not valid ONNX, e.g. a deprecated
//!   schema version; treated as not measured).

use std::collections::HashMap;
use std::sync::OnceLock;

use vinort_ir::DType;

/// The embedded table, measured on the OpenVINO release its header names.
const TABLE_TSV: &str = include_str!("../data/ov_cpu_rules.tsv");

/// The device the embedded table was measured on.
const MEASURED_DEVICE: &str = "CPU";

/// The column header line every table must contain before its rules.
const COLUMNS: &str = "domain\top\tsince_opset\tuntil_opset\tdtype\tverdict\treason";

/// The table's answer for one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Measured to compile, run and match the reference.
    Supported {
        /// Why: what was measured, on which OpenVINO release and device.
        reason: String,
    },
    /// Measured to be refused by OpenVINO, to crash it, or to give wrong results.
    Refused {
        /// Why, specific enough to act on (release, device, op, type, the error or difference).
        reason: String,
    },
    /// Not measured (op, opset, element type or table unavailable): let run-time verification decide.
    Unknown,
}

/// What the probe observed for one rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measured {
    /// Read, queried, compiled, ran and matched the reference.
    Supported,
    /// OpenVINO refused the node (or crashed, or hung).
    Unsupported,
    /// OpenVINO ran the node but its results differ from the reference.
    WrongResult,
    /// The probe model was not valid ONNX; nothing was learned.
    ModelInvalid,
}

impl Measured {
    fn parse(s: &str) -> Option<Measured> {
        match s {
            "supported" => Some(Measured::Supported),
            "unsupported" => Some(Measured::Unsupported),
            "wrong_result" => Some(Measured::WrongResult),
            "model_invalid" => Some(Measured::ModelInvalid),
            _ => None,
        }
    }
}

/// One line of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The op's domain, normalised (`""` is stored as `"ai.onnx"`).
    pub domain: String,
    /// The op type, e.g. `"Conv"`.
    pub op: String,
    /// The first opset the rule covers.
    pub since_opset: i64,
    /// The last opset the rule covers (inclusive).
    pub until_opset: i64,
    /// The key element type, as its ONNX name (`"float"`, `"int8"`, ...).
    pub dtype: String,
    /// What the probe observed.
    pub measured: Measured,
    /// The probe's short explanation (an error's first line, a max difference, ...).
    pub reason: String,
}

/// Which node inputs carry an op's key element type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyInputs {
    /// These input indices, in order; the first with a known type decides.
    Inputs {
        /// The listed indices.
        indices: Vec<usize>,
        /// When set, every input from this index on (variadic inputs) also counts.
        variadic_from: Option<usize>,
    },
    /// No input carries it (the rule's dtype is the output's type): answers aggregate over all types.
    Output,
}

impl Default for KeyInputs {
    fn default() -> Self {
        KeyInputs::Inputs { indices: vec![0], variadic_from: None }
    }
}

/// A malformed table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A line could not be parsed.
    #[error("rule table line {line}: {message}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// No `# openvino_version` line.
    #[error("rule table has no '# openvino_version' line")]
    MissingVersion,
    /// No column header line before the first rule.
    #[error("rule table has no column header line")]
    MissingHeader,
}

/// A parsed capability table.
#[derive(Debug, Clone, Default)]
pub struct RuleTable {
    version: String,
    key_inputs: HashMap<String, KeyInputs>,
    rules: HashMap<(String, String), Vec<Rule>>,
}

fn normalize_domain(domain: &str) -> &str {
    if domain.is_empty() { "ai.onnx" } else { domain }
}

fn dtype_by_name(name: &str) -> Option<DType> {
    DType::ALL.iter().copied().find(|d| d.onnx_name() == name)
}

fn parse_key_inputs(spec: &str) -> Result<KeyInputs, String> {
    if spec == "out" {
        return Ok(KeyInputs::Output);
    }
    let mut indices = Vec::new();
    let mut variadic_from = None;
    for part in spec.split(',') {
        let (num, variadic) = match part.strip_suffix('+') {
            Some(n) => (n, true),
            None => (part, false),
        };
        let i: usize = num.trim().parse().map_err(|_| format!("bad key input index '{part}'"))?;
        if variadic {
            variadic_from = Some(i);
        }
        indices.push(i);
    }
    Ok(KeyInputs::Inputs { indices, variadic_from })
}

impl RuleTable {
    /// Parses a table in the format described in the [module docs](self).
    pub fn parse(text: &str) -> Result<RuleTable, ParseError> {
        let mut table = RuleTable::default();
        let mut saw_version = false;
        let mut saw_header = false;
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            let err = |message: String| ParseError::Line { line: line_no, message };
            let line = raw.trim_end_matches('\r');
            if line.trim().is_empty() {
                continue;
            }
            if let Some(comment) = line.strip_prefix('#') {
                let fields: Vec<&str> = comment.trim_start().split('\t').collect();
                match fields.as_slice() {
                    ["openvino_version", v] => {
                        let v = v.trim();
                        if v.is_empty() {
                            return Err(err("empty openvino_version".into()));
                        }
                        table.version = v.to_string();
                        saw_version = true;
                    }
                    ["key_input", op, spec] => {
                        let k = parse_key_inputs(spec.trim()).map_err(&err)?;
                        table.key_inputs.insert(op.trim().to_string(), k);
                    }
                    ["openvino_version", ..] | ["key_input", ..] => {
                        return Err(err(format!("malformed directive '{line}'")));
                    }
                    _ => {} // a comment
                }
                continue;
            }
            if line == COLUMNS {
                saw_header = true;
                continue;
            }
            if !saw_header {
                return Err(ParseError::MissingHeader);
            }
            let fields: Vec<&str> = line.splitn(7, '\t').collect();
            let [domain, op, since, until, dtype, verdict, reason] = fields.as_slice() else {
                return Err(err(format!("expected 7 tab-separated fields, found {}", fields.len())));
            };
            if op.is_empty() {
                return Err(err("empty op type".into()));
            }
            let since_opset: i64 = since.parse().map_err(|_| err(format!("bad since_opset '{since}'")))?;
            let until_opset: i64 = until.parse().map_err(|_| err(format!("bad until_opset '{until}'")))?;
            if since_opset < 1 || until_opset < since_opset {
                return Err(err(format!("bad opset range {since_opset}..={until_opset}")));
            }
            if dtype_by_name(dtype).is_none() {
                return Err(err(format!("unknown dtype '{dtype}'")));
            }
            let measured = Measured::parse(verdict).ok_or_else(|| err(format!("unknown verdict '{verdict}'")))?;
            let rule = Rule {
                domain: normalize_domain(domain).to_string(),
                op: op.to_string(),
                since_opset,
                until_opset,
                dtype: dtype.to_string(),
                measured,
                reason: reason.to_string(),
            };
            table.rules.entry((rule.domain.clone(), rule.op.clone())).or_default().push(rule);
        }
        if !saw_version {
            return Err(ParseError::MissingVersion);
        }
        if !saw_header {
            return Err(ParseError::MissingHeader);
        }
        Ok(table)
    }

    /// The OpenVINO release the table was measured on.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The op types (default domain) the table has rules for, sorted.
    pub fn covered_ops(&self) -> Vec<&str> {
        let mut ops: Vec<&str> = self.rules.keys().filter(|(d, _)| d == "ai.onnx").map(|(_, op)| op.as_str()).collect();
        ops.sort_unstable();
        ops
    }

    /// All rules, in no particular order.
    pub fn rules(&self) -> impl Iterator<Item = &Rule> {
        self.rules.values().flatten()
    }

    /// Which inputs carry `op`'s key element type.
    pub fn key_inputs(&self, op: &str) -> KeyInputs {
        self.key_inputs.get(op).cloned().unwrap_or_default()
    }

    /// The table's answer for one node; see the free function [`lookup`].
    pub fn lookup(&self, domain: &str, op: &str, opset: i64, device: &str, dtypes: &[Option<DType>]) -> Verdict {
        let key = (normalize_domain(domain).to_string(), op.to_string());
        let Some(rules) = self.rules.get(&key) else {
            return Verdict::Unknown;
        };
        let in_range = |r: &&Rule| r.since_opset <= opset && opset <= r.until_opset;
        match self.key_dtype(op, dtypes) {
            Some(dt) => {
                let name = dt.onnx_name();
                match rules.iter().filter(in_range).find(|r| r.dtype == name) {
                    Some(rule) => self.verdict_for(rule, opset, device),
                    None => Verdict::Unknown,
                }
            }
            None => {
                // The key type is unknown (or carried by no input): answer only
                // when every measured type agrees.
                let covering: Vec<&Rule> =
                    rules.iter().filter(in_range).filter(|r| r.measured != Measured::ModelInvalid).collect();
                let Some(first) = covering.first() else {
                    return Verdict::Unknown;
                };
                let all_ok = covering.iter().all(|r| r.measured == Measured::Supported);
                let none_ok = covering.iter().all(|r| r.measured != Measured::Supported);
                if all_ok {
                    let types: Vec<&str> = covering.iter().map(|r| r.dtype.as_str()).collect();
                    Verdict::Supported {
                        reason: format!(
                            "OpenVINO {} {}: {op} opset {opset} measured supported for every probed type ({}){}",
                            self.version,
                            MEASURED_DEVICE,
                            types.join(", "),
                            device_note(device)
                        ),
                    }
                } else if none_ok {
                    self.verdict_for(first, opset, device)
                } else {
                    Verdict::Unknown
                }
            }
        }
    }

    fn key_dtype(&self, op: &str, dtypes: &[Option<DType>]) -> Option<DType> {
        match self.key_inputs.get(op) {
            Some(KeyInputs::Output) => None,
            Some(KeyInputs::Inputs { indices, variadic_from }) => {
                let listed = indices.iter().filter_map(|&i| dtypes.get(i).copied().flatten());
                let rest = variadic_from.iter().flat_map(|&v| dtypes.iter().skip(v).filter_map(|d| *d));
                listed.chain(rest).next()
            }
            None => dtypes.first().copied().flatten(),
        }
    }

    fn verdict_for(&self, rule: &Rule, opset: i64, device: &str) -> Verdict {
        let head =
            format!("OpenVINO {} {}: {} opset {opset} with {}", self.version, MEASURED_DEVICE, rule.op, rule.dtype);
        let range = format!("opsets {}-{}", rule.since_opset, rule.until_opset);
        let note = device_note(device);
        match rule.measured {
            Measured::Supported => {
                Verdict::Supported { reason: format!("{head} measured supported ({range}: {}){note}", rule.reason) }
            }
            Measured::Unsupported => {
                Verdict::Refused { reason: format!("{head} is not supported ({range}: {}){note}", rule.reason) }
            }
            Measured::WrongResult => {
                Verdict::Refused { reason: format!("{head} gives wrong results ({range}: {}){note}", rule.reason) }
            }
            Measured::ModelInvalid => Verdict::Unknown,
        }
    }
}

/// A note appended to reasons when the table is applied to another device than it was measured on.
fn device_note(device: &str) -> String {
    let base = device.split('.').next().unwrap_or(device);
    if base.eq_ignore_ascii_case(MEASURED_DEVICE) {
        String::new()
    } else {
        format!("; measured on {MEASURED_DEVICE}, {device} unverified")
    }
}

/// The embedded table, parsed once; `None` (after one warning) when it is malformed.
fn table() -> Option<&'static RuleTable> {
    static TABLE: OnceLock<Option<RuleTable>> = OnceLock::new();
    TABLE
        .get_or_init(|| match RuleTable::parse(TABLE_TSV) {
            Ok(t) => Some(t),
            Err(e) => {
                tracing::warn!("OpenVINO capability rule table is malformed, answering Unknown for every node: {e}");
                None
            }
        })
        .as_ref()
}

/// Looks a node up in the embedded capability table.
///
/// * `domain`: `""` and `"ai.onnx"` are the same.
/// * `opset`: the model's opset for `domain`; an opset beyond the measured
///   ranges gives [`Verdict::Unknown`].
/// * `device`: a physical device name (`CPU`, `GPU.0`, `NPU`, ...). The table
///   was measured on CPU; for other devices the CPU answer is returned and the
///   reason says the device is unverified.
/// * `dtypes`: the node's input element types where known. The op's key input
///   (see [`KeyInputs`]; input 0 for most ops) decides; when it is unknown the
///   next listed key input is tried, and when none is known the answer is given
///   only if every measured type agrees. An unmeasured type gives
///   [`Verdict::Unknown`].
///
/// Entries measured as `wrong_result` are refused like unsupported ones.
pub fn lookup(domain: &str, op: &str, opset: i64, device: &str, dtypes: &[Option<DType>]) -> Verdict {
    match table() {
        Some(t) => t.lookup(domain, op, opset, device, dtypes),
        None => Verdict::Unknown,
    }
}

/// The OpenVINO release the embedded table was measured on (`"unknown"` if the table is malformed).
pub fn table_version() -> &'static str {
    table().map_or("unknown", |t| t.version())
}

/// The op types (default domain) the embedded table has rules for, sorted.
pub fn covered_ops() -> Vec<&'static str> {
    table().map(|t| t.covered_ops()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
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
            if t.key_inputs(&r.op) == KeyInputs::Output {
                continue;
            }
            let mut dtypes = vec![None; 4];
            if let KeyInputs::Inputs { indices, .. } = t.key_inputs(&r.op) {
                dtypes[indices[0]] = Some(dt);
            }
            let v = t.lookup("", &r.op, r.until_opset, "CPU", &dtypes);
            let Verdict::Refused { reason } = v else { panic!("{r:?} not refused: {v:?}") };
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
        assert!(matches!(&w, Verdict::Refused { reason } if reason.contains("max diff 3")), "{w:?}");
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
                reason: "OpenVINO 9.9.9 CPU: Mod opset 12 with int8 gives wrong results (opsets 10-28: max diff 3)"
                    .into()
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
}
