//! What a model file says about itself (ONNX Runtime's `ModelMetadata`).

use std::collections::BTreeMap;

use vinort_proto::onnx;

/// A model's descriptive fields and `metadata_props`, as ONNX Runtime's `ModelMetadata`
/// exposes them. Empty strings where the file has nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Metadata {
    /// `producer_name`.
    pub producer_name: String,
    /// `producer_version`.
    pub producer_version: String,
    /// `domain` (the model's namespace, e.g. `com.example`).
    pub domain: String,
    /// `model_version`.
    pub version: i64,
    /// The model's `doc_string`.
    pub description: String,
    /// The main graph's `doc_string`.
    pub graph_description: String,
    /// The main graph's name.
    pub graph_name: String,
    /// `metadata_props` (a key given twice keeps its last value, as ONNX Runtime does).
    pub custom: BTreeMap<String, String>,
}

impl Metadata {
    pub(crate) fn from_proto(p: &onnx::ModelProto) -> Metadata {
        let text = |s: &Option<String>| s.clone().unwrap_or_default();
        let graph = p.graph.as_ref();
        Metadata {
            producer_name: text(&p.producer_name),
            producer_version: text(&p.producer_version),
            domain: text(&p.domain),
            version: p.model_version.unwrap_or(0),
            description: text(&p.doc_string),
            graph_description: graph.map(|g| text(&g.doc_string)).unwrap_or_default(),
            graph_name: graph.map(|g| text(&g.name)).unwrap_or_default(),
            custom: p.metadata_props.iter().map(|e| (text(&e.key), text(&e.value))).collect(),
        }
    }
}
