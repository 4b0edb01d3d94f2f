//! Verdicts of single-node compile probes, remembered on disk.
//!
//! Key: the node's signature (domain, op, opset, input element types and shapes as vinort
//! knows them, which inputs are constants, a stable FNV-1a digest of its attributes) plus the
//! device and the OpenVINO version, so a new OpenVINO release or another device probes again.
//! The shapes are part of it because the probe compiles the node with them: a refusal for an
//! input of unknown rank ("Parameter operation with dynamic rank") says nothing about the same
//! op on a static shape, and must not be reused for it. File: `$VINORT_CACHE_DIR/openvino-probes.tsv`
//! (default `~/.cache/vinort/`), one `key<TAB>ok|refused<TAB>reason` line per verdict,
//! appended as verdicts are made. An unreadable cache is ignored (probing again is only slower).

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use prost::Message;
use vinort_ir::{Dim, Graph, NodeIndex};

use crate::fnv::{Fnv1a, OFFSET};

/// A remembered verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The node compiled alone.
    Ok,
    /// It did not; the reason is OpenVINO's message.
    Refused(String),
}

/// The cache folder.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("VINORT_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("vinort"))
}

struct Store {
    map: HashMap<String, Verdict>,
    file: Option<PathBuf>,
}

fn store() -> &'static Mutex<Store> {
    static S: OnceLock<Mutex<Store>> = OnceLock::new();
    S.get_or_init(|| {
        let file = cache_dir().map(|d| d.join("openvino-probes.tsv"));
        let mut map = HashMap::new();
        if let Some(text) = file.as_ref().and_then(|f| std::fs::read_to_string(f).ok()) {
            for line in text.lines() {
                let mut parts = line.splitn(3, '\t');
                match (parts.next(), parts.next(), parts.next()) {
                    (Some(k), Some("ok"), _) => {
                        map.insert(k.to_owned(), Verdict::Ok);
                    }
                    (Some(k), Some("refused"), Some(r)) => {
                        map.insert(k.to_owned(), Verdict::Refused(r.to_owned()));
                    }
                    _ => {}
                }
            }
        }
        Mutex::new(Store { map, file })
    })
}

/// The probe key of a node.
pub fn key(g: &Graph, ix: NodeIndex, device: &str, ov_version: &str) -> String {
    let n = g.node(ix);
    let mut h = Fnv1a::new(OFFSET);
    if let Some(p) = &n.proto {
        for a in &p.attribute {
            h.update_piece(&a.encode_to_vec());
        }
    }
    let ins: Vec<String> = n
        .inputs
        .iter()
        .map(|v| match v {
            None => "-".into(),
            Some(v) => {
                let ty = &g.value(*v).ty;
                let d = ty.tensor_dtype().map(|d| d.onnx_name()).unwrap_or("?");
                let shape = shape_tag(ty.tensor_shape());
                if g.constant(*v).is_some() { format!("const {d}{shape}") } else { format!("{d}{shape}") }
            }
        })
        .collect();
    format!("{}|{}|{}|{}|{:016x}|{}|{}", n.domain, n.op_type, n.opset, ins.join(","), h.finish(), device, ov_version)
}

/// `[1x3x?x?]` for a shape with fixed and unknown dims, `[*]` for an unknown rank.
fn shape_tag(shape: Option<&[Dim]>) -> String {
    let Some(dims) = shape else { return "[*]".into() };
    let dims: Vec<String> = dims.iter().map(|d| d.fixed().map_or_else(|| "?".into(), |v| v.to_string())).collect();
    format!("[{}]", dims.join("x"))
}

/// A remembered verdict.
pub fn lookup(key: &str) -> Option<Verdict> {
    crate::lock(store()).map.get(key).cloned()
}

/// Remembers a verdict (in memory, and appended to the cache file when possible).
pub fn remember(key: &str, v: Verdict) {
    let mut s = crate::lock(store());
    if let Some(f) = &s.file {
        let line = match &v {
            Verdict::Ok => format!("{key}\tok\t\n"),
            Verdict::Refused(r) => format!("{key}\trefused\t{}\n", r.replace(['\n', '\t'], " ")),
        };
        let written = f.parent().map(std::fs::create_dir_all).transpose().ok().and_then(|_| {
            std::fs::OpenOptions::new().create(true).append(true).open(f).ok()?.write_all(line.as_bytes()).ok()
        });
        if written.is_none() {
            tracing::debug!(file = %f.display(), "probe cache not writable");
        }
    }
    s.map.insert(key.to_owned(), v);
}

/// Remembers a verdict for this process only (one that says nothing about OpenVINO itself,
/// such as a compile deadline passed on a loaded machine).
pub fn remember_in_process(key: &str, v: Verdict) {
    crate::lock(store()).map.insert(key.to_owned(), v);
}

#[cfg(test)]
mod tests {
    use vinort_ir::proto::build::{dim, fixed_tensor_info, tensor_info};
    use vinort_ir::proto::onnx;

    use super::*;

    /// The key of an Add of `a` and `b` in a one-node model.
    fn add_key(a: onnx::ValueInfoProto, b: onnx::ValueInfoProto) -> String {
        let m = crate::semantics::tests::one_node("Add", 14, &[a, b], vec![], &["a", "b"], vec![]);
        let g = &m.graph;
        key(g, g.topo_order()[0], "CPU", "2026.4.1")
    }

    #[test]
    fn keys_tell_shapes_and_unknown_ranks_apart() {
        let f32 = onnx::tensor_proto::DataType::Float as i32;
        let fixed = |n: &str, s: &[i64]| fixed_tensor_info(n, f32, s);
        let static_key = add_key(fixed("a", &[2, 3]), fixed("b", &[2, 3]));
        assert!(static_key.contains("float[2x3],float[2x3]"), "{static_key}");
        assert_eq!(static_key, add_key(fixed("a", &[2, 3]), fixed("b", &[2, 3])), "a key is stable");
        // An input whose rank the model leaves open: a verdict on it is not one on [2, 3].
        let unranked = onnx::ValueInfoProto {
            name: Some("b".into()),
            r#type: Some(onnx::TypeProto {
                value: Some(onnx::type_proto::Value::TensorType(onnx::type_proto::Tensor {
                    elem_type: Some(f32),
                    shape: None,
                })),
                ..Default::default()
            }),
            ..Default::default()
        };
        let open = add_key(fixed("a", &[2, 3]), unranked);
        assert!(open.contains("float[2x3],float[*]"), "{open}");
        let symbolic = add_key(fixed("a", &[2, 3]), tensor_info("b", f32, [dim::named("n"), dim::fixed(3)]));
        assert!(symbolic.contains("float[2x3],float[?x3]"), "{symbolic}");
        assert!(static_key != open && open != symbolic && symbolic != static_key);
        assert_eq!(shape_tag(Some(&[])), "[]", "a scalar has rank 0, not an unknown rank");
    }
}
