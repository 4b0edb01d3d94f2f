//! The data-driven capability rule table: which ONNX nodes OpenVINO can really run.
//!
//! Unlike a hand-written op-name list, the table is keyed by
//! (domain, op type, opset range, element type) and was *measured*: the
//! script `scripts/probe_openvino_ops.py` builds a single-node model for every
//! op, schema version and element type, asks the installed OpenVINO to read,
//! query, compile and run it on CPU, and compares the results with
//! onnxruntime; `scripts/probe_contrib_ops.py` does the same for ONNX Runtime's
//! com.microsoft contrib ops from the contrib suite's cases and rewrites the
//! table's com.microsoft rows. Its output, `data/ov_cpu_rules.tsv`, is checked in and embedded
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
//!   type of an op (named bare in the default domain, `domain::op` in any other,
//!   e.g. `com.microsoft::QLinearConcat`): a comma list of input indices (the first one whose type is known
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

mod parse;

use parse::normalize_domain;

/// The embedded table, measured on the OpenVINO release its header names.
const TABLE_TSV: &str = include_str!("../../data/ov_cpu_rules.tsv");

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
        /// True when the refusal holds in any context: OpenVINO computed a wrong answer, or
        /// crashed or hung, on the single node. False when it only refused to convert or
        /// compile the node alone, which a whole model that compiles disproves.
        firm: bool,
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

impl Rule {
    /// The probe's process crashed or hung on the node (the measuring script runs each probe in
    /// a child process with a time limit and says so in the reason).
    pub fn crashes(&self) -> bool {
        self.measured == Measured::Unsupported
            && (self.reason.contains("process crashed") || self.reason.contains("did not finish"))
    }
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

/// The name a `key_input` line gives an op: bare in the default domain, else `domain::op`.
fn key_name(domain: &str, op: &str) -> String {
    match normalize_domain(domain) {
        "ai.onnx" => op.to_string(),
        d => format!("{d}::{op}"),
    }
}

/// A parsed capability table.
#[derive(Debug, Clone, Default)]
pub struct RuleTable {
    version: String,
    key_inputs: HashMap<String, KeyInputs>,
    rules: HashMap<(String, String), Vec<Rule>>,
}

impl RuleTable {
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

    /// True when the table has a row for `op` in `domain`, for any opset or element type.
    pub fn measures(&self, domain: &str, op: &str) -> bool {
        self.rules.contains_key(&(normalize_domain(domain).to_string(), op.to_string()))
    }

    /// All rules, in no particular order.
    pub fn rules(&self) -> impl Iterator<Item = &Rule> {
        self.rules.values().flatten()
    }

    /// Which inputs carry the key element type of `op` in `domain`. A `key_input` line names a
    /// default-domain op bare and any other as `domain::op` (com.microsoft's QuantizeLinear is
    /// not ONNX's).
    pub fn key_inputs(&self, domain: &str, op: &str) -> KeyInputs {
        self.key_inputs.get(&key_name(domain, op)).cloned().unwrap_or_default()
    }

    /// The table's answer for one node; see the free function [`lookup`].
    pub fn lookup(&self, domain: &str, op: &str, opset: i64, device: &str, dtypes: &[Option<DType>]) -> Verdict {
        let key = (normalize_domain(domain).to_string(), op.to_string());
        let Some(rules) = self.rules.get(&key) else {
            return Verdict::Unknown;
        };
        let in_range = |r: &&Rule| r.since_opset <= opset && opset <= r.until_opset;
        match self.key_dtype(domain, op, dtypes) {
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

    fn key_dtype(&self, domain: &str, op: &str, dtypes: &[Option<DType>]) -> Option<DType> {
        match self.key_inputs.get(&key_name(domain, op)) {
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
            Measured::Unsupported => Verdict::Refused {
                reason: format!("{head} is not supported ({range}: {}){note}", rule.reason),
                firm: rule.crashes(),
            },
            Measured::WrongResult => Verdict::Refused {
                reason: format!("{head} gives wrong results ({range}: {}){note}", rule.reason),
                firm: true,
            },
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
/// Entries measured as `wrong_result` are refused like unsupported ones, but firmly (see
/// [`Verdict::Refused`]).
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

/// True when the embedded table has a row for `op` in `domain` (any opset, any element type).
pub fn measures(domain: &str, op: &str) -> bool {
    table().is_some_and(|t| t.measures(domain, op))
}

/// The op types (default domain) the embedded table has rules for, sorted.
pub fn covered_ops() -> Vec<&'static str> {
    table().map(|t| t.covered_ops()).unwrap_or_default()
}

#[cfg(test)]
mod tests;
