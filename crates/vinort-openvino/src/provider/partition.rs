//! A compiled OpenVINO partition: its compiled model(s), ports and request pool.

use std::sync::Arc;

use vinort_ir::{CompiledPartition, Error, OutputBuffer, Result, RunContext, Shape, Value};

use super::handover::Slot;
use super::pool::Pool;
use super::shape_cache::PerShape;
use crate::error::to_ir_error;
use crate::ffi::{CompiledModel, PortInfo};

/// A compiled model with its ports and pool of infer requests.
pub(super) struct Compiled {
    compiled: CompiledModel,
    /// Per output, whether a caller's buffer may be bound to it (I/O binding): not for an
    /// output a forwarding op makes, which OpenVINO may leave unwritten (see `handover`).
    pub(super) bindable: Vec<bool>,
    pub(super) inputs: Vec<PortInfo>,
    pub(super) outputs: Vec<PortInfo>,
    /// Each output's shape when the port's shape is static.
    pub(super) static_outputs: Vec<Option<Shape>>,
    pool: Pool<Slot>,
}

impl Compiled {
    pub(super) fn new(
        compiled: CompiledModel,
        inputs: Vec<PortInfo>,
        outputs: Vec<PortInfo>,
        max: usize,
        bindable: Vec<bool>,
    ) -> Compiled {
        let static_outputs = outputs.iter().map(|p| p.static_shape().map(Into::into)).collect();
        Compiled { compiled, bindable, inputs, outputs, static_outputs, pool: Pool::new(max) }
    }

    /// The compiled model as exported bytes (the C API exports to a file only).
    fn export(&self) -> Result<Vec<u8>> {
        let dir =
            tempfile::tempdir().map_err(|e| Error::invalid(format!("no temporary folder to export into: {e}")))?;
        let path = dir.path().join("partition.blob");
        self.compiled.export(&path).map_err(to_ir_error)?;
        std::fs::read(&path).map_err(|e| Error::invalid(format!("reading the exported blob: {e}")))
    }

    /// Runs on a request from the pool, writing the outputs `into` holds buffers for into them
    /// where the port allows (see `Compiled::infer`).
    fn run(&self, inputs: &[&Value], into: &[Option<OutputBuffer>], ctx: &RunContext) -> Result<Vec<Value>> {
        let mut slot = self.pool.take(|| {
            let req = self.compiled.infer_request().map_err(to_ir_error)?;
            Ok::<_, Error>(Slot::new(req, self.inputs.len(), self.outputs.len()))
        })?;
        let r = self.infer(&mut slot, inputs, into, ctx);
        // Host pointers of this run's inputs stay bound in the slot; they are re-bound (see
        // `Compiled::infer`) before the slot infers again, so none is read after its run.
        self.pool.give_back(slot);
        r
    }
}

/// A compiled OpenVINO partition.
pub struct OvPartition {
    pub(super) fixed: Arc<Compiled>,
    /// OpenVINO version, device and compile properties, recorded with an exported blob.
    pub(super) compiled_with: (String, String, Vec<(String, String)>),
    pub(super) per_shape: Option<PerShape>,
    pub(super) describe: String,
    pub(super) effective: Vec<(String, String)>,
    /// Weights the partition handed OpenVINO by address (`crate::export`), or the blob it was
    /// imported from: OpenVINO may use them in place, so they live as long as the compiled
    /// model (declared last: dropped after it).
    pub(super) _weights: Vec<vinort_ir::Tensor>,
}

impl OvPartition {
    /// Properties read back from the compiled model.
    pub fn effective_properties(&self) -> &[(String, String)] {
        &self.effective
    }
}

impl CompiledPartition for OvPartition {
    fn run(&self, inputs: &[&Value], ctx: &RunContext) -> Result<Vec<Value>> {
        let c = match &self.per_shape {
            Some(ps) => {
                let shapes =
                    inputs.iter().map(|v| v.as_tensor().map(|t| t.shape().to_vec())).collect::<Result<Vec<_>>>()?;
                ps.get(shapes, self.fixed.pool.max())?
            }
            None => self.fixed.clone(),
        };
        c.run(inputs, &[], ctx)
    }

    fn run_into(&self, inputs: &[&Value], into: &[Option<OutputBuffer>], ctx: &RunContext) -> Result<Vec<Value>> {
        match &self.per_shape {
            // A per-shape compile's outputs are handed over as usual; the caller copies.
            Some(_) => self.run(inputs, ctx),
            None => self.fixed.run(inputs, into, ctx),
        }
    }

    fn describe(&self) -> String {
        self.describe.clone()
    }

    fn export_context(&self) -> Option<Result<vinort_ir::ContextBlob>> {
        if self.per_shape.is_some() {
            return Some(Err(Error::unsupported(
                "the partition compiles per input shape (disable_dynamic_shapes): there is no one compiled model to save; \
                 give the inputs static shapes (reshape_input) first",
            )));
        }
        let (version, device, props) = &self.compiled_with;
        Some(self.fixed.export().map(|blob| vinort_ir::ContextBlob {
            source: crate::context::SOURCE.into(),
            sdk_version: version.clone(),
            notes: crate::context::notes(device, props, &blob),
            blob,
        }))
    }
}
