//! Elementwise ops: arithmetic, comparisons, logic, activations, math functions, Where, Cast.
//!
//! Spec pages: `https://onnx.ai/onnx/operators/onnx__<Op>.html` (for example
//! [Add](https://onnx.ai/onnx/operators/onnx__Add.html)); broadcasting follows
//! <https://onnx.ai/onnx/repo-docs/Broadcasting.html>. Each submodule's header lists its ops,
//! opsets and element types; the registrations below give the opset range of every op.
//!
//! [`broadcast`] is public so other families can reuse the broadcast planner and the
//! slice drivers; [`cast::cast_tensor`] and the error functions in [`num`] likewise.

pub mod broadcast;
pub mod cast;
pub mod num;

mod binary;
mod unary;

#[cfg(test)]
mod tests;

use binary::{Arith, BinOp, Bits, Cmp, Variadic, binary_factory, variadic_factory};

use crate::kernel::{MAX_OPSET, Registry};

pub(crate) fn register(r: &mut Registry) {
    let all = 1..=MAX_OPSET;
    r.add("", "Add", all.clone(), |i| binary_factory(i, BinOp::Arith(Arith::Add)));
    r.add("", "Sub", all.clone(), |i| binary_factory(i, BinOp::Arith(Arith::Sub)));
    r.add("", "Mul", all.clone(), |i| binary_factory(i, BinOp::Arith(Arith::Mul)));
    r.add("", "Div", all.clone(), |i| binary_factory(i, BinOp::Arith(Arith::Div)));
    r.add("", "Pow", all.clone(), |i| binary_factory(i, BinOp::Pow));
    r.add("", "Mod", 10..=MAX_OPSET, binary::mod_factory);
    r.add("", "PRelu", all.clone(), |i| binary_factory(i, BinOp::PRelu));
    r.add("", "BitShift", 11..=MAX_OPSET, binary::bitshift_factory);
    r.add("", "BitwiseAnd", 18..=MAX_OPSET, |i| binary_factory(i, BinOp::Bits(Bits::And)));
    r.add("", "BitwiseOr", 18..=MAX_OPSET, |i| binary_factory(i, BinOp::Bits(Bits::Or)));
    r.add("", "BitwiseXor", 18..=MAX_OPSET, |i| binary_factory(i, BinOp::Bits(Bits::Xor)));
    r.add("", "Equal", all.clone(), |i| binary_factory(i, BinOp::Cmp(Cmp::Eq)));
    r.add("", "Less", all.clone(), |i| binary_factory(i, BinOp::Cmp(Cmp::Lt)));
    r.add("", "Greater", all.clone(), |i| binary_factory(i, BinOp::Cmp(Cmp::Gt)));
    r.add("", "LessOrEqual", 12..=MAX_OPSET, |i| binary_factory(i, BinOp::Cmp(Cmp::Le)));
    r.add("", "GreaterOrEqual", 12..=MAX_OPSET, |i| binary_factory(i, BinOp::Cmp(Cmp::Ge)));
    r.add("", "And", all.clone(), |i| binary_factory(i, BinOp::Logic(Bits::And)));
    r.add("", "Or", all.clone(), |i| binary_factory(i, BinOp::Logic(Bits::Or)));
    r.add("", "Xor", all.clone(), |i| binary_factory(i, BinOp::Logic(Bits::Xor)));
    r.add("", "Max", all.clone(), |i| variadic_factory(i, Variadic::Max));
    r.add("", "Min", all.clone(), |i| variadic_factory(i, Variadic::Min));
    r.add("", "Sum", all.clone(), |i| variadic_factory(i, Variadic::Sum));
    r.add("", "Mean", all.clone(), |i| variadic_factory(i, Variadic::Mean));
    r.add("", "Where", 9..=MAX_OPSET, binary::where_factory);

    for op in [
        "Neg",
        "Abs",
        "Sqrt",
        "Exp",
        "Log",
        "Tanh",
        "Sigmoid",
        "Relu",
        "LeakyRelu",
        "HardSigmoid",
        "Reciprocal",
        "Floor",
        "Ceil",
        "Elu",
        "Selu",
        "Softplus",
        "Softsign",
        "Not",
    ] {
        r.add("", op, all.clone(), unary::unary_factory);
    }
    for op in ["Sin", "Cos", "Tan", "Asin", "Acos", "Atan"] {
        r.add("", op, 7..=MAX_OPSET, unary::unary_factory);
    }
    for op in ["Erf", "Sign", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Shrink"] {
        r.add("", op, 9..=MAX_OPSET, unary::unary_factory);
    }
    r.add("", "ThresholdedRelu", 10..=MAX_OPSET, unary::unary_factory);
    r.add("", "Round", 11..=MAX_OPSET, unary::unary_factory);
    r.add("", "Celu", 12..=MAX_OPSET, unary::unary_factory);
    r.add("", "HardSwish", 14..=MAX_OPSET, unary::unary_factory);
    r.add("", "Mish", 18..=MAX_OPSET, unary::unary_factory);
    r.add("", "BitwiseNot", 18..=MAX_OPSET, unary::unary_factory);
    r.add("", "Gelu", 20..=MAX_OPSET, unary::unary_factory);
    r.add("", "IsNaN", 9..=MAX_OPSET, unary::class_factory);
    r.add("", "IsInf", 10..=MAX_OPSET, unary::class_factory);
    // Before opset 11 the bounds are attributes; the factory reads the node's opset.
    r.add("", "Clip", all.clone(), unary::clip_factory);
    r.add("", "Cast", all, cast::cast_factory);
    r.add("", "CastLike", 15..=MAX_OPSET, cast::cast_like_factory);
}
