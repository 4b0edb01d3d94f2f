//! EPContext nodes: ONNX Runtime's format for partitions an execution provider compiled
//! ahead of time (`com.microsoft::EPContext`), read and written the way ONNX Runtime's
//! OpenVINO EP does, so a compiled model loads without compiling and without the ONNX weights
//! of its OpenVINO parts.
//!
//! A node's attributes: `source` (`OpenVINOExecutionProvider`), `main_context` (1),
//! `embed_mode` (1: `ep_cache_context` holds the exported blob; 0: it names a file next to the
//! model), `ep_sdk_version` (the OpenVINO version that compiled the blob: a blob imports only
//! into the same version), `partition_name`. vinort adds the device and the compile
//! properties in `notes`, because OpenVINO's C API imports a blob with no properties: the CPU
//! plugin would run an f32 partition in bf16. A node without vinort's notes (written by ONNX
//! Runtime) is imported with the loading session's properties; ONNX Runtime's blobs come in
//! its `OVEP_BIN` container ([`ovep_bin`]).

use std::path::{Path, PathBuf};

use bytes::Bytes;
use vinort_ir::{Error, Model, Node, Result};

pub mod ovep_bin;

/// The op type.
pub const OP: &str = "EPContext";
/// Its domain.
pub const DOMAIN: &str = "com.microsoft";
/// `source` of nodes for this provider (ONNX Runtime's OpenVINO EP name).
pub const SOURCE: &str = "OpenVINOExecutionProvider";
/// First line of the `notes` vinort writes.
const NOTES_HEADER: &str = "vinort openvino context 1";

/// True for an EPContext node of any provider.
pub fn is_context_node(n: &Node) -> bool {
    n.op_type == OP && n.domain == DOMAIN
}

/// True when the model holds an EPContext node.
pub fn has_context_nodes(model: &Model) -> bool {
    let g = &model.graph;
    g.topo_order().iter().any(|ix| is_context_node(g.node(*ix)))
}

/// What an OpenVINO EPContext node carries, read and checked.
#[derive(Debug, Clone)]
pub struct ContextNode {
    /// The exported compiled model.
    pub blob: Bytes,
    /// The OpenVINO version that exported it.
    pub sdk_version: String,
    /// The device and compile properties vinort recorded, when vinort wrote the node.
    pub recorded: Option<Recorded>,
    /// Where the blob came from (`embedded` or the file).
    pub origin: String,
}

/// The compile settings vinort records with a blob.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The blob's length and CRC-32.
    pub check: (usize, u32),
    /// The device string it was compiled for.
    pub device: String,
    /// The properties it was compiled with.
    pub properties: Vec<(String, String)>,
}

/// `notes` for a blob compiled on `device` with `properties`: also the blob's length and
/// CRC-32, so a damaged blob is refused by name before OpenVINO parses it.
pub fn notes(device: &str, properties: &[(String, String)], blob: &[u8]) -> String {
    let mut s = format!("{NOTES_HEADER}\ndevice {device}\nblob {} {:08x}\n", blob.len(), crc32fast::hash(blob));
    for (k, v) in properties {
        s.push_str(&format!("property {k} {v}\n"));
    }
    s
}

/// Reads [`notes`]; `None` for notes vinort did not write.
fn parse_notes(s: &str) -> Option<Recorded> {
    let mut lines = s.lines();
    if lines.next()? != NOTES_HEADER {
        return None;
    }
    let mut device = None;
    let mut check = None;
    let mut properties = vec![];
    for l in lines {
        if let Some(b) = l.strip_prefix("blob ") {
            let (len, crc) = b.split_once(' ')?;
            check = Some((len.parse().ok()?, u32::from_str_radix(crc, 16).ok()?));
        } else if let Some(d) = l.strip_prefix("device ") {
            device = Some(d.to_owned());
        } else if let Some(kv) = l.strip_prefix("property ") {
            let (k, v) = kv.split_once(' ')?;
            properties.push((k.to_owned(), v.to_owned()));
        }
    }
    Some(Recorded { check: check?, device: device?, properties })
}

/// Reads and checks an EPContext node of this provider: a clear error for another provider's
/// node, a node without a blob, a blob file that is missing or escapes the model's folder.
///
/// ONNX Runtime's OpenVINO EP (1.23 and later) stores its blobs in an `OVEP_BIN` container
/// ([`ovep_bin`]) shared by all the model's partitions: a node's blob is the container's entry
/// of its `partition_name`. With embed_mode 1 only the first node (main_context=1) holds the
/// container, and the others (main_context=0, empty ep_cache_context) read it from there; with
/// embed_mode 0 every node names the same file.
pub fn read(model: &Model, n: &Node) -> Result<ContextNode> {
    let attrs = Attrs::of(n)?;
    let source = attrs.text("source").unwrap_or_default();
    if source != SOURCE && source != "OpenVINO" {
        return Err(n.error(format!(
            "EPContext node for '{}', not for OpenVINO: it was compiled for another execution provider",
            if source.is_empty() { "(no source)" } else { &source }
        )));
    }
    let sdk_version = attrs.text("ep_sdk_version").unwrap_or_default();
    let embed = attrs.int("embed_mode", 1);
    let (content, origin) = if attrs.int("main_context", 1) == 1 || embed != 1 {
        content(model, n, &attrs)?
    } else {
        main_context_of(model, n, &attrs)?
    };
    let (blob, origin) = if ovep_bin::is_container(&content) {
        let name = attrs.text("partition_name").filter(|p| !p.is_empty()).ok_or_else(|| {
            n.error(format!(
                "its context ({origin}) is ONNX Runtime's OVEP_BIN container, but the node has no partition_name"
            ))
        })?;
        let blob = ovep_bin::blob(&content, &name).map_err(|e| n.error(format!("{e} ({origin})")))?;
        (blob, format!("{origin}, OVEP_BIN entry '{name}'"))
    } else {
        (content, origin)
    };
    if blob.is_empty() {
        return Err(n.error("EPContext node's blob is empty".to_owned()));
    }
    let recorded = attrs.text("notes").as_deref().and_then(parse_notes);
    if let Some(r) = &recorded {
        let (len, crc) = r.check;
        if blob.len() != len || crc32fast::hash(&blob) != crc {
            return Err(n.error(format!(
                "its context blob ({origin}) is damaged: {} bytes with CRC-32 {:08x}, but it was saved as {len} bytes \
                 with CRC-32 {crc:08x}",
                blob.len(),
                crc32fast::hash(&blob)
            )));
        }
    }
    Ok(ContextNode { blob, sdk_version, recorded, origin })
}

/// An EPContext node's attributes.
struct Attrs<'a>(&'a [vinort_ir::proto::onnx::AttributeProto]);

impl<'a> Attrs<'a> {
    fn of(n: &'a Node) -> Result<Attrs<'a>> {
        let proto = n.proto.as_ref().ok_or_else(|| n.error("EPContext node has no original proto"))?;
        Ok(Attrs(&proto.attribute))
    }

    fn get(&self, name: &str) -> Option<&'a vinort_ir::proto::onnx::AttributeProto> {
        self.0.iter().find(|a| a.name.as_deref() == Some(name))
    }

    fn text(&self, name: &str) -> Option<String> {
        self.get(name).and_then(|a| a.s.as_ref()).map(|s| String::from_utf8_lossy(s).into_owned())
    }

    fn int(&self, name: &str, default: i64) -> i64 {
        self.get(name).and_then(|a| a.i).unwrap_or(default)
    }
}

/// The bytes `ep_cache_context` holds (embed_mode 1) or names (embed_mode 0), and where they
/// came from.
fn content(model: &Model, n: &Node, attrs: &Attrs) -> Result<(Bytes, String)> {
    let content = attrs
        .get("ep_cache_context")
        .and_then(|a| a.s.clone())
        .ok_or_else(|| n.error("EPContext node has no ep_cache_context".to_owned()))?;
    match attrs.int("embed_mode", 1) {
        1 => Ok((content, "embedded".to_owned())),
        0 => {
            let name = String::from_utf8_lossy(&content).into_owned();
            let path = blob_path(model, &name).map_err(|m| n.error(m))?;
            let bytes = std::fs::read(&path)
                .map_err(|e| n.error(format!("cannot read the context blob {}: {e}", path.display())))?;
            Ok((Bytes::from(bytes), path.display().to_string()))
        }
        other => Err(n.error(format!("EPContext embed_mode {other} is neither 0 nor 1"))),
    }
}

/// For an embedded node with main_context=0 (ONNX Runtime's later partitions): the container
/// of the model's main-context node that holds its partition.
fn main_context_of(model: &Model, n: &Node, attrs: &Attrs) -> Result<(Bytes, String)> {
    let name = attrs.text("partition_name").unwrap_or_default();
    let g = &model.graph;
    for &ix in g.topo_order() {
        let m = g.node(ix);
        let Ok(other) = Attrs::of(m) else { continue };
        if !is_context_node(m) || other.int("main_context", 1) != 1 || other.int("embed_mode", 1) != 1 {
            continue;
        }
        let Some(held) = other.get("ep_cache_context").and_then(|a| a.s.clone()) else { continue };
        if !name.is_empty() && ovep_bin::is_container(&held) && ovep_bin::blob(&held, &name).is_ok() {
            return Ok((held, format!("embedded in node '{}'", m.name)));
        }
    }
    Err(n.error(format!(
        "EPContext node with main_context=0 shares another node's context, but no main-context node of this model \
         holds partition '{name}'"
    )))
}

/// A blob file named by an `embed_mode=0` node: relative to the model's folder, inside it.
fn blob_path(model: &Model, name: &str) -> std::result::Result<PathBuf, String> {
    let dir = model
        .path
        .as_ref()
        .and_then(|p| p.parent())
        .ok_or("the context blob is a file next to the model, but the model was not loaded from a file")?;
    let rel = Path::new(name);
    let inside = !name.is_empty()
        && rel.is_relative()
        && rel.components().all(|c| matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir));
    if !inside {
        return Err(format!("context blob path '{name}' must be a relative path inside the model's folder"));
    }
    Ok(dir.join(rel))
}

/// True when a blob's `ep_sdk_version` names the loaded OpenVINO: the same full version, or
/// a prefix of at least major and minor as ONNX Runtime's OpenVINO EP writes it (`2026.4`,
/// `2026.4.1`).
pub fn same_version(blob: &str, loaded: &str) -> bool {
    blob == loaded
        || (blob.contains('.')
            && !blob.ends_with('.')
            && !blob.contains('-')
            && (loaded.starts_with(&format!("{blob}.")) || loaded.starts_with(&format!("{blob}-"))))
}

/// Compile properties a context may ask an import to use: OpenVINO's execution settings, never
/// one that names a file or folder (a hostile model must not make OpenVINO write anywhere).
pub fn importable_property(key: &str) -> bool {
    !key.is_empty()
        && key.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        && !["DIR", "PATH", "FILE", "LOG"].iter().any(|w| key.contains(w))
}

/// The error for a blob of another OpenVINO version.
pub fn version_mismatch(n: &Node, blob: &str, loaded: &str) -> Error {
    n.error(format!(
        "its blob was compiled by OpenVINO {blob}, but OpenVINO {loaded} is loaded: a compiled blob only imports \
         into the version that exported it; compile the source model again with this version (`vinort compile`)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_match_in_full_or_as_ort_writes_them() {
        let loaded = "2026.4.1-22982-e213a147257-releases/2026/4";
        for v in [loaded, "2026.4", "2026.4.1"] {
            assert!(same_version(v, loaded), "{v}");
        }
        for v in ["2026.3", "2026.4.2", "2026", "2026.", "", "2026.4.1-1"] {
            assert!(!same_version(v, loaded), "{v}");
        }
        assert!(importable_property("INFERENCE_PRECISION_HINT"));
        assert!(!importable_property("CACHE_DIR") && !importable_property("weights_path"));
    }

    #[test]
    fn notes_round_trip_and_foreign_notes_are_ignored() {
        let props = vec![("INFERENCE_PRECISION_HINT".to_owned(), "f32".to_owned()), ("A".into(), "b c".into())];
        let r = parse_notes(&notes("CPU", &props, b"blob")).unwrap();
        assert_eq!(r, Recorded { check: (4, crc32fast::hash(b"blob")), device: "CPU".into(), properties: props });
        assert_eq!(parse_notes("written by something else"), None);
        assert_eq!(parse_notes(NOTES_HEADER), None, "a device is required");
    }
}
