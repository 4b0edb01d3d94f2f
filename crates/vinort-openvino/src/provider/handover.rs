//! Input binding and output hand-over for one run on one infer request.
//!
//! Inputs are bound as host-pointer tensors over the caller's buffers (no copy), re-bound only
//! when a buffer's address or shape changes. Outputs are OpenVINO's own tensors, handed to the
//! caller as the output values' storage (no copy) and reused by the request once the caller
//! has dropped them.

use std::sync::Arc;

use vinort_ir::{Error, OutputBuffer, Result, RunContext, Shape, Tensor, Value};

use super::partition::Compiled;
use crate::error::to_ir_error;
use crate::ffi::{InferRequest, OvTensor, OwnedOvBytes};

/// One bound host-pointer tensor: re-wrapped only when the address or shape changes.
struct Binding {
    ptr: usize,
    shape: Vec<usize>,
    // Our reference to the bound OpenVINO tensor object, dropped when re-bound.
    _tensor: OvTensor,
}

/// An infer request with what is bound to it between runs.
pub(super) struct Slot {
    req: InferRequest,
    /// Per output, the host-pointer tensor over a caller's buffer the last run bound (I/O
    /// binding): a later run without that binding gives the request a tensor of its own
    /// first, so it never writes the caller's memory again.
    user_bound: Vec<Option<OvTensor>>,
    inputs: Vec<Option<Binding>>,
    /// Per output, the OpenVINO tensor the last run handed to the caller, which is still the
    /// request's output tensor: reused when the caller has dropped it (see `Compiled::infer`).
    outputs: Vec<Option<Arc<OwnedOvBytes>>>,
}

impl Slot {
    pub(super) fn new(req: InferRequest, inputs: usize, outputs: usize) -> Slot {
        Slot {
            req,
            user_bound: (0..outputs).map(|_| None).collect(),
            inputs: (0..inputs).map(|_| None).collect(),
            outputs: (0..outputs).map(|_| None).collect(),
        }
    }

    /// Runs the request. When `ctx` can stop the run, the watcher thread looks at its stop
    /// flag and deadline while it runs and cancels the request (`ov_infer_request_cancel`)
    /// when it must stop; the request ends, and goes back to the pool idle. (Starting the run
    /// asynchronously and polling from the caller's thread did not stop a run on the CPU
    /// plugin, measured: the cancel has to come from another thread while `infer` runs.)
    fn infer(&mut self, ctx: &RunContext) -> Result<()> {
        if ctx.is_unbounded() {
            return self.req.infer().map_err(to_ir_error);
        }
        if let Some(r) = ctx.stop_requested() {
            return Err(Error::Stopped(r));
        }
        let watch = super::watch::Watch::start(self.req.canceller(), ctx.clone());
        let done = self.req.infer();
        match watch.finish() {
            Some(r) => {
                tracing::debug!(reason = %r, tag = ctx.tag(), "OpenVINO request cancelled");
                Err(Error::Stopped(r))
            }
            None => done.map_err(to_ir_error),
        }
    }
}

/// An output handed to the caller: OpenVINO's tensor, shared with the slot that may reuse it.
struct HandedOut(Arc<OwnedOvBytes>);

impl AsRef<[u8]> for HandedOut {
    fn as_ref(&self) -> &[u8] {
        (*self.0).as_ref()
    }
}

impl Compiled {
    pub(super) fn infer(
        &self,
        slot: &mut Slot,
        inputs: &[&Value],
        into: &[Option<OutputBuffer>],
        ctx: &RunContext,
    ) -> Result<Vec<Value>> {
        if inputs.len() != self.inputs.len() {
            return Err(Error::invalid(format!(
                "OpenVINO partition expects {} inputs, got {}",
                self.inputs.len(),
                inputs.len()
            )));
        }
        for (i, (v, port)) in inputs.iter().zip(&self.inputs).enumerate() {
            let t = v.as_tensor()?;
            if port.dtype.is_some_and(|d| d != t.dtype()) {
                return Err(Error::invalid(format!("input {i}: OpenVINO expects {:?}, got {}", port.dtype, t.dtype())));
            }
            let ptr = t.data_ptr() as usize;
            let fresh = match &slot.inputs[i] {
                Some(b) => b.ptr != ptr || b.shape != t.shape(),
                None => true,
            };
            if fresh {
                // SAFETY: the input tensor outlives this inference (the caller holds it for the
                // whole call); a later call with another buffer re-binds before inferring, so
                // OpenVINO never reads a stale address. OpenVINO does not write inputs.
                let ov = unsafe { OvTensor::from_host_ptr(t.dtype(), t.shape(), t.data_ptr()) }.map_err(to_ir_error)?;
                slot.req.set_input(i, &ov).map_err(to_ir_error)?;
                slot.inputs[i] = Some(Binding { ptr, shape: t.shape().to_vec(), _tensor: ov });
            }
        }
        // Outputs: OpenVINO writes into the output tensors of the request, and vinort hands
        // each one to the caller as the output's storage (no copy). Binding buffers of our own
        // instead is not reliable: for graphs that forward an input to an output (Max/Sum of
        // one input, Tile, Dropout, TopK indices measured on OpenVINO 2026.4.1) the CPU plugin
        // leaves a user-bound output unwritten. So the request keeps writing into a tensor we
        // handed out as long as the caller has dropped it (steady state: no buffer allocated
        // per run); only when the caller still holds the last result does the request get a
        // fresh tensor, so a later run never overwrites what the caller holds.
        // I/O binding: an output with a caller's buffer of its port's static shape and type is
        // bound to it as a host-pointer tensor, so OpenVINO writes the caller's memory. Outputs
        // a forwarding op makes are not (OpenVINO may leave a bound one unwritten, above): the
        // caller copies those. An output a caller's buffer was bound to last run and is not
        // now gets a tensor of the request's own again.
        let mut bound_now: smallvec::SmallVec<[bool; 8]> = smallvec::smallvec![false; self.outputs.len()];
        for j in 0..self.outputs.len() {
            let fits = |b: &&OutputBuffer| {
                self.bindable[j]
                    && b.len > 0
                    && self.outputs[j].dtype == Some(b.dtype)
                    && self.static_outputs[j].as_ref().is_some_and(|s| *s == b.shape)
                    && b.len == b.shape.iter().product::<usize>() * b.dtype.size()
            };
            match into.get(j).and_then(Option::as_ref).filter(fits) {
                Some(b) => {
                    // SAFETY: the buffer is writable and valid for the whole run (the
                    // `OutputBuffer` contract), and a later run binds another tensor before it
                    // infers (below), so OpenVINO never writes it after this run.
                    let t = unsafe { OvTensor::from_host_ptr(b.dtype, &b.shape, b.ptr.cast_const()) }
                        .map_err(to_ir_error)?;
                    slot.req.set_output(j, &t).map_err(to_ir_error)?;
                    slot.user_bound[j] = Some(t);
                    slot.outputs[j] = None;
                    bound_now[j] = true;
                }
                None if slot.user_bound[j].is_some() => {
                    let d = self.outputs[j].dtype.ok_or_else(|| Error::invalid("output element type unknown"))?;
                    let shape = self.static_outputs[j]
                        .as_ref()
                        .ok_or_else(|| Error::invalid("a bound output has no static shape"))?
                        .to_vec();
                    let own = OvTensor::allocate(d, &shape).map_err(to_ir_error)?;
                    vinort_ir::stats::record_alloc(shape.iter().product::<usize>() * d.size());
                    slot.req.set_output(j, &own).map_err(to_ir_error)?;
                    slot.user_bound[j] = None;
                    slot.outputs[j] = None;
                }
                None => {}
            }
        }
        for (j, held) in slot.outputs.iter_mut().enumerate() {
            let Some(arc) = held else { continue };
            // `get_mut` succeeds only when no clone of the handed-out bytes is alive, and
            // synchronizes with the thread that dropped the last one.
            if Arc::get_mut(arc).is_some() {
                continue;
            }
            let d = self.outputs[j].dtype.ok_or_else(|| Error::invalid("output element type unknown"))?;
            let shape = match &self.static_outputs[j] {
                Some(s) => s.to_vec(),
                None => arc.tensor().shape().map_err(to_ir_error)?,
            };
            let next = OvTensor::allocate(d, &shape).map_err(to_ir_error)?;
            vinort_ir::stats::record_alloc(shape.iter().product::<usize>() * d.size());
            slot.req.set_output(j, &next).map_err(to_ir_error)?;
            *held = None;
        }
        slot.infer(ctx)?;
        let mut out = Vec::with_capacity(self.outputs.len());
        for j in 0..self.outputs.len() {
            let d = self.outputs[j].dtype.ok_or_else(|| Error::invalid("output element type unknown"))?;
            let ovt = slot.req.output(j).map_err(to_ir_error)?;
            let (ptr, len) = ovt.bytes().map_err(to_ir_error)?;
            if bound_now[j]
                && let Some(b) = into.get(j).and_then(Option::as_ref)
            {
                if ptr == b.ptr.cast_const() && len == b.len {
                    // SAFETY: the caller's buffer of `len` bytes, valid for the run; the session
                    // reads it as the output and never hands this value out.
                    let t = unsafe {
                        Tensor::borrow_bytes(d, &b.shape, std::slice::from_raw_parts(b.ptr.cast_const(), b.len))
                    }?;
                    out.push(Value::Tensor(t));
                    continue;
                }
                // OpenVINO put a tensor of its own in place of the bound one: handed over as
                // usual, and the caller copies it.
                slot.user_bound[j] = None;
            }
            let shape: Shape = match &self.static_outputs[j] {
                Some(s) => s.clone(),
                // The C API cannot describe a rank-0 shape (`ov_tensor_get_shape` fails on
                // scalars); the port says when an output is a scalar.
                None => match ovt.shape() {
                    Ok(s) => s.into(),
                    Err(_) if self.outputs[j].dims.as_deref() == Some(&[]) => Shape::new(),
                    Err(e) => return Err(to_ir_error(e)),
                },
            };
            let shared = match &slot.outputs[j] {
                // The same tensor as last run, written again: hand it out again.
                Some(a) if (**a).as_ref().as_ptr() == ptr && (**a).as_ref().len() == len && len > 0 => a.clone(),
                _ => {
                    let a = Arc::new(OwnedOvBytes::new(ovt).map_err(to_ir_error)?);
                    slot.outputs[j] = Some(a.clone());
                    a
                }
            };
            let bytes = bytes::Bytes::from_owner(HandedOut(shared));
            // OpenVINO's allocations are aligned; `to_aligned` is a no-op then and a safety
            // net otherwise.
            out.push(Value::Tensor(Tensor::from_shared_bytes(d, &shape, bytes)?.to_aligned()));
        }
        Ok(out)
    }
}
