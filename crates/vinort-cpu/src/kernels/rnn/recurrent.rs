//! [RNN](https://onnx.ai/onnx/operators/onnx__RNN.html),
//! [GRU](https://onnx.ai/onnx/operators/onnx__GRU.html) and
//! [LSTM](https://onnx.ai/onnx/operators/onnx__LSTM.html), opsets 7, 14 and 22 (opset 14 added
//! `layout`, 22 bfloat16; the equations have not changed since 7).
//!
//! One driver runs all three: the input projection `X @ W^T` of every step is one matrix
//! product before the recurrence, then each step multiplies the previous hidden state by
//! `R^T` and applies the cell's gate equations. Biases that only add to a pre-activation are
//! folded into the input projection; GRU's `Rbh` with `linear_before_reset` is not, since the
//! reset gate scales it.
//!
//! Spec points worth knowing:
//! - Gate order in W, R and B: RNN `i`; GRU `z, r, h`; LSTM `i, o, f, c`. Peepholes P: `i, o, f`.
//! - `sequence_lens`: steps at or past a batch entry's length leave its state unchanged and
//!   write zeros to Y; the reverse direction starts at the entry's last valid step. A length
//!   of 0 leaves Y_h / Y_c at the initial state, as the ONNX reference implementation does.
//! - `clip` bounds every gate's pre-activation, after bias and peephole terms are added.
//! - `input_forget` couples LSTM's gates: `f = 1 - i`.
//! - `layout = 1` makes X, initial_h/c, Y, Y_h and Y_c batch-major.

use std::borrow::Cow;

use vinort_ir::Values;
use vinort_ir::{Error, Result, RunContext, Tensor, Value};

use super::activation::{self, Activation, Kind};
use super::math::Float;
use super::step::{DirInput, DirOutput, PackedDir, Recurrence};
use crate::kernel::{
    Kernel, MAX_OPSET, NodeInfo, Registry, opt_tensor_in, opt_tensors_in, tensor_in, tensors_in, with_numeric,
};

/// Multiply-adds of one direction above which the two directions of a bidirectional node
/// run on separate rayon tasks.
const PAR_MIN_DIR: usize = crate::par::MACS;

pub(crate) fn register(r: &mut Registry) {
    r.add("", "RNN", 7..=MAX_OPSET, |i| factory(i, Cell::Rnn));
    r.add("", "GRU", 7..=MAX_OPSET, |i| {
        let lbr = i.node.attr_or("linear_before_reset", 0i64)?;
        if !(0..=1).contains(&lbr) {
            return Err(i.node.error(format!("attribute 'linear_before_reset' must be 0 or 1, got {lbr}")));
        }
        factory(i, Cell::Gru { linear_before_reset: lbr == 1 })
    });
    r.add("", "LSTM", 7..=MAX_OPSET, |i| {
        let input_forget = i.node.attr_or("input_forget", 0i64)?;
        if !(0..=1).contains(&input_forget) {
            return Err(i.node.error(format!("attribute 'input_forget' must be 0 or 1, got {input_forget}")));
        }
        factory(i, Cell::Lstm { input_forget: input_forget == 1 })
    });
}

/// The recurrent cell and its variant attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cell {
    Rnn,
    Gru { linear_before_reset: bool },
    Lstm { input_forget: bool },
}

impl Cell {
    pub(crate) fn gates(self) -> usize {
        match self {
            Cell::Rnn => 1,
            Cell::Gru { .. } => 3,
            Cell::Lstm { .. } => 4,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Cell::Rnn => "RNN",
            Cell::Gru { .. } => "GRU",
            Cell::Lstm { .. } => "LSTM",
        }
    }

    /// The spec's default activations, one per function slot (f; f, g; f, g, h).
    fn default_activations(self) -> &'static [Kind] {
        match self {
            Cell::Rnn => &[Kind::Tanh],
            Cell::Gru { .. } => &[Kind::Sigmoid, Kind::Tanh],
            Cell::Lstm { .. } => &[Kind::Sigmoid, Kind::Tanh, Kind::Tanh],
        }
    }

    fn outputs(self) -> usize {
        if matches!(self, Cell::Lstm { .. }) { 3 } else { 2 }
    }
}

/// Which ways the sequence is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    Forward,
    Reverse,
    Bidirectional,
}

impl Direction {
    fn count(self) -> usize {
        if self == Direction::Bidirectional { 2 } else { 1 }
    }

    /// Whether direction index `d` reads the sequence backwards.
    fn reverse(self, d: usize) -> bool {
        self == Direction::Reverse || d == 1
    }
}

/// A compiled RNN, GRU or LSTM node.
#[derive(Debug)]
pub(crate) struct Recurrent {
    pub cell: Cell,
    pub direction: Direction,
    pub hidden_size: Option<usize>,
    pub batch_first: bool,
    pub clip: Option<f32>,
    /// `cell.default_activations().len()` functions per direction, forward first.
    pub acts: Vec<Activation>,
    /// Which of Y, Y_h, Y_c the node asks for.
    pub wanted: [bool; 3],
    /// Number of output slots the node has.
    pub n_out: usize,
    /// Constant f32 W and R packed once, one per direction (empty otherwise).
    pub packed: Vec<PackedDir>,
}

fn factory(info: &NodeInfo<'_>, cell: Cell) -> Result<Box<dyn Kernel>> {
    Ok(Box::new(Recurrent::from_node(info, cell)?))
}

impl Recurrent {
    pub(crate) fn from_node(info: &NodeInfo<'_>, cell: Cell) -> Result<Recurrent> {
        let n = info.node;
        // DynamicQuantizeLSTM's W and R are 8-bit; it dequantizes them before running.
        let float_inputs: &[usize] =
            if n.op_type == "DynamicQuantizeLSTM" { &[0, 3, 5, 6, 7] } else { &[0, 1, 2, 3, 5, 6, 7] };
        for &i in float_inputs {
            if let Some(d) = info.input_dtype(i)
                && !d.is_float()
            {
                return Err(Error::unsupported(format!("{} does not support {d} inputs", cell.name())));
            }
        }
        let direction = match n.attr_or("direction", "forward".to_string())?.as_str() {
            "forward" => Direction::Forward,
            "reverse" => Direction::Reverse,
            "bidirectional" => Direction::Bidirectional,
            other => {
                return Err(
                    n.error(format!("attribute 'direction' must be forward, reverse or bidirectional, got '{other}'"))
                );
            }
        };
        let hidden_size = match n.attr::<i64>("hidden_size")? {
            Some(h) => Some(
                usize::try_from(h)
                    .map_err(|_| n.error(format!("attribute 'hidden_size' must not be negative, got {h}")))?,
            ),
            None => None,
        };
        let batch_first = match n.attr_or("layout", 0i64)? {
            0 => false,
            1 => true,
            l => return Err(n.error(format!("attribute 'layout' must be 0 or 1, got {l}"))),
        };
        let clip = n.attr::<f32>("clip")?;
        if let Some(c) = clip
            && (c.is_nan() || c < 0.0)
        {
            return Err(n.error(format!("attribute 'clip' must be a non-negative threshold, got {c}")));
        }
        let acts = activation::parse(n, cell.default_activations(), direction.count())?;
        if n.outputs.len() > cell.outputs() {
            return Err(n.error(format!(
                "{} has at most {} outputs, got {}",
                cell.name(),
                cell.outputs(),
                n.outputs.len()
            )));
        }
        let wanted = [0, 1, 2].map(|i| n.outputs.get(i).is_some_and(Option::is_some));
        let packed = pack(info, cell, direction.count()).unwrap_or_default();
        Ok(Recurrent { cell, direction, hidden_size, batch_first, clip, acts, wanted, n_out: n.outputs.len(), packed })
    }
}

/// Every direction's W and R packed, when both are f32 constants of a consistent shape and
/// this CPU has the packed kernels; None otherwise (the run checks the shapes and says what
/// is wrong).
fn pack(info: &NodeInfo<'_>, cell: Cell, dirs: usize) -> Option<Vec<PackedDir>> {
    let (w, r) = (info.const_input(1)?, info.const_input(2)?);
    if w.dtype() != vinort_ir::DType::F32 || r.dtype() != vinort_ir::DType::F32 {
        return None;
    }
    let (&[wd, gh, input], &[rd, rgh, hidden]) = (w.shape(), r.shape()) else { return None };
    if wd != dirs || rd != dirs || gh != rgh || gh != cell.gates() * hidden || gh == 0 || input == 0 {
        return None;
    }
    let (w, r) = (w.as_slice::<f32>().ok()?, r.as_slice::<f32>().ok()?);
    (0..dirs)
        .map(|d| {
            let (wd, rd) = (&w[d * gh * input..(d + 1) * gh * input], &r[d * gh * hidden..(d + 1) * gh * hidden]);
            PackedDir::new(cell, wd, rd, input, hidden)
        })
        .collect()
}

impl Kernel for Recurrent {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let outs = with_numeric!(compute x.dtype(), |T| self.run_typed::<T>(inputs)?,
            d => return Err(Error::unsupported(format!("{} does not support {d} inputs", self.cell.name()))));
        Ok(outs.into_iter().map(Value::Tensor).collect())
    }
}

/// Sizes of one run.
#[derive(Clone, Copy, Debug)]
struct Dims {
    seq: usize,
    batch: usize,
    input: usize,
    hidden: usize,
    dirs: usize,
}

/// `[a, b, inner]` transposed to `[b, a, inner]`.
fn swap01<T: Copy>(v: &[T], a: usize, b: usize, inner: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len());
    for j in 0..b {
        for i in 0..a {
            out.extend_from_slice(&v[(i * b + j) * inner..(i * b + j + 1) * inner]);
        }
    }
    out
}

impl Recurrent {
    fn op(&self) -> &'static str {
        self.cell.name()
    }

    fn dims(&self, x: &Tensor, w: &Tensor, r: &Tensor) -> Result<Dims> {
        let op = self.op();
        let &[x0, x1, input] = x.shape() else {
            return Err(Error::invalid(format!("{op} input X must have rank 3, got shape {:?}", x.shape())));
        };
        let (seq, batch) = if self.batch_first { (x1, x0) } else { (x0, x1) };
        let dirs = self.direction.count();
        let &[_, _, hidden] = r.shape() else {
            return Err(Error::invalid(format!("{op} input R must have rank 3, got shape {:?}", r.shape())));
        };
        if let Some(h) = self.hidden_size
            && h != hidden
        {
            return Err(Error::invalid(format!(
                "{op} attribute hidden_size is {h} but R of shape {:?} has hidden size {hidden}",
                r.shape()
            )));
        }
        let gh = self.cell.gates() * hidden;
        let gates = self.cell.gates();
        for (name, t, last, last_name) in [("W", w, input, "input_size"), ("R", r, hidden, "hidden_size")] {
            if t.shape() != [dirs, gh, last] {
                return Err(Error::invalid(format!(
                    "{op} input {name} has shape {:?}; expected [num_directions, {gates} * hidden_size, {last_name}] = {:?}",
                    t.shape(),
                    [dirs, gh, last]
                )));
            }
        }
        Ok(Dims { seq, batch, input, hidden, dirs })
    }

    /// An optional `[dirs, ...]` input (B or P) in compute type, checked against its shape.
    fn per_dir<'t, T: Float>(
        &self,
        t: Option<&'t Tensor>,
        name: &str,
        width: usize,
        dims: Dims,
    ) -> Result<Option<Cow<'t, [T]>>> {
        let Some(t) = t else { return Ok(None) };
        if t.shape() != [dims.dirs, width] {
            return Err(Error::invalid(format!(
                "{} input {name} has shape {:?}; expected {:?}",
                self.op(),
                t.shape(),
                [dims.dirs, width]
            )));
        }
        T::load(t).map(Some)
    }

    /// An optional initial state in compute type, as `[dirs, batch, hidden]`.
    fn state<'t, T: Float>(&self, t: Option<&'t Tensor>, name: &str, dims: Dims) -> Result<Option<Cow<'t, [T]>>> {
        let Some(t) = t else { return Ok(None) };
        let Dims { dirs, batch, hidden, .. } = dims;
        let want = if self.batch_first { [batch, dirs, hidden] } else { [dirs, batch, hidden] };
        if t.shape() != want {
            return Err(Error::invalid(format!(
                "{} input {name} has shape {:?}; expected {want:?}",
                self.op(),
                t.shape()
            )));
        }
        let v = T::load(t)?;
        Ok(Some(if self.batch_first { Cow::Owned(swap01(&v, batch, dirs, hidden)) } else { v }))
    }

    fn lens(&self, t: Option<&Tensor>, dims: Dims) -> Result<Option<Vec<usize>>> {
        let Some(t) = t else { return Ok(None) };
        let op = self.op();
        if t.shape() != [dims.batch] {
            return Err(Error::invalid(format!(
                "{op} input sequence_lens has shape {:?}; expected [{}]",
                t.shape(),
                dims.batch
            )));
        }
        t.to_i64_vec()?
            .into_iter()
            .map(|l| {
                usize::try_from(l).ok().filter(|l| *l <= dims.seq).ok_or_else(|| {
                    Error::invalid(format!("{op} sequence_lens value {l} is outside [0, {}] (seq_length)", dims.seq))
                })
            })
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    pub(crate) fn run_typed<T: Float>(&self, inputs: &[Option<&Value>]) -> Result<Vec<Tensor>> {
        let op = self.op();
        let is_lstm = matches!(self.cell, Cell::Lstm { .. });
        let [x_t, w_t, r_t] = tensors_in(inputs)?;
        let [b_t, lens_t, h0_t] = opt_tensors_in(inputs, 3)?;
        let (c0_t, p_t) = if is_lstm { (opt_tensor_in(inputs, 6)?, opt_tensor_in(inputs, 7)?) } else { (None, None) };
        let dtype = x_t.dtype();
        let named =
            [("W", Some(w_t)), ("R", Some(r_t)), ("B", b_t), ("initial_h", h0_t), ("initial_c", c0_t), ("P", p_t)];
        for (name, t) in named {
            if let Some(t) = t
                && t.dtype() != dtype
            {
                return Err(Error::invalid(format!("{op} input {name} is {} but X is {dtype}", t.dtype())));
            }
        }
        let dims = self.dims(x_t, w_t, r_t)?;
        let Dims { seq, batch, input, hidden, dirs } = dims;
        let gh = self.cell.gates() * hidden;
        let b = self.per_dir::<T>(b_t, "B", 2 * gh, dims)?;
        let p = self.per_dir::<T>(p_t, "P", 3 * hidden, dims)?;
        let h0 = self.state::<T>(h0_t, "initial_h", dims)?;
        let c0 = self.state::<T>(c0_t, "initial_c", dims)?;
        let lens = self.lens(lens_t, dims)?;
        let x = T::load(x_t)?;
        let x = if self.batch_first { Cow::Owned(swap01(&x, batch, seq, input)) } else { x };
        let (w, r) = (T::load(w_t)?, T::load(r_t)?);

        let per_fn = self.cell.default_activations().len();
        fn part<'v, T: Clone>(v: &'v Option<Cow<'_, [T]>>, d: usize, len: usize) -> Option<&'v [T]> {
            v.as_deref().map(|v| &v[d * len..(d + 1) * len])
        }
        let steps = Recurrence {
            cell: self.cell,
            seq,
            batch,
            input,
            hidden,
            clip: self.clip,
            want_y: self.wanted[0],
            lens: lens.as_deref(),
        };
        let run = |d: usize| {
            let input = DirInput {
                w: &w[d * gh * input..(d + 1) * gh * input],
                r: &r[d * gh * hidden..(d + 1) * gh * hidden],
                packed: self.packed.get(d),
                b: part(&b, d, 2 * gh),
                p: part(&p, d, 3 * hidden),
                h0: part(&h0, d, batch * hidden),
                c0: part(&c0, d, batch * hidden),
                acts: &self.acts[d * per_fn..(d + 1) * per_fn],
                reverse: self.direction.reverse(d),
            };
            steps.run(&x, &input)
        };
        let work = seq.saturating_mul(batch).saturating_mul(gh).saturating_mul(input + hidden);
        let outs: Vec<DirOutput<T>> = if dirs == 2 && work >= PAR_MIN_DIR && !crate::par::serial() {
            let (f, b) = rayon::join(|| run(0), || run(1));
            vec![f?, b?]
        } else {
            (0..dirs).map(run).collect::<Result<_>>()?
        };

        let placeholder = || Tensor::zeros(dtype, &[0]);
        let mut result = Vec::with_capacity(self.n_out);
        if self.n_out > 0 {
            result.push(if self.wanted[0] {
                let mut y = vec![T::ZERO; seq * dirs * batch * hidden];
                for (d, o) in outs.iter().enumerate() {
                    let yd = o.y.as_deref().ok_or_else(|| Error::invalid(format!("{op}: Y was not computed")))?;
                    for t in 0..seq {
                        let dst = (t * dirs + d) * batch * hidden;
                        y[dst..dst + batch * hidden].copy_from_slice(&yd[t * batch * hidden..(t + 1) * batch * hidden]);
                    }
                }
                if self.batch_first {
                    T::store(dtype, &[batch, seq, dirs, hidden], &swap01(&y, seq * dirs, batch, hidden))?
                } else {
                    T::store(dtype, &[seq, dirs, batch, hidden], &y)?
                }
            } else {
                placeholder()
            });
        }
        let finals = |get: fn(&DirOutput<T>) -> &[T]| -> Result<Tensor> {
            let all: Vec<T> = outs.iter().flat_map(|o| get(o).iter().copied()).collect();
            if self.batch_first {
                T::store(dtype, &[batch, dirs, hidden], &swap01(&all, dirs, batch, hidden))
            } else {
                T::store(dtype, &[dirs, batch, hidden], &all)
            }
        };
        if self.n_out > 1 {
            result.push(if self.wanted[1] { finals(|o| &o.h)? } else { placeholder() });
        }
        if self.n_out > 2 {
            result.push(if self.wanted[2] { finals(|o| &o.c)? } else { placeholder() });
        }
        Ok(result)
    }
}
