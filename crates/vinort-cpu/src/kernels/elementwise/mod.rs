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

pub(crate) mod binary;
mod unary;

#[cfg(test)]
mod tests;

use binary::{Arith, BinOp, Bits, Cmp, Variadic, binary_factory, variadic_factory};

use crate::kernel::Registry;

pub(crate) fn register(r: &mut Registry) {
    r.op("", "Add", |i| binary_factory(i, BinOp::Arith(Arith::Add)));
    r.op("", "Sub", |i| binary_factory(i, BinOp::Arith(Arith::Sub)));
    r.op("", "Mul", |i| binary_factory(i, BinOp::Arith(Arith::Mul)));
    r.op("", "Div", |i| binary_factory(i, BinOp::Arith(Arith::Div)));
    r.op("", "Pow", |i| binary_factory(i, BinOp::Pow));
    r.op("", "Mod", binary::mod_factory);
    r.op("", "PRelu", |i| binary_factory(i, BinOp::PRelu));
    r.op("", "BitShift", binary::bitshift_factory);
    r.op("", "BitwiseAnd", |i| binary_factory(i, BinOp::Bits(Bits::And)));
    r.op("", "BitwiseOr", |i| binary_factory(i, BinOp::Bits(Bits::Or)));
    r.op("", "BitwiseXor", |i| binary_factory(i, BinOp::Bits(Bits::Xor)));
    r.op("", "Equal", |i| binary_factory(i, BinOp::Cmp(Cmp::Eq)));
    r.op("", "Less", |i| binary_factory(i, BinOp::Cmp(Cmp::Lt)));
    r.op("", "Greater", |i| binary_factory(i, BinOp::Cmp(Cmp::Gt)));
    r.op("", "LessOrEqual", |i| binary_factory(i, BinOp::Cmp(Cmp::Le)));
    r.op("", "GreaterOrEqual", |i| binary_factory(i, BinOp::Cmp(Cmp::Ge)));
    r.op("", "And", |i| binary_factory(i, BinOp::Logic(Bits::And)));
    r.op("", "Or", |i| binary_factory(i, BinOp::Logic(Bits::Or)));
    r.op("", "Xor", |i| binary_factory(i, BinOp::Logic(Bits::Xor)));
    r.op("", "Max", |i| variadic_factory(i, Variadic::Max));
    r.op("", "Min", |i| variadic_factory(i, Variadic::Min));
    r.op("", "Sum", |i| variadic_factory(i, Variadic::Sum));
    r.op("", "Mean", |i| variadic_factory(i, Variadic::Mean));
    r.op("", "Where", binary::where_factory);

    unary::register(r);
    r.op("", "IsNaN", unary::class_factory);
    r.op("", "IsInf", unary::class_factory);
    // Before opset 11 the bounds are attributes; the factory reads the node's opset.
    r.op("", "Clip", unary::clip_factory);
    r.op("", "Cast", cast::cast_factory);
    r.op("", "CastLike", cast::cast_like_factory);
}
