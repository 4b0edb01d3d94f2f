//! What [`Session::run`](crate::Session::run) takes: inputs by name or by position, and the
//! [`inputs!`](crate::inputs) macro that writes either, as `ort`'s does.

use std::borrow::Cow;

use smallvec::SmallVec;

use crate::{Input, Result};

/// Where a run input goes: a model input named, or the model input at a position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKey<'k> {
    /// By name.
    Name(&'k str),
    /// By position among the model's inputs ([`Session::inputs`](crate::Session::inputs)
    /// order), as `inputs![a, b]` gives them.
    Position(usize),
}

/// Inputs of one run. Implemented for every iterator of `(name, value)` pairs (arrays, `Vec`s,
/// maps, [`inputs!`](crate::inputs)`["x" => a]`) and for [`Positional`]
/// ([`inputs!`](crate::inputs)`[a, b]`).
pub trait RunInputs<'a> {
    /// Hands every input to `each`, stopping at its first error.
    fn for_each_input(self, each: &mut dyn FnMut(InputKey<'_>, Input<'a>) -> Result<()>) -> Result<()>;
}

impl<'a, I, K, V> RunInputs<'a> for I
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: Into<Input<'a>>,
{
    fn for_each_input(self, each: &mut dyn FnMut(InputKey<'_>, Input<'a>) -> Result<()>) -> Result<()> {
        for (k, v) in self {
            each(InputKey::Name(k.as_ref()), v.into())?;
        }
        Ok(())
    }
}

/// Inputs in the model's input order (what `inputs![a, b]` makes).
///
/// ```
/// # fn main() -> Result<(), vinort::Error> {
/// # let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/mobilenetv2_tiny/model.onnx");
/// let session = vinort::Runtime::load(model)?.build()?;
/// let x = vinort::Tensor::from_vec(&[1, 3, 64, 64], vec![0.5f32; 3 * 64 * 64])?;
/// let by_position = session.run(vinort::Positional::new([x.clone()]))?;
/// let by_name = session.run(vinort::inputs!["input" => x])?;
/// assert_eq!(by_position[0].as_tensor()?.as_bytes(), by_name[0].as_tensor()?.as_bytes());
/// # Ok(()) }
/// ```
pub struct Positional<'a>(SmallVec<[Input<'a>; 8]>);

impl<'a> Positional<'a> {
    /// The inputs, first model input first.
    pub fn new<V: Into<Input<'a>>>(values: impl IntoIterator<Item = V>) -> Positional<'a> {
        Positional(values.into_iter().map(Into::into).collect())
    }
}

impl<'a> RunInputs<'a> for Positional<'a> {
    fn for_each_input(self, each: &mut dyn FnMut(InputKey<'_>, Input<'a>) -> Result<()>) -> Result<()> {
        for (i, v) in self.0.into_iter().enumerate() {
            each(InputKey::Position(i), v)?;
        }
        Ok(())
    }
}

/// A name for [`inputs!`](crate::inputs)' named form: `&str`, `String` or `Cow<str>` alike.
#[doc(hidden)]
pub fn input_name<'k>(name: impl Into<Cow<'k, str>>) -> Cow<'k, str> {
    name.into()
}

/// Run inputs, named or positional, as `ort::inputs!` writes them. Values are anything that
/// converts into an [`Input`]: a [`Tensor`](crate::Tensor), a [`Value`](crate::Value), a
/// [`TensorRef`](crate::TensorRef), and with the `ndarray` feature an array, a reference to
/// one, an `ArrayView` or a `CowArray` (borrowed without a copy when contiguous).
///
/// ```
/// # fn main() -> Result<(), vinort::Error> {
/// # let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/mobilenetv2_tiny/model.onnx");
/// let session = vinort::Runtime::load(model)?.build()?;
/// let (shape, data) = ([1, 3, 64, 64], vec![0.25f32; 3 * 64 * 64]);
/// let named = session.run(vinort::inputs!["input" => vinort::TensorRef::from_slice(&shape, &data)?])?;
/// let positional = session.run(vinort::inputs![vinort::TensorRef::from_slice(&shape, &data)?])?;
/// assert_eq!(named["probabilities"].as_tensor()?.as_bytes(), positional[0].as_tensor()?.as_bytes());
/// # Ok(()) }
/// ```
#[macro_export]
macro_rules! inputs {
    ($($name:expr => $value:expr),+ $(,)?) => {
        [$(($crate::__input_name($name), $crate::Input::from($value))),+]
    };
    ($($value:expr),* $(,)?) => {
        $crate::Positional::new([$($crate::Input::from($value)),*])
    };
}
