//! Rules of the recurrent ops [RNN], [GRU] and [LSTM] (and ONNX Runtime's
//! `com.microsoft` DynamicQuantizeLSTM, which `quantize_dynamic` makes of an LSTM).
//!
//! Every output has X's type. With `layout = 0` (the default, and the only layout before
//! opset 14) X is `[seq_length, batch_size, input_size]`, Y is `[seq_length, num_directions,
//! batch_size, hidden_size]` and Y_h/Y_c are `[num_directions, batch_size, hidden_size]`; with
//! `layout = 1` X is `[batch_size, seq_length, input_size]`, Y is `[batch_size, seq_length,
//! num_directions, hidden_size]` and Y_h/Y_c are `[batch_size, num_directions, hidden_size]`.
//!
//! [RNN]: https://onnx.ai/onnx/operators/onnx__RNN.html
//! [GRU]: https://onnx.ai/onnx/operators/onnx__GRU.html
//! [LSTM]: https://onnx.ai/onnx/operators/onnx__LSTM.html

use super::InferCtx;
use super::rules::{Out, tensor};
use crate::value::Dim;

/// RNN, GRU, LSTM: Y, Y_h and (LSTM) Y_c.
pub(crate) fn recurrent(c: &InferCtx<'_>) -> Out {
    let n = c.node;
    let layout = n.attr_or::<i64>("layout", 0)?;
    let dirs = match n.attr::<String>("direction")?.as_deref() {
        Some("bidirectional") => Dim::Fixed(2),
        Some("forward" | "reverse") | None => Dim::Fixed(1),
        Some(other) => return Err(n.error(format!("direction '{other}' is not forward, reverse or bidirectional"))),
    };
    let hidden = match n.attr::<i64>("hidden_size")? {
        Some(h) if h > 0 => Dim::Fixed(h as usize),
        Some(h) => return Err(n.error(format!("hidden_size {h} must be positive"))),
        // ONNX's R is [num_directions, gates * hidden_size, hidden_size]; com.microsoft's
        // DynamicQuantizeLSTM stores it transposed.
        None if n.domain.is_empty() => c.shape(2).and_then(|r| r.get(2)).cloned().unwrap_or(Dim::Unknown),
        None => c.shape(2).and_then(|r| r.get(1)).cloned().unwrap_or(Dim::Unknown),
    };
    let (seq, batch) = match c.shape(0) {
        Some([a, b, _]) if layout == 0 => (a.clone(), b.clone()),
        Some([b, a, _]) => (a.clone(), b.clone()),
        _ => (Dim::Unknown, Dim::Unknown),
    };
    let (y, yh) = if layout == 0 {
        (vec![seq, dirs.clone(), batch.clone(), hidden.clone()], vec![dirs, batch, hidden])
    } else {
        (vec![batch.clone(), seq, dirs.clone(), hidden.clone()], vec![batch, dirs, hidden])
    };
    let d = c.dtype(0);
    let mut out = vec![tensor(d, Some(y)), tensor(d, Some(yh.clone()))];
    if n.op_type.ends_with("LSTM") {
        out.push(tensor(d, Some(yh)));
    }
    Ok(out)
}
