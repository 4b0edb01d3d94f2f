//! The outputs of a run, by position or by name, as `ort`'s `SessionOutputs`.

use std::sync::Arc;

use crate::Value;

/// The outputs of a run, in the model's output order, addressable by name or position.
///
/// Like `ort`'s `SessionOutputs`, an output can be taken out by name ([`Outputs::remove`]):
/// the others keep their positions, and the removed one is no longer listed.
///
/// ```
/// # fn main() -> Result<(), vinort::Error> {
/// let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/mobilenetv2_tiny/model.onnx");
/// let session = vinort::Runtime::load(model)?.build()?;
/// let x = vinort::Tensor::from_vec(&[1, 3, 64, 64], vec![0.5f32; 3 * 64 * 64])?;
/// let mut outputs = session.run([("input", x)])?;
/// assert!(outputs.contains_key("probabilities"));
/// let probabilities = outputs.remove("probabilities").unwrap(); // owned, no copy
/// assert_eq!(probabilities.as_tensor()?.shape(), &[1, 10]);
/// assert!(outputs.is_empty() && outputs.get("probabilities").is_none());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Outputs {
    names: Arc<[String]>,
    /// `None` once removed.
    values: Vec<Option<Value>>,
}

impl Outputs {
    pub(crate) fn new(names: Arc<[String]>, values: Vec<Value>) -> Outputs {
        Outputs { names, values: values.into_iter().map(Some).collect() }
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// The output with this name (`None` for a name the model does not have, or one removed).
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.values[self.position(name)?].as_ref()
    }

    /// The output with this name, mutably.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Value> {
        let i = self.position(name)?;
        self.values[i].as_mut()
    }

    /// True when the output is there (the model has it and it was not removed).
    pub fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Takes the output with this name out, like `ort`'s `SessionOutputs::remove`: the value
    /// is moved out (its storage is not copied), and the other outputs keep their positions.
    pub fn remove(&mut self, name: &str) -> Option<Value> {
        let i = self.position(name)?;
        self.values[i].take()
    }

    /// Number of outputs (not counting removed ones).
    pub fn len(&self) -> usize {
        self.values.iter().filter(|v| v.is_some()).count()
    }

    /// True when there is no output (the model has none, or all were removed).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `(name, value)` pairs in model order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.names.iter().map(String::as_str).zip(&self.values).filter_map(|(n, v)| Some((n, v.as_ref()?)))
    }

    /// The names, in model order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.iter().map(|(n, _)| n)
    }

    /// The values, in model order.
    pub fn values(&self) -> impl Iterator<Item = &Value> {
        self.iter().map(|(_, v)| v)
    }

    /// The values in model order.
    pub fn into_values(self) -> Vec<Value> {
        self.values.into_iter().flatten().collect()
    }
}

impl std::ops::Index<usize> for Outputs {
    type Output = Value;
    /// The output at this position of the model's outputs; panics when there is none or it
    /// was removed.
    fn index(&self, i: usize) -> &Value {
        match self.values.get(i) {
            Some(Some(v)) => v,
            Some(None) => panic!("output #{i} ('{}') was removed", self.names[i]),
            None => panic!("output #{i} asked of a model with {} output(s)", self.values.len()),
        }
    }
}

impl std::ops::Index<&str> for Outputs {
    type Output = Value;
    fn index(&self, name: &str) -> &Value {
        self.get(name).unwrap_or_else(|| panic!("no output named '{name}'"))
    }
}

impl<'a> IntoIterator for &'a Outputs {
    type Item = (&'a str, &'a Value);
    type IntoIter = Box<dyn Iterator<Item = (&'a str, &'a Value)> + 'a>;
    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

/// `(name, value)` pairs in model order, the values moved out.
impl IntoIterator for Outputs {
    type Item = (String, Value);
    type IntoIter = std::vec::IntoIter<(String, Value)>;
    fn into_iter(self) -> Self::IntoIter {
        let names = self.names;
        let pairs: Vec<(String, Value)> =
            self.values.into_iter().enumerate().filter_map(|(i, v)| Some((names[i].clone(), v?))).collect();
        pairs.into_iter()
    }
}
