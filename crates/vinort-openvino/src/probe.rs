//! Verdicts of single-node compile probes, remembered on disk.
//!
//! Key: the node's signature (domain, op, opset, input element types, which inputs are
//! constants, a stable FNV-1a digest of its attributes) plus the device and the OpenVINO version, so a new
//! OpenVINO release or another device probes again. File: `$VINORT_CACHE_DIR/openvino-probes.tsv`
//! (default `~/.cache/vinort/`), one `key<TAB>ok|refused<TAB>reason` line per verdict,
//! appended as verdicts are made. An unreadable cache is ignored (probing again is only slower).

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use prost::Message;
use vinort_ir::{Graph, NodeIndex};

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
                let d = g.value(*v).ty.tensor_dtype().map(|d| d.onnx_name()).unwrap_or("?");
                if g.constant(*v).is_some() { format!("const {d}") } else { d.to_owned() }
            }
        })
        .collect();
    format!("{}|{}|{}|{}|{:016x}|{}|{}", n.domain, n.op_type, n.opset, ins.join(","), h.finish(), device, ov_version)
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
