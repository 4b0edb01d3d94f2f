//! Saving a session as a compiled-context model (ONNX Runtime's EPContext format).
//!
//! Each partition whose provider can export its compiled form (OpenVINO) becomes one
//! `com.microsoft::EPContext` node with the partition's boundary as its inputs and outputs;
//! the other partitions' nodes stay ONNX nodes, as the file had them, with the initializers
//! they read written inline. Loading the result imports the blobs instead of compiling
//! (`vinort_openvino::context`), and needs no ONNX weights of the OpenVINO parts.

use std::path::Path;

use vinort_ir::proto::onnx;
use vinort_ir::proto::prost::Message;
use vinort_ir::tensor_proto::tensor_to_proto;
use vinort_ir::{ContextBlob, Model, ValueId};
use vinort_openvino::export::type_proto;

use crate::error::{Error, Result};
use crate::partition::PlannedPartition;

/// Where a saved context keeps its blobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EmbedMode {
    /// Inside the model file (`embed_mode=1`): one file to move. (ONNX Runtime's
    /// `ep.context_embed_mode` defaults to `0` now, [`EmbedMode::Files`].)
    #[default]
    Embedded,
    /// In files next to the model (`embed_mode=0`), named `<model stem>_<partition>.blob`.
    Files,
}

/// One partition to save: its plan entry and, for a provider with a compiled form, the blob.
pub(crate) struct Part<'a> {
    pub planned: &'a PlannedPartition,
    pub blob: Option<ContextBlob>,
}

/// Writes the model of `parts` (in execution order) to `path`.
pub(crate) fn write(model: &Model, parts: &[Part], path: &Path, embed: EmbedMode) -> Result<()> {
    let g = &model.graph;
    let io_err = |what: &str, p: &Path, e: std::io::Error| Error::Config(format!("{what} {}: {e}", p.display()));
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "model".into());
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut nodes = vec![];
    let mut inits: Vec<ValueId> = vec![];
    let mut typed: Vec<ValueId> = vec![];
    let name = |v: &ValueId| g.value(*v).name.clone();
    for (i, part) in parts.iter().enumerate() {
        let def = &part.planned.def;
        let Some(blob) = &part.blob else {
            for &ix in &def.nodes {
                let n = g.node(ix);
                let proto = n
                    .proto
                    .as_ref()
                    .ok_or_else(|| Error::Config(format!("node '{}' has no original form to save", n.name)))?;
                nodes.push((**proto).clone());
                for v in n.inputs.iter().flatten().chain(&n.implicit_inputs) {
                    if g.initializer(*v).is_some() && !inits.contains(v) {
                        inits.push(*v);
                    }
                }
            }
            continue;
        };
        let partition_name = format!("{stem}_{}_{i}", provider_slug(&part.planned.provider));
        let content = match embed {
            EmbedMode::Embedded => blob.blob.clone(),
            EmbedMode::Files => {
                let file = format!("{partition_name}.blob");
                let at = dir.join(&file);
                std::fs::write(&at, &blob.blob).map_err(|e| io_err("cannot write the context blob", &at, e))?;
                file.into_bytes()
            }
        };
        use vinort_ir::proto::build::attr;
        let bytes_attr = |k: &str, v: Vec<u8>| onnx::AttributeProto { s: Some(v.into()), ..attr::string(k, "") };
        nodes.push(onnx::NodeProto {
            op_type: Some("EPContext".into()),
            domain: Some("com.microsoft".into()),
            name: Some(partition_name.clone()),
            input: def.inputs.iter().map(name).collect(),
            output: def.outputs.iter().map(name).collect(),
            attribute: vec![
                attr::int("main_context", 1),
                attr::int("embed_mode", if embed == EmbedMode::Embedded { 1 } else { 0 }),
                bytes_attr("ep_cache_context", content),
                attr::string("ep_sdk_version", &blob.sdk_version),
                attr::string("partition_name", &partition_name),
                attr::string("source", &blob.source),
                attr::string("notes", &blob.notes),
            ],
            ..Default::default()
        });
        typed.extend(def.outputs.iter().filter(|v| !g.outputs().contains(v)));
    }
    // A graph output that is an initializer (no node makes it) is saved as one.
    for v in g.outputs() {
        if g.initializer(*v).is_some() && !inits.contains(v) {
            inits.push(*v);
        }
    }
    let info = |v: &ValueId| -> Result<onnx::ValueInfoProto> {
        let val = g.value(*v);
        let ty = type_proto(&val.ty)
            .ok_or_else(|| Error::Config(format!("value '{}' has no type to declare in the saved model", val.name)))?;
        Ok(onnx::ValueInfoProto { name: Some(val.name.clone()), r#type: Some(ty), ..Default::default() })
    };
    let graph = onnx::GraphProto {
        name: Some(if g.name.is_empty() { "main".into() } else { g.name.clone() }),
        node: nodes,
        initializer: inits.iter().filter_map(|v| g.initializer(*v).map(|t| tensor_to_proto(&name(v), t))).collect(),
        input: g.inputs().iter().map(info).collect::<Result<_>>()?,
        output: g.outputs().iter().map(info).collect::<Result<_>>()?,
        value_info: typed.iter().map(info).collect::<Result<_>>()?,
        ..Default::default()
    };
    let mut opsets = model.opsets.clone();
    opsets.entry("com.microsoft".into()).or_insert(1);
    let m = onnx::ModelProto {
        ir_version: Some(model.ir_version.max(7)),
        opset_import: opsets
            .iter()
            .map(|(d, v)| onnx::OperatorSetIdProto { domain: Some(d.clone()), version: Some(*v) })
            .collect(),
        producer_name: Some("vinort".into()),
        producer_version: Some(env!("CARGO_PKG_VERSION").into()),
        doc_string: Some(format!(
            "compiled context of {}",
            model.path.as_ref().map_or_else(|| "a model".into(), |p| p.display().to_string())
        )),
        graph: Some(graph),
        ..Default::default()
    };
    std::fs::write(path, m.encode_to_vec()).map_err(|e| io_err("cannot write the context model", path, e))
}

/// `OpenVino(CPU)` → `openvino_cpu`, for partition and file names.
fn provider_slug(p: &str) -> String {
    p.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' })
        .collect::<String>()
        .trim_matches('_')
        .to_owned()
}
