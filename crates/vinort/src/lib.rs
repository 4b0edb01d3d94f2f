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

mod error;
mod partition;
mod provider;
mod session;

pub use error::{Error, RefusedNode, Result};
pub use partition::{PartitionPlan, PlannedPartition, Refusal};
pub use provider::{Cpu, OpenVino, Provider};
pub use session::{Input, IoInfo, Outputs, Runtime, Session, SessionBuilder, TensorRef};
pub use vinort_ir::{DType, Dim, Model, Sequence, Tensor, Value, ValueType};

/// OpenVINO provider options and information.
pub mod openvino {
    pub use vinort_openvino::options::*;
    pub use vinort_openvino::provider::{devices, is_available};
}

/// The OpenVINO provider type itself, for wrapping or composing providers.
pub mod ir_openvino {
    pub use vinort_openvino::provider::{OpenVinoProvider, OvPartition};
}

/// Lower-level crates, for writing providers or tools.
pub mod ir {
    pub use vinort_ir::*;
}

/// The usual imports.
pub mod prelude {
    pub use crate::{Cpu, DType, OpenVino, Provider, Runtime, Session, Tensor, TensorRef, Value};
}
