//! # vinort
//!
//! Run ONNX models through an ordered list of execution providers — Intel OpenVINO first,
//! vinort's own Rust CPU kernels for whatever it leaves — with graph partitioning and
//! zero-copy tensor hand-off between partitions.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/mobilenetv2_tiny/model.onnx");
//! let session = vinort::Runtime::load(model)?
//!     .providers([vinort::Cpu::default().into()])
//!     .build()?;
//! println!("{}", session.plan()); // which provider runs which nodes
//! let input = vinort::Tensor::from_vec(&[1, 3, 64, 64], vec![0.5f32; 3 * 64 * 64])?;
//! let outputs = session.run([("input", input)])?;
//! let probs = outputs[0].as_tensor()?.as_slice::<f32>()?;
//! assert_eq!(probs.len(), 10);
//! # Ok(()) }
//! ```
//!
//! The session is `Send + Sync`; [`Session::run`] takes `&self` and may be called from many
//! threads at once. Inputs may be borrowed ([`TensorRef`]) so caller memory reaches the
//! kernels without a copy.
#![deny(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]

#[cfg(feature = "ndarray")]
mod array;
mod config;
mod context;
pub mod cost;
mod dims;
mod error;
mod inputs;
mod outputs;
mod partition;
mod profiling;
mod provider;
mod session;

pub use context::EmbedMode;
pub use error::{Error, RefusedNode, Result};
#[doc(hidden)]
pub use inputs::input_name as __input_name;
pub use inputs::{InputKey, Positional, RunInputs};
pub use outputs::Outputs;
pub use partition::{PartitionPlan, PlannedPartition, Refusal};
pub use provider::{Cpu, GraphOptimizationLevel, OpenVino, Provider};
pub use session::{
    Binding, Environment, Input, IoInfo, LogLevel, RunFuture, RunOptions, Runtime, Session, SessionBuilder, TensorRef,
};
pub use vinort_ir::{DType, Dim, Elem, Metadata, Model, Sequence, StopReason, Tensor, Value, ValueType};

/// OpenVINO provider options and information. Option shapes use [`openvino::ShapeDim`]
/// (fixed, bounded or dynamic) so they do not clash with the model's [`Dim`].
pub mod openvino {
    pub use vinort_openvino::cpu_kind::{CpuKind, current as cpu_kind};
    pub use vinort_openvino::options::Dim as ShapeDim;
    pub use vinort_openvino::options::{
        DEVICE_FORMS, Device, DeviceKind, DeviceProperties, InputShape, KNOWN_KEYS, Layout, LayoutSpec, LoadConfig,
        ModelPriority, OpenVinoOptions, OptionError, PhysicalDevice, Precision, RawProperty, ReshapeInput, Resolved,
        validate_property_value,
    };
    pub use vinort_openvino::provider::{OpenVinoProvider, device_property, devices, is_available};
}

/// The instruction sets the Cpu provider's kernels use: detected once, capped by
/// `VINORT_CPU_ISA` (`avx2`, `avx512`...), so one machine can run another CPU kind's kernels.
pub use vinort_cpu::isa;

/// ONNX Runtime's session config keys ([`SessionBuilder::config_entry`]) and what vinort does
/// with each.
pub mod session_config {
    pub use crate::config::{Handling, KEYS};
}

/// The pieces a custom execution provider or a tool needs: the provider interface, the graph,
/// op specs, weights' decoding and the buffer/copy counters. Everything else of the internal
/// crates stays internal.
pub mod ir {
    pub use vinort_ir::{
        Capability, CompiledPartition, CostProfile, Error, ExecutionProvider, Graph, Model, Node, NodeIndex, Origin,
        PartitionDef, Result, RunContext, Value, ValueId, ValueInfo, WholeModel, deadline, heap, limits, ops, proto,
        stats, tensor_proto,
    };
}

/// The usual imports.
pub mod prelude {
    pub use crate::{Cpu, DType, OpenVino, Provider, Runtime, Session, Tensor, TensorRef, Value};
}
