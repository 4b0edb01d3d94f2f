//! Loading ONNX models into the IR.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use petgraph::graph::{DiGraph, NodeIndex};
use prost::Message;
use vinort_proto::onnx;

use crate::attr::Attr;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::{Graph, Node, ValueId, ValueInfo, ValueSource};
pub use crate::metadata::Metadata;
use crate::tensor::Tensor;
use crate::tensor_proto::{ExternalData, map_file, release_pages_of, tensor_from_proto};
use crate::value::{Dim, ValueType};

/// Oldest and newest IR versions this loader reads.
pub const IR_VERSIONS: std::ops::RangeInclusive<i64> = 3..=14;

/// Deepest nesting of subgraphs accepted (hostile models could recurse without end).
const MAX_DEPTH: usize = 64;

/// A loaded ONNX model.
#[derive(Clone, Debug)]
pub struct Model {
    /// IR version the file declares.
    pub ir_version: i64,
    /// Opset version per domain ("" is the default ONNX domain).
    pub opsets: BTreeMap<String, i64>,
    /// `producer_name producer_version`.
    pub producer: String,
    /// The main graph.
    pub graph: Graph,
    /// The file it came from, when loaded from a path.
    pub path: Option<PathBuf>,
    /// The bytes of the model file (the mapping itself when loaded from a path).
    pub bytes: Bytes,
    /// What the file says about itself (ONNX Runtime's `ModelMetadata`).
    pub metadata: Metadata,
    /// The files weights are mapped from (the model file itself and its external data files),
    /// as canonical paths with their mappings.
    pub weight_files: Vec<(PathBuf, Bytes)>,
}

impl Model {
    /// Loads a model from a file, memory-mapping it: weights in `raw_data` stay in the mapping.
    pub fn load(path: impl AsRef<Path>) -> Result<Model> {
        let path = path.as_ref();
        let bytes = map_file(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
        let dir = path.parent().map(|p| if p.as_os_str().is_empty() { PathBuf::from(".") } else { p.to_owned() });
        let mut m = Model::from_bytes_in(bytes.clone(), dir)?;
        m.path = Some(path.to_owned());
        if let Ok(canon) = path.canonicalize() {
            m.weight_files.push((canon, bytes));
        }
        Ok(m)
    }

    /// Drops the pages of the mapped model file and external-data files that this process has
    /// touched from its resident memory ([`release_pages_of`]): once a session is
    /// built its providers hold their own forms of the weights they transformed, and what they
    /// still read from the mapping faults back in on first use.
    pub fn release_weight_pages(&self) {
        for (_, bytes) in &self.weight_files {
            release_pages_of(bytes);
        }
    }

    /// Loads a model from bytes. External data is refused (there is no folder to find it in);
    /// use [`Model::from_bytes_in`] to give one.
    pub fn from_bytes(bytes: impl Into<Bytes>) -> Result<Model> {
        Model::from_bytes_in(bytes.into(), None)
    }

    /// Loads a model from bytes, resolving external data relative to `dir`.
    pub fn from_bytes_in(bytes: Bytes, dir: Option<PathBuf>) -> Result<Model> {
        let proto = onnx::ModelProto::decode(bytes.clone()).map_err(|e| Error::decode(&e))?;
        let ir_version = proto.ir_version.unwrap_or(0);
        if !IR_VERSIONS.contains(&ir_version) {
            return Err(Error::InvalidModel(format!(
                "IR version {ir_version} is not supported (this build reads {} to {})",
                IR_VERSIONS.start(),
                IR_VERSIONS.end()
            )));
        }
        let mut opsets = BTreeMap::new();
        for o in &proto.opset_import {
            let d = o.domain.clone().unwrap_or_default();
            let d = if d == "ai.onnx" { String::new() } else { d };
            opsets.insert(d, o.version.unwrap_or(1));
        }
        if opsets.is_empty() {
            return Err(Error::InvalidModel("the model imports no opset".into()));
        }
        let inlined = crate::functions::inline(&proto, &mut opsets)?;
        check_opsets(&opsets)?;
        let gp = match &inlined {
            Some(g) => g,
            None => proto.graph.as_ref().ok_or_else(|| Error::InvalidModel("the model has no graph".into()))?,
        };
        let ext = ExternalData::new(dir);
        let mut builder =
            Builder { opsets: Arc::new(opsets.clone()), ext: &ext, old_ir: ir_version < 4, node_counter: 0 };
        let graph = builder.graph(gp, &[], 0)?;
        let producer = format!(
            "{} {}",
            proto.producer_name.as_deref().unwrap_or(""),
            proto.producer_version.as_deref().unwrap_or("")
        )
        .trim()
        .to_owned();
        let metadata = Metadata::from_proto(&proto);
        let weight_files = ext.into_files();
        let mut model = Model { ir_version, opsets, producer, graph, path: None, bytes, metadata, weight_files };
        crate::infer::infer_graph(&mut model.graph);
        Ok(model)
    }
}

/// The newest version any domain other than the default one may import: far beyond every
/// real one (`ai.onnx.ml` is at 5), and small enough that nothing downstream (OpenVINO's ONNX
/// reader looked for ops version by version, and spun for minutes on 2^40) counts to it.
const MAX_OTHER_OPSET: i64 = 1000;

/// Refuses opset versions no ONNX release has: negative ones (or 0 for the default domain), past the newest default-domain opset
/// vinort knows (like ONNX Runtime, which refuses opsets newer than its own), or absurd.
fn check_opsets(opsets: &BTreeMap<String, i64>) -> Result<()> {
    for (domain, &v) in opsets {
        // Custom domains sometimes import version 0; the default domain starts at 1.
        let (oldest, newest) = if domain.is_empty() { (1, crate::ops::MAX_OPSET) } else { (0, MAX_OTHER_OPSET) };
        if !(oldest..=newest).contains(&v) {
            let name = if domain.is_empty() { "ai.onnx (the default domain)" } else { domain };
            return Err(Error::InvalidModel(format!(
                "opset import of {name} has version {v}; versions {oldest} to {newest} are known"
            )));
        }
    }
    Ok(())
}

struct Builder<'a> {
    opsets: Arc<BTreeMap<String, i64>>,
    ext: &'a ExternalData,
    old_ir: bool,
    node_counter: usize,
}

/// Converts an ONNX `TypeProto` to a value type.
pub fn value_type_from_proto(t: &onnx::TypeProto) -> ValueType {
    use onnx::type_proto::Value as V;
    let dtype = |c: Option<i32>| c.and_then(DType::from_onnx);
    match &t.value {
        Some(V::TensorType(tt)) => {
            let Some(d) = dtype(tt.elem_type) else {
                return ValueType::Unknown;
            };
            let shape = tt.shape.as_ref().map(|s| {
                s.dim
                    .iter()
                    .map(|d| match &d.value {
                        Some(onnx::tensor_shape_proto::dimension::Value::DimValue(v)) if *v >= 0 => {
                            Dim::Fixed(*v as usize)
                        }
                        Some(onnx::tensor_shape_proto::dimension::Value::DimParam(p)) if !p.is_empty() => {
                            Dim::Symbol(p.clone())
                        }
                        _ => Dim::Unknown,
                    })
                    .collect()
            });
            ValueType::Tensor(d, shape)
        }
        Some(V::SequenceType(s)) => ValueType::Sequence(Box::new(
            s.elem_type.as_deref().map(value_type_from_proto).unwrap_or(ValueType::Unknown),
        )),
        Some(V::OptionalType(o)) => ValueType::Optional(Box::new(
            o.elem_type.as_deref().map(value_type_from_proto).unwrap_or(ValueType::Unknown),
        )),
        Some(V::MapType(m)) => match dtype(m.key_type) {
            Some(k) => ValueType::Map(
                k,
                Box::new(m.value_type.as_deref().map(value_type_from_proto).unwrap_or(ValueType::Unknown)),
            ),
            None => ValueType::Unknown,
        },
        _ => ValueType::Unknown,
    }
}

struct Scope<'s> {
    names: &'s HashSet<String>,
}

impl Builder<'_> {
    fn graph(&mut self, gp: &onnx::GraphProto, outer: &[Scope<'_>], depth: usize) -> Result<Graph> {
        if depth > MAX_DEPTH {
            return Err(Error::InvalidModel(format!("subgraphs nest deeper than {MAX_DEPTH} levels")));
        }
        let mut g =
            Graph { name: gp.name.clone().unwrap_or_default(), opsets: self.opsets.clone(), ..Default::default() };
        let add = |g: &mut Graph, name: &str, ty: ValueType, source: ValueSource| -> ValueId {
            let id = ValueId(g.values.len() as u32);
            g.values.push(ValueInfo { name: name.to_owned(), ty, source });
            g.by_name.insert(name.to_owned(), id);
            id
        };

        // Initializers (dense and sparse).
        for t in &gp.initializer {
            let name = t.name.clone().unwrap_or_default();
            if name.is_empty() {
                return Err(Error::InvalidModel("an initializer has no name".into()));
            }
            let tensor = tensor_from_proto(t, self.ext)?;
            let ty = ValueType::tensor(tensor.dtype(), tensor.shape());
            add(&mut g, &name, ty, ValueSource::Initializer(tensor));
        }
        for s in &gp.sparse_initializer {
            let (name, tensor) = self.sparse(s)?;
            let ty = ValueType::tensor(tensor.dtype(), tensor.shape());
            add(&mut g, &name, ty, ValueSource::Initializer(tensor));
        }
        // Inputs. An input that is also an initializer is, from IR 4 on, an overridable
        // initializer: a runtime input whose default is the initializer (ONNX Runtime's
        // semantics). Before IR 4 every initializer had to be listed as an input too, so there
        // it stays a constant.
        for vi in &gp.input {
            let name = vi.name.clone().unwrap_or_default();
            let ty = vi.r#type.as_ref().map(value_type_from_proto).unwrap_or(ValueType::Unknown);
            if let Some(&id) = g.by_name.get(&name) {
                let pos = g.inputs.len();
                let value = &mut g.values[id.index()];
                let ValueSource::Initializer(default) = &value.source else {
                    return Err(Error::InvalidModel(format!("graph input '{name}' is declared twice")));
                };
                if self.old_ir || depth > 0 {
                    continue;
                }
                // Shares the initializer's storage (a mapped weight is not copied).
                let default = default.clone();
                value.source = ValueSource::Input(pos);
                // The declared type, when it agrees with the default's element type, keeps the
                // symbolic dims a feed may vary; otherwise the default's own type.
                if ty.tensor_dtype() == Some(default.dtype()) {
                    value.ty = ty;
                }
                g.defaults.insert(id, default);
                g.inputs.push(id);
                continue;
            }
            let pos = g.inputs.len();
            let id = add(&mut g, &name, ty, ValueSource::Input(pos));
            g.inputs.push(id);
        }
        // Pass 1: every node output, so inputs may refer to any of them.
        let mut pending = Vec::with_capacity(gp.node.len());
        for np in &gp.node {
            let op_type = np.op_type.clone().unwrap_or_default();
            let mut domain = np.domain.clone().unwrap_or_default();
            if domain == "ai.onnx" {
                domain.clear();
            }
            let name = match np.name.as_deref() {
                Some(n) if !n.is_empty() => n.to_owned(),
                _ => format!("{op_type}_{}", self.node_counter),
            };
            self.node_counter += 1;
            let opset = self.opsets.get(&domain).copied().unwrap_or(0);
            let node = Node {
                name,
                op_type,
                domain,
                opset,
                inputs: vec![],
                outputs: vec![],
                implicit_inputs: vec![],
                attrs: vec![],
                proto: Some(Arc::new(np.clone())),
            };
            let ix = g.dag.add_node(node);
            for (port, out) in np.output.iter().enumerate() {
                if out.is_empty() {
                    g.dag[ix].outputs.push(None);
                    continue;
                }
                if let Some(prev) = g.by_name.get(out) {
                    let what = match &g.values[prev.index()].source {
                        ValueSource::Node { node, .. } => format!("node '{}'", g.dag[*node].name),
                        ValueSource::Input(_) => "a graph input".into(),
                        ValueSource::Initializer(_) => "an initializer".into(),
                        ValueSource::OuterScope => "an outer scope".into(),
                    };
                    return Err(g.dag[ix].error(format!("output '{out}' is already produced by {what}")));
                }
                let id = add(&mut g, out, ValueType::Unknown, ValueSource::Node { node: ix, port });
                g.dag[ix].outputs.push(Some(id));
            }
            pending.push((ix, np));
        }
        // Declared types of intermediates.
        for vi in &gp.value_info {
            if let (Some(name), Some(t)) = (vi.name.as_ref(), vi.r#type.as_ref())
                && let Some(id) = g.by_name.get(name)
            {
                g.values[id.index()].ty = value_type_from_proto(t);
            }
        }
        // Pass 2: attributes (with subgraphs) and inputs.
        let local: HashSet<String> = g.by_name.keys().cloned().collect();
        let mut scopes: Vec<Scope<'_>> = vec![Scope { names: &local }];
        scopes.extend(outer.iter().map(|s| Scope { names: s.names }));
        for (ix, np) in pending {
            let mut attrs = Vec::with_capacity(np.attribute.len());
            let mut implicit: Vec<String> = vec![];
            for a in &np.attribute {
                // An EPContext node's blob is bytes, not text, and its reader takes it from the
                // node's proto: decoding it (100 MB for ResNet-50) took a second.
                if np.op_type.as_deref() == Some("EPContext") && a.name.as_deref() == Some("ep_cache_context") {
                    attrs.push((a.name.clone().unwrap_or_default(), Attr::String(String::new())));
                    continue;
                }
                let attr = self.attr(a, &scopes, depth, &mut implicit).map_err(|e| match e {
                    Error::Node { .. } => e,
                    other => g.dag[ix].error(format!("attribute '{}': {other}", a.name.as_deref().unwrap_or(""))),
                })?;
                attrs.push((a.name.clone().unwrap_or_default(), attr));
            }
            g.dag[ix].attrs = attrs;
            let mut inputs = Vec::with_capacity(np.input.len());
            for name in &np.input {
                if name.is_empty() {
                    inputs.push(None);
                    continue;
                }
                let id = self.resolve(&mut g, name, outer).map_err(|_| {
                    g.dag[ix]
                        .error(format!("input '{name}' is produced by no node and is no graph input or initializer"))
                })?;
                inputs.push(Some(id));
            }
            g.dag[ix].inputs = inputs;
            implicit.sort();
            implicit.dedup();
            let mut imp = Vec::with_capacity(implicit.len());
            for name in &implicit {
                let id = self.resolve(&mut g, name, outer).map_err(|_| {
                    g.dag[ix].error(format!("a subgraph reads '{name}', which no enclosing scope defines"))
                })?;
                imp.push(id);
            }
            g.dag[ix].implicit_inputs = imp;
        }
        // Outputs.
        for vi in &gp.output {
            let name = vi.name.clone().unwrap_or_default();
            let id = self
                .resolve(&mut g, &name, outer)
                .map_err(|_| Error::InvalidModel(format!("graph output '{name}' is produced by nothing")))?;
            if let Some(t) = vi.r#type.as_ref() {
                let declared = value_type_from_proto(t);
                if g.values[id.index()].ty == ValueType::Unknown {
                    g.values[id.index()].ty = declared;
                }
            }
            g.outputs.push(id);
        }
        // Edges and topological order.
        let mut edges = vec![];
        for ix in g.dag.node_indices() {
            let n = &g.dag[ix];
            for v in n.inputs.iter().flatten().chain(n.implicit_inputs.iter()) {
                if let ValueSource::Node { node, .. } = g.values[v.index()].source {
                    edges.push((node, ix, *v));
                }
            }
        }
        for (a, b, v) in edges {
            g.dag.add_edge(a, b, v);
        }
        g.order = topo_sort(&g.dag)?;
        Ok(g)
    }

    /// Finds a name in this graph, else in an enclosing scope (recording it as an outer
    /// reference of this graph).
    fn resolve(&self, g: &mut Graph, name: &str, outer: &[Scope<'_>]) -> Result<ValueId, ()> {
        if let Some(id) = g.by_name.get(name) {
            return Ok(*id);
        }
        if outer.iter().any(|s| s.names.contains(name)) {
            let id = ValueId(g.values.len() as u32);
            g.values.push(ValueInfo { name: name.to_owned(), ty: ValueType::Unknown, source: ValueSource::OuterScope });
            g.by_name.insert(name.to_owned(), id);
            g.outer.push(id);
            return Ok(id);
        }
        Err(())
    }

    fn sparse(&self, s: &onnx::SparseTensorProto) -> Result<(String, Tensor)> {
        let values =
            s.values.as_ref().ok_or_else(|| Error::InvalidModel("a sparse initializer has no values".into()))?;
        let name = values.name.clone().unwrap_or_default();
        let terr = |m: String| Error::Tensor { tensor: name.clone(), message: m };
        let vals = tensor_from_proto(values, self.ext)?;
        let idx = match &s.indices {
            Some(i) => tensor_from_proto(i, self.ext)?.to_i64_vec()?,
            None => return Err(terr("sparse tensor has no indices".into())),
        };
        let dims: Vec<usize> = s
            .dims
            .iter()
            .map(|d| usize::try_from(*d).map_err(|_| terr(format!("negative dim {d}"))))
            .collect::<Result<_>>()?;
        let n: usize =
            dims.iter().try_fold(1usize, |a, d| a.checked_mul(*d)).ok_or_else(|| terr("too many elements".into()))?;
        let nnz = vals.len();
        // Indices are either [nnz] linear or [nnz, rank] coordinates.
        let linear: Vec<usize> = if idx.len() == nnz {
            idx.iter().map(|i| *i as usize).collect()
        } else if idx.len() == nnz * dims.len() {
            let strides = crate::tensor::strides_of(&dims);
            idx.chunks(dims.len().max(1)).map(|c| c.iter().zip(&strides).map(|(i, s)| *i as usize * s).sum()).collect()
        } else {
            return Err(terr(format!("{} indices do not fit {nnz} values of rank {}", idx.len(), dims.len())));
        };
        if let Some(bad) = linear.iter().find(|i| **i >= n) {
            return Err(terr(format!("sparse index {bad} is out of range for shape {dims:?}")));
        }
        let esize = vals.dtype().size();
        let mut dense = Tensor::zeros(vals.dtype(), &dims);
        if esize > 0 {
            let src = vals.to_aligned();
            let mut buf = crate::tensor::AlignedBuf::zeroed(n * esize);
            for (k, li) in linear.iter().enumerate() {
                buf.as_mut_slice()[li * esize..(li + 1) * esize]
                    .copy_from_slice(&src.as_bytes()[k * esize..(k + 1) * esize]);
            }
            dense = Tensor::from_shared_bytes(vals.dtype(), &dims, Bytes::from_owner(buf))?;
        }
        Ok((name, dense))
    }

    fn attr(
        &mut self,
        a: &onnx::AttributeProto,
        scopes: &[Scope<'_>],
        depth: usize,
        implicit: &mut Vec<String>,
    ) -> Result<Attr> {
        use onnx::attribute_proto::AttributeType as T;
        let kind = a.r#type.and_then(|t| T::try_from(t).ok()).unwrap_or_else(|| {
            // Files from before IR 2 leave `type` unset: infer it from the populated field.
            if a.f.is_some() {
                T::Float
            } else if a.i.is_some() {
                T::Int
            } else if a.s.is_some() {
                T::String
            } else if a.t.is_some() {
                T::Tensor
            } else if a.g.is_some() {
                T::Graph
            } else if !a.floats.is_empty() {
                T::Floats
            } else if !a.ints.is_empty() {
                T::Ints
            } else if !a.strings.is_empty() {
                T::Strings
            } else if !a.tensors.is_empty() {
                T::Tensors
            } else if !a.graphs.is_empty() {
                T::Graphs
            } else {
                T::Undefined
            }
        });
        let s = |b: &Bytes| String::from_utf8_lossy(b).into_owned();
        let mut sub = |this: &mut Self, gp: &onnx::GraphProto| -> Result<Arc<Graph>> {
            let g = this.graph(gp, scopes, depth + 1)?;
            for v in &g.outer {
                implicit.push(g.values[v.index()].name.clone());
            }
            Ok(Arc::new(g))
        };
        Ok(match kind {
            T::Float => Attr::Float(a.f.unwrap_or(0.0)),
            T::Int => Attr::Int(a.i.unwrap_or(0)),
            T::String => Attr::String(a.s.as_ref().map(s).unwrap_or_default()),
            T::Tensor => Attr::Tensor(tensor_from_proto(
                a.t.as_ref().ok_or_else(|| Error::InvalidModel("tensor attribute without a tensor".into()))?,
                self.ext,
            )?),
            T::SparseTensor => Attr::Tensor(
                self.sparse(
                    a.sparse_tensor
                        .as_ref()
                        .ok_or_else(|| Error::InvalidModel("sparse_tensor attribute without a value".into()))?,
                )?
                .1,
            ),
            T::Graph => Attr::Graph(sub(
                self,
                a.g.as_ref().ok_or_else(|| Error::InvalidModel("graph attribute without a graph".into()))?,
            )?),
            T::Floats => Attr::Floats(a.floats.clone()),
            T::Ints => Attr::Ints(a.ints.clone()),
            T::Strings => Attr::Strings(a.strings.iter().map(s).collect()),
            T::Tensors => {
                Attr::Tensors(a.tensors.iter().map(|t| tensor_from_proto(t, self.ext)).collect::<Result<_>>()?)
            }
            T::SparseTensors => {
                Attr::Tensors(a.sparse_tensors.iter().map(|t| self.sparse(t).map(|x| x.1)).collect::<Result<_>>()?)
            }
            T::Graphs => {
                let mut v = vec![];
                for gp in &a.graphs {
                    v.push(sub(self, gp)?);
                }
                Attr::Graphs(v)
            }
            T::TypeProto => Attr::Type(a.tp.as_ref().map(value_type_from_proto).unwrap_or(ValueType::Unknown)),
            T::TypeProtos => Attr::Types(a.type_protos.iter().map(value_type_from_proto).collect()),
            T::Undefined => {
                return Err(Error::InvalidModel("attribute has no type and no value".into()));
            }
        })
    }
}

/// Topological order, or an error naming a node on a cycle.
pub(crate) fn topo_sort(dag: &DiGraph<Node, ValueId>) -> Result<Vec<NodeIndex>> {
    // Kahn's algorithm keeping file order among ready nodes, so the order is stable and
    // matches the model author's where the file was already sorted.
    let mut indeg: Vec<usize> =
        dag.node_indices().map(|n| dag.neighbors_directed(n, petgraph::Incoming).count()).collect();
    let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> =
        indeg.iter().enumerate().filter(|(_, d)| **d == 0).map(|(i, _)| std::cmp::Reverse(i)).collect();
    let mut order = Vec::with_capacity(dag.node_count());
    while let Some(std::cmp::Reverse(i)) = ready.pop() {
        let ix = NodeIndex::new(i);
        order.push(ix);
        for e in dag.edges_directed(ix, petgraph::Outgoing) {
            use petgraph::visit::EdgeRef;
            let t = e.target().index();
            indeg[t] -= 1;
            if indeg[t] == 0 {
                ready.push(std::cmp::Reverse(t));
            }
        }
    }
    if order.len() != dag.node_count() {
        let stuck = indeg.iter().position(|d| *d > 0).unwrap_or(0);
        return Err(dag[NodeIndex::new(stuck)].error("is part of a cycle (its inputs depend on its own outputs)"));
    }
    Ok(order)
}

/// Names of ops in a graph and its subgraphs, for messages.
pub fn op_histogram(g: &Graph) -> HashMap<String, usize> {
    let mut h = HashMap::new();
    for ix in g.node_indices() {
        *h.entry(g.node(ix).qualified_op()).or_insert(0) += 1;
        for (_, sg) in g.node(ix).subgraphs() {
            for (k, v) in op_histogram(sg) {
                *h.entry(k).or_insert(0) += v;
            }
        }
    }
    h
}
