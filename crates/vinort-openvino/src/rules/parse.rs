//! Parsing the table format described in the [module docs](super).

use vinort_ir::DType;

use super::{COLUMNS, KeyInputs, Measured, ParseError, Rule, RuleTable};

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

pub(super) fn normalize_domain(domain: &str) -> &str {
    if domain.is_empty() { "ai.onnx" } else { domain }
}

pub(super) fn dtype_by_name(name: &str) -> Option<DType> {
    DType::ALL.iter().copied().find(|d| d.onnx_name() == name)
}

pub(super) fn parse_key_inputs(spec: &str) -> Result<KeyInputs, String> {
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
}
