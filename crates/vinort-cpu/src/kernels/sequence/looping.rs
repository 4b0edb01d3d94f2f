//! Ops that run a subgraph repeatedly:
//! [Loop](https://onnx.ai/onnx/operators/onnx__Loop.html) (opsets 1 on),
//! [Scan](https://onnx.ai/onnx/operators/onnx__Scan.html) (opset 8 with its batch axis and
//! `sequence_lens`, opsets 9 on with per-input axes and directions) and
//! [SequenceMap](https://onnx.ai/onnx/operators/onnx__SequenceMap.html) (opset 17 on).
//!
//! Bodies are compiled into Cpu plans when the node is compiled and run with their formal
//! inputs followed by the outer-scope values they read (see [`Body`] in `control.rs`).

use vinort_ir::Values;
use vinort_ir::{DType, Error, Result, RunContext, Sequence, Tensor, Value, ValueType};

use super::data;
use crate::kernel::{Kernel, MAX_OPSET, NodeInfo, Registry, norm_axis, tensor_in};
use crate::kernels::control::Body;

pub(super) fn register(r: &mut Registry) {
    r.op("", "Loop", loop_factory);
    r.add("", "Scan", 8..=8, scan8_factory);
    r.add("", "Scan", 9..=MAX_OPSET, scan_factory);
    r.op("", "SequenceMap", sequence_map_factory);
}

impl Body {
    /// An empty scan output for body output `j`: a zero-length axis inserted at `axis` of the
    /// declared element shape (or a 1-D empty tensor when the shape is unknown).
    fn empty_scan_output(&self, j: usize, node_type: Option<&ValueType>, axis: usize) -> Tensor {
        let (dtype, shape) = self.out_types.get(j).cloned().unwrap_or((None, None));
        let dtype = dtype.or_else(|| node_type.and_then(ValueType::tensor_dtype)).unwrap_or(DType::F32);
        let shape = match shape {
            Some(mut s) if axis <= s.len() => {
                s.insert(axis, 0);
                s
            }
            _ => vec![0],
        };
        Tensor::zeros(dtype, &shape)
    }
}

/// One boolean element.
fn flag(v: &Value, what: &str) -> Result<bool> {
    let t = v.as_tensor()?;
    let vals = t.to_i64_vec()?;
    match vals.as_slice() {
        [c] => Ok(*c != 0),
        other => Err(Error::invalid(format!("{what} must hold one element, it has {}", other.len()))),
    }
}

// ------------------------------------------------------------------------------------ Loop

struct Loop {
    body: Body,
    /// Number of explicit inputs of the node (M, cond, initial values).
    explicit: usize,
    /// Number of loop-carried values.
    carried: usize,
    /// Output types of the node as inference knows them.
    outputs: Vec<ValueType>,
}

fn loop_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let body = Body::compile(info, "body")?;
    let n = info.node;
    if body.plan.num_inputs < 2 || body.plan.num_outputs < body.plan.num_inputs - 1 {
        return Err(n.error(format!(
            "the body has {} inputs and {} outputs; it needs (iteration, cond, carried...) in and (cond, carried..., scan...) out",
            body.plan.num_inputs, body.plan.num_outputs
        )));
    }
    let carried = body.plan.num_inputs - 2;
    let explicit = n.inputs.len();
    if explicit.max(2) - 2 != carried {
        return Err(
            n.error(format!("the node gives {} loop-carried values, the body takes {carried}", explicit.max(2) - 2))
        );
    }
    Ok(Box::new(Loop { body, explicit, carried, outputs: info.outputs.clone() }))
}

impl Kernel for Loop {
    fn run(&self, inputs: &[Option<&Value>], ctx: &RunContext) -> Result<Values> {
        let get = |i: usize| inputs.get(i).copied().flatten();
        let max_trip = match get(0) {
            Some(m) => match m.as_tensor()?.to_i64_vec()?.as_slice() {
                [m] => Some(*m),
                other => return Err(Error::invalid(format!("M must hold one element, it has {}", other.len()))),
            },
            None => None,
        };
        let mut cond = match get(1) {
            Some(c) => flag(c, "cond")?,
            None => true,
        };
        let mut state: Vec<Value> = Vec::with_capacity(self.carried);
        for i in 0..self.carried {
            state.push(get(2 + i).ok_or_else(|| Error::invalid(format!("loop-carried input {i} is missing")))?.clone());
        }
        let outer = inputs.get(self.explicit..).unwrap_or(&[]);
        let n_scan = self.body.plan.num_outputs - 1 - self.carried;
        let mut scans: Vec<Vec<Tensor>> = vec![vec![]; n_scan];
        let mut it: i64 = 0;
        while cond && max_trip.is_none_or(|m| it < m) {
            // Checked per iteration, not only per body step: an empty body still stops.
            ctx.check()?;
            let iter_v = Value::Tensor(Tensor::scalar(it));
            let cond_v = Value::Tensor(Tensor::scalar(cond));
            let mut formal: Vec<&Value> = Vec::with_capacity(2 + self.carried);
            formal.push(&iter_v);
            formal.push(&cond_v);
            formal.extend(state.iter());
            let mut out = self.body.run(&formal, outer, ctx)?.into_iter();
            cond = flag(&out.next().ok_or_else(|| Error::invalid("the body returned no condition"))?, "body cond")?;
            state = out.by_ref().take(self.carried).collect();
            for (k, v) in out.enumerate() {
                scans[k].push(v.into_tensor().map_err(|e| Error::invalid(format!("scan output {k}: {e}")))?);
            }
            it += 1;
        }
        let mut result = state;
        for (k, items) in scans.into_iter().enumerate() {
            let t = if items.is_empty() {
                self.body.empty_scan_output(1 + self.carried + k, self.outputs.get(self.carried + k), 0)
            } else {
                let refs: Vec<&Tensor> = items.iter().collect();
                data::stack(&refs, 0).map_err(|e| Error::invalid(format!("scan output {k}: {e}")))?
            };
            result.push(Value::Tensor(t));
        }
        Ok(result.into())
    }
}

// ------------------------------------------------------------------------------------ Scan

struct Scan {
    body: Body,
    /// Number of explicit inputs (for opset 8 including `sequence_lens`).
    explicit: usize,
    /// Number of state variables.
    states: usize,
    /// Number of scan inputs.
    scan_inputs: usize,
    /// Per scan input: the axis (possibly negative) and whether it runs backwards.
    in_axes: Vec<i64>,
    in_reverse: Vec<bool>,
    /// Per scan output: the axis (possibly negative) and whether it is built backwards.
    out_axes: Vec<i64>,
    out_reverse: Vec<bool>,
    outputs: Vec<ValueType>,
}

/// Reads an ints attribute of `n` entries (default `default`).
fn per_item(info: &NodeInfo<'_>, name: &str, n: usize, default: i64) -> Result<Vec<i64>> {
    match info.node.attr::<Vec<i64>>(name)? {
        Some(v) if v.len() == n => Ok(v),
        Some(v) => Err(info.node.error(format!("{name} has {} entries, {n} expected", v.len()))),
        None => Ok(vec![default; n]),
    }
}

fn scan_common(info: &NodeInfo<'_>, skip: usize) -> Result<(Body, usize, usize, usize)> {
    let n = info.node;
    let body = Body::compile(info, "body")?;
    let m = n.req_attr::<i64>("num_scan_inputs")?;
    let explicit = n.inputs.len();
    let given = explicit.saturating_sub(skip);
    if m < 1 || m as usize > given {
        return Err(n.error(format!("num_scan_inputs {m} does not fit {given} inputs")));
    }
    let m = m as usize;
    let states = given - m;
    if body.plan.num_inputs != states + m || body.plan.num_outputs < states {
        return Err(n.error(format!(
            "the body has {} inputs and {} outputs for {states} states and {m} scan inputs",
            body.plan.num_inputs, body.plan.num_outputs
        )));
    }
    Ok((body, explicit, states, m))
}

fn scan_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let (body, explicit, states, m) = scan_common(info, 0)?;
    let k = body.plan.num_outputs - states;
    let in_axes = per_item(info, "scan_input_axes", m, 0)?;
    let in_reverse = per_item(info, "scan_input_directions", m, 0)?.iter().map(|d| *d != 0).collect();
    let out_axes = per_item(info, "scan_output_axes", k, 0)?;
    let out_reverse = per_item(info, "scan_output_directions", k, 0)?.iter().map(|d| *d != 0).collect();
    Ok(Box::new(Scan {
        body,
        explicit,
        states,
        scan_inputs: m,
        in_axes,
        in_reverse,
        out_axes,
        out_reverse,
        outputs: info.outputs.clone(),
    }))
}

impl Scan {
    /// Runs the recurrence over `len` steps. `state` holds the initial states; `inputs` the
    /// scan inputs with their (normalised) axes. Returns final states and per-output elements
    /// in step order.
    fn recur(
        &self,
        mut state: Vec<Value>,
        inputs: &[(&Tensor, usize, bool)],
        len: usize,
        outer: &[Option<&Value>],
        ctx: &RunContext,
    ) -> Result<(Vec<Value>, Vec<Vec<Tensor>>)> {
        let k = self.body.plan.num_outputs - self.states;
        let mut scans: Vec<Vec<Tensor>> = vec![Vec::with_capacity(len); k];
        for t in 0..len {
            ctx.check()?;
            let mut elems = Vec::with_capacity(inputs.len());
            for (x, axis, rev) in inputs {
                let idx = if *rev { len - 1 - t } else { t };
                elems.push(Value::Tensor(data::take(x, *axis, idx)?));
            }
            let formal: Vec<&Value> = state.iter().chain(elems.iter()).collect();
            let mut out = self.body.run(&formal, outer, ctx)?.into_iter();
            state = out.by_ref().take(self.states).collect();
            for (j, v) in out.enumerate() {
                scans[j].push(v.into_tensor().map_err(|e| Error::invalid(format!("scan output {j}: {e}")))?);
            }
        }
        Ok((state, scans))
    }
}

impl Kernel for Scan {
    fn run(&self, inputs: &[Option<&Value>], ctx: &RunContext) -> Result<Values> {
        let mut state = Vec::with_capacity(self.states);
        for i in 0..self.states {
            state.push(
                inputs
                    .get(i)
                    .copied()
                    .flatten()
                    .ok_or_else(|| Error::invalid(format!("initial state {i} is missing")))?
                    .clone(),
            );
        }
        let mut scan_in = Vec::with_capacity(self.scan_inputs);
        let mut len = None;
        for j in 0..self.scan_inputs {
            let x = tensor_in(inputs, self.states + j)?;
            let axis = norm_axis(self.in_axes[j], x.rank())?;
            let l = x.shape()[axis];
            if *len.get_or_insert(l) != l {
                return Err(Error::invalid(format!("scan inputs have different lengths ({l} and {len:?})")));
            }
            scan_in.push((x, axis, self.in_reverse[j]));
        }
        let len = len.unwrap_or(0);
        let outer = inputs.get(self.explicit..).unwrap_or(&[]);
        let (mut result, scans) = self.recur(state, &scan_in, len, outer, ctx)?;
        for (j, mut items) in scans.into_iter().enumerate() {
            let rank = match items.first() {
                Some(t) => t.rank(),
                None => self.body.out_types.get(self.states + j).and_then(|t| t.1.as_ref()).map_or(0, Vec::len),
            };
            let axis = norm_axis(self.out_axes[j], rank + 1)?;
            let t = if items.is_empty() {
                self.body.empty_scan_output(self.states + j, self.outputs.get(self.states + j), axis)
            } else {
                if self.out_reverse[j] {
                    items.reverse();
                }
                let refs: Vec<&Tensor> = items.iter().collect();
                data::stack(&refs, axis).map_err(|e| Error::invalid(format!("scan output {j}: {e}")))?
            };
            result.push(Value::Tensor(t));
        }
        Ok(result.into())
    }
}

/// Scan-8: inputs `(sequence_lens?, states..., scan inputs...)`, batch axis 0, sequence axis 1.
struct Scan8 {
    scan: Scan,
}

fn scan8_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let (body, explicit, states, m) = scan_common(info, 1)?;
    let k = body.plan.num_outputs - states;
    let in_reverse = per_item(info, "directions", m, 0)?.iter().map(|d| *d != 0).collect();
    Ok(Box::new(Scan8 {
        scan: Scan {
            body,
            explicit,
            states,
            scan_inputs: m,
            in_axes: vec![0; m],
            in_reverse,
            out_axes: vec![0; k],
            out_reverse: vec![false; k],
            outputs: info.outputs.clone(),
        },
    }))
}

impl Kernel for Scan8 {
    fn run(&self, inputs: &[Option<&Value>], ctx: &RunContext) -> Result<Values> {
        let s = &self.scan;
        let lens = inputs.first().copied().flatten().map(|v| v.as_tensor()?.to_i64_vec()).transpose()?;
        let init: Vec<&Tensor> = (0..s.states).map(|i| tensor_in(inputs, 1 + i)).collect::<Result<_>>()?;
        let xs: Vec<&Tensor> =
            (0..s.scan_inputs).map(|j| tensor_in(inputs, 1 + s.states + j)).collect::<Result<_>>()?;
        let first = xs.first().ok_or_else(|| Error::invalid("no scan input"))?;
        if first.rank() < 2 {
            return Err(Error::invalid("Scan-8 inputs need a batch and a sequence axis"));
        }
        let (batch, max_len) = (first.shape()[0], first.shape()[1]);
        for x in &xs {
            if x.rank() < 2 || x.shape()[0] != batch || x.shape()[1] != max_len {
                return Err(Error::invalid(format!("scan inputs disagree on batch and length: {:?}", x.shape())));
            }
        }
        for t in &init {
            if t.shape().first() != Some(&batch) {
                return Err(Error::invalid(format!("initial state {:?} has no batch axis of {batch}", t.shape())));
            }
        }
        if let Some(l) = &lens
            && (l.len() != batch || l.iter().any(|n| *n < 0 || *n as usize > max_len))
        {
            return Err(Error::invalid(format!("sequence_lens {l:?} does not fit batch {batch}, length {max_len}")));
        }
        let outer = inputs.get(s.explicit..).unwrap_or(&[]);
        let k = s.body.plan.num_outputs - s.states;
        let mut final_states: Vec<Vec<Tensor>> = vec![Vec::with_capacity(batch); s.states];
        let mut outs: Vec<Vec<Tensor>> = vec![Vec::with_capacity(batch); k];
        for b in 0..batch {
            let state: Vec<Value> =
                init.iter().map(|t| data::take(t, 0, b).map(Value::Tensor)).collect::<Result<_>>()?;
            let rows: Vec<Tensor> = xs.iter().map(|x| data::take(x, 0, b)).collect::<Result<_>>()?;
            let len = lens.as_ref().map_or(max_len, |l| l[b] as usize);
            let trimmed: Vec<Tensor> = rows.iter().map(|r| data::slice_axis(r, 0, 0, len)).collect::<Result<_>>()?;
            let scan_in: Vec<(&Tensor, usize, bool)> =
                trimmed.iter().zip(&s.in_reverse).map(|(r, rev)| (r, 0, *rev)).collect();
            let (st, scans) = s.recur(state, &scan_in, len, outer, ctx)?;
            for (i, v) in st.into_iter().enumerate() {
                final_states[i].push(v.into_tensor()?);
            }
            for (j, mut items) in scans.into_iter().enumerate() {
                let t = if items.is_empty() {
                    let e = s.body.empty_scan_output(s.states + j, None, 0);
                    if max_len == 0 {
                        e
                    } else {
                        let mut shape = e.shape().to_vec();
                        shape[0] = max_len;
                        Tensor::zeros(e.dtype(), &shape)
                    }
                } else {
                    let pad = Tensor::zeros(items[0].dtype(), items[0].shape());
                    items.resize(max_len, pad);
                    let refs: Vec<&Tensor> = items.iter().collect();
                    data::stack(&refs, 0)?
                };
                outs[j].push(t);
            }
        }
        let mut result = Vec::with_capacity(s.states + k);
        for (i, items) in final_states.into_iter().chain(outs).enumerate() {
            let t = if items.is_empty() {
                let e = s.body.empty_scan_output(i, s.outputs.get(i), 0);
                let mut shape = e.shape().to_vec();
                if i >= s.states {
                    shape.insert(1, max_len);
                }
                Tensor::zeros(e.dtype(), &shape)
            } else {
                let refs: Vec<&Tensor> = items.iter().collect();
                data::stack(&refs, 0)?
            };
            result.push(Value::Tensor(t));
        }
        Ok(result.into())
    }
}

// ----------------------------------------------------------------------------- SequenceMap

struct SequenceMap {
    body: Body,
    explicit: usize,
    /// Element types of the output sequences, when known (for empty inputs).
    out_dtypes: Vec<Option<DType>>,
}

fn sequence_map_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let body = Body::compile(info, "body")?;
    let n = info.node;
    let explicit = n.inputs.len();
    if body.plan.num_inputs != explicit {
        return Err(n.error(format!("the node has {explicit} inputs, the body takes {}", body.plan.num_inputs)));
    }
    let out_dtypes = (0..body.plan.num_outputs)
        .map(|j| {
            let from_node = match info.outputs.get(j) {
                Some(ValueType::Sequence(t)) => t.tensor_dtype(),
                _ => None,
            };
            from_node.or(body.out_types[j].0)
        })
        .collect();
    Ok(Box::new(SequenceMap { body, explicit, out_dtypes }))
}

impl Kernel for SequenceMap {
    fn run(&self, inputs: &[Option<&Value>], ctx: &RunContext) -> Result<Values> {
        let args: Vec<&Value> = (0..self.explicit)
            .map(|i| inputs.get(i).copied().flatten().ok_or_else(|| Error::invalid(format!("input {i} is missing"))))
            .collect::<Result<_>>()?;
        let n = args.first().ok_or_else(|| Error::invalid("SequenceMap needs an input"))?.as_sequence()?.items.len();
        for (i, a) in args.iter().enumerate() {
            if let Value::Sequence(s) = a
                && s.items.len() != n
            {
                return Err(Error::invalid(format!("input {i} has {} elements, input 0 has {n}", s.items.len())));
            }
        }
        let outer = inputs.get(self.explicit..).unwrap_or(&[]);
        let mut outs: Vec<Vec<Tensor>> = vec![Vec::with_capacity(n); self.body.plan.num_outputs];
        for e in 0..n {
            let elems: Vec<Value> = args
                .iter()
                .map(|a| match a {
                    Value::Sequence(s) => Value::Tensor(s.items[e].clone()),
                    other => (*other).clone(),
                })
                .collect();
            let formal: Vec<&Value> = elems.iter().collect();
            for (j, v) in self.body.run(&formal, outer, ctx)?.into_iter().enumerate() {
                outs[j].push(v.into_tensor().map_err(|err| Error::invalid(format!("body output {j}: {err}")))?);
            }
        }
        outs.into_iter()
            .zip(&self.out_dtypes)
            .map(|(items, d)| {
                let dtype = items
                    .first()
                    .map(Tensor::dtype)
                    .or(*d)
                    .ok_or_else(|| Error::invalid("the element type of an empty output sequence is unknown"))?;
                Ok(Value::Sequence(Sequence { dtype, items }))
            })
            .collect()
    }
}
