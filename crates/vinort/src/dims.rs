//! Free dimension overrides, `ort`'s `with_dimension_override` (ONNX Runtime's
//! `AddFreeDimensionOverrideByName`): a symbolic dim of the model's inputs (`batch`,
//! `sequence`) fixed to one size for the whole session.
//!
//! The override rewrites the model's declared input types before anything is partitioned, and
//! types are inferred again from them, so every provider compiles static shapes where the
//! model had a symbol: OpenVINO compiles one static model instead of a dynamic one, and the
//! Cpu provider plans with known sizes. The session's [`Session::inputs`](crate::Session::inputs)
//! show the fixed sizes, and a run whose input has another size there is refused before it
//! starts, naming the input, the axis and the override.

use vinort_ir::{Model, Value};

use crate::error::{Error, Result};
use crate::session::{IoInfo, SessionBuilder};

impl SessionBuilder {
    /// Fixes the symbolic dim `name` of the model's inputs to `size`, like `ort`'s
    /// `with_dimension_override`: every input dim the model declares as `name` (a
    /// `dim_param`) becomes `size` before the graph is partitioned, so every provider sees
    /// static shapes there, and a run whose input differs in that dim is an [`Error::Input`]
    /// naming the input, the axis and the override. Called again for the same name, the last
    /// size wins. A name no input dim has is a warning in the plan (ONNX Runtime ignores it
    /// silently).
    ///
    /// ```
    /// use vinort::ir::proto::{build, onnx, prost::Message};
    /// use vinort::{Dim, Error, Runtime, Tensor};
    ///
    /// // Relu over a float tensor of shape [batch, 4].
    /// let dims = [build::dim::named("batch"), build::dim::fixed(4)];
    /// let graph = onnx::GraphProto {
    ///     node: vec![build::node("Relu", "relu", &["x"], &["y"])],
    ///     input: vec![build::tensor_info("x", 1, dims.clone())],
    ///     output: vec![build::tensor_info("y", 1, dims)],
    ///     ..Default::default()
    /// };
    /// let model = build::model(8, &[("", 17)], graph).encode_to_vec();
    ///
    /// let session = Runtime::from_bytes(model)?.dimension_override("batch", 2).build()?;
    /// assert_eq!(session.inputs()[0].ty.tensor_shape(), Some(&[Dim::Fixed(2), Dim::Fixed(4)][..]));
    /// session.run([("x", Tensor::from_vec(&[2, 4], vec![1f32; 8])?)])?;
    /// let three = Tensor::from_vec(&[3, 4], vec![1f32; 12])?;
    /// assert!(matches!(session.run([("x", three)]), Err(Error::Input { .. })));
    /// # Ok::<(), vinort::Error>(())
    /// ```
    pub fn dimension_override(mut self, name: impl Into<String>, size: usize) -> SessionBuilder {
        let name = name.into();
        self.dims.retain(|(n, _)| *n != name);
        self.dims.push((name, size));
        self
    }
}

/// One input dim a [`SessionBuilder::dimension_override`] fixed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FixedDim {
    /// Position of the input among the session's inputs.
    pub input: usize,
    /// The axis.
    pub axis: usize,
    /// The symbol the model named it.
    pub symbol: String,
    /// The size it is fixed to.
    pub size: usize,
}

/// Fixes the overridden dims in `model`'s input types (and infers types again). Returns the
/// dims fixed and a warning for each override that names no input dim.
pub(crate) fn apply(model: &mut Model, overrides: &[(String, usize)]) -> (Vec<FixedDim>, Vec<String>) {
    if overrides.is_empty() {
        return (vec![], vec![]);
    }
    let fixes: Vec<(&str, usize)> = overrides.iter().map(|(n, s)| (n.as_str(), *s)).collect();
    let g = &mut model.graph;
    let changed = g.fix_input_dims(&fixes);
    let fixed: Vec<FixedDim> = changed
        .into_iter()
        .filter_map(|(v, axis, symbol, size)| {
            let input = g.inputs().iter().position(|i| *i == v)?;
            Some(FixedDim { input, axis, symbol, size })
        })
        .collect();
    let warnings = overrides
        .iter()
        .filter(|(name, _)| !fixed.iter().any(|f| f.symbol == *name))
        .map(|(name, size)| {
            let inputs: Vec<String> =
                g.inputs().iter().map(|v| format!("{} {}", g.value(*v).name, g.value(*v).ty)).collect();
            format!(
                "dimension_override(\"{name}\", {size}) changes nothing: no input dim is named '{name}' (inputs: {})",
                inputs.join(", ")
            )
        })
        .collect();
    (fixed, warnings)
}

/// Refuses a run input whose size differs from an override in a dim the override fixed.
pub(crate) fn check(fixed: &[FixedDim], input: usize, info: &IoInfo, value: &Value) -> Result<()> {
    let Value::Tensor(t) = value else { return Ok(()) };
    for f in fixed.iter().filter(|f| f.input == input) {
        if t.shape().get(f.axis).is_some_and(|got| *got != f.size) {
            return Err(Error::Input {
                name: info.name.clone(),
                message: format!(
                    "dimension {} is fixed to {} by dimension_override(\"{}\", {}), got shape {:?}",
                    f.axis,
                    f.size,
                    f.symbol,
                    f.size,
                    t.shape()
                ),
            });
        }
    }
    Ok(())
}
