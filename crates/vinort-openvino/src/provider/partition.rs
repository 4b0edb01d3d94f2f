//! A compiled OpenVINO partition: its compiled model(s), ports and request pool.

use std::sync::Arc;

use vinort_ir::{CompiledPartition, Error, Result, RunContext, Shape, Value};

use super::handover::Slot;
use super::pool::Pool;
use super::shape_cache::PerShape;
use crate::error::to_ir_error;
use crate::ffi::{CompiledModel, PortInfo};

/// A compiled model with its ports and pool of infer requests.
pub(super) struct Compiled {
    compiled: CompiledModel,
    pub(super) inputs: Vec<PortInfo>,
    pub(super) outputs: Vec<PortInfo>,
    /// Each output's shape when the port's shape is static.
    pub(super) static_outputs: Vec<Option<Shape>>,
    pool: Pool<Slot>,
}

impl Compiled {
    pub(super) fn new(compiled: CompiledModel, inputs: Vec<PortInfo>, outputs: Vec<PortInfo>, max: usize) -> Compiled {
        let static_outputs = outputs.iter().map(|p| p.static_shape().map(Into::into)).collect();
        Compiled { compiled, inputs, outputs, static_outputs, pool: Pool::new(max) }
    }

    /// Runs on a request from the pool.
    fn run(&self, inputs: &[&Value]) -> Result<Vec<Value>> {
        let mut slot = self.pool.take(|| {
            let req = self.compiled.infer_request().map_err(to_ir_error)?;
            Ok::<_, Error>(Slot::new(req, self.inputs.len(), self.outputs.len()))
        })?;
        let r = self.infer(&mut slot, inputs);
        // Host pointers of this run's inputs stay bound in the slot; they are re-bound (see
        // `Compiled::infer`) before the slot infers again, so none is read after its run.
        self.pool.give_back(slot);
        r
    }
}

/// A compiled OpenVINO partition.
pub struct OvPartition {
    pub(super) fixed: Arc<Compiled>,
    pub(super) per_shape: Option<PerShape>,
    pub(super) describe: String,
    pub(super) effective: Vec<(String, String)>,
    /// Weights the partition handed OpenVINO by address (`crate::export`): OpenVINO may use
    /// them in place, so they live as long as the compiled model (declared last: dropped
    /// after it).
    pub(super) _weights: Vec<vinort_ir::Tensor>,
}

impl OvPartition {
    /// Properties read back from the compiled model.
    pub fn effective_properties(&self) -> &[(String, String)] {
        &self.effective
    }
}

impl CompiledPartition for OvPartition {
    fn run(&self, inputs: &[&Value], _ctx: &RunContext) -> Result<Vec<Value>> {
        let c = match &self.per_shape {
            Some(ps) => {
                let shapes =
                    inputs.iter().map(|v| v.as_tensor().map(|t| t.shape().to_vec())).collect::<Result<Vec<_>>>()?;
                ps.get(shapes, self.fixed.pool.max())?
            }
            None => self.fixed.clone(),
        };
        c.run(inputs)
    }

    fn describe(&self) -> String {
        self.describe.clone()
    }
}
