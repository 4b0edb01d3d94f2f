//! vinort's intermediate representation and the machinery every provider shares.
//!
//! - [`Model::load`] reads an ONNX file by memory-mapping it; `raw_data` weights stay in the
//!   mapping ([`Origin::Shared`]), external data is mapped too and confined to the model's folder.
//! - [`Graph`] mirrors ONNX on a petgraph DAG: every node, attribute, opset and subgraph is
//!   kept, whether or not any provider can run it.
//! - [`ops`] is the one home of what vinort knows about each op (opsets, shape rule, traits,
//!   shared window geometry); [`infer`] refines value types with those rules.
//! - [`provider`] is the execution-provider interface; [`exec`] the step executor; [`limits`]
//!   and [`deadline`] bound the memory and the time a model can take.
//!
//! ```
//! use vinort_ir::{DType, Tensor};
//! let t = Tensor::from_slice(&[2, 2], &[1.0f32, 2.0, 3.0, 4.0])?;
//! assert_eq!(t.dtype(), DType::F32);
//! assert_eq!(t.reshaped(&[4])?.data_ptr(), t.data_ptr()); // reshapes share storage
//! # Ok::<(), vinort_ir::Error>(())
//! ```
#![deny(missing_docs)]

pub mod attr;
pub mod deadline;
pub mod dtype;
pub mod error;
pub mod exec;
pub mod functions;
pub mod graph;
pub mod heap;
pub mod infer;
pub mod limits;
pub mod load;
mod metadata;
pub mod ops;
pub mod provider;
pub mod stats;
pub mod tensor;
pub mod tensor_proto;
pub mod value;

pub use attr::{Attr, FromAttr};
pub use dtype::{DType, Elem};
pub use error::{Error, Result};
pub use graph::{Graph, Node, ValueId, ValueInfo, ValueSource};
pub use load::{Metadata, Model};
pub use petgraph::graph::NodeIndex;
pub use provider::{
    Capability, CompiledPartition, ContextBlob, CostProfile, ExecutionProvider, NodeTimes, OutputBuffer, PartitionDef,
    RunContext, StopReason, WholeModel,
};
pub use tensor::{Origin, Shape, Tensor};
pub use value::{Dim, Sequence, Value, ValueType, Values};
pub use vinort_proto as proto;
