//! [LabelEncoder](https://onnx.ai/onnx/operators/onnx_aionnxml_LabelEncoder.html), ai.onnx.ml 1, 2
//! and 4.
//!
//! - Opset 1 maps strings to their index in `classes_strings` (the first occurrence; missing:
//!   `default_int64`, -1) or int64 indices back to strings (out of range: `default_string`,
//!   `"_Unused"`); the input's type picks the direction.
//! - Opset 2 maps `keys_{strings,int64s,floats}` to `values_{strings,int64s,floats}`, with
//!   `default_{string,int64,float}` for missing keys.
//! - Opset 4 adds `keys_tensor` / `values_tensor` / `default_tensor`, so keys and values may also
//!   be int32, int16 or double. Without a `default_tensor` the `default_*` attribute of the value
//!   type applies, else the spec's defaults (`"_Unused"`, -1, -0.0).
//!
//! The input's type must be the key type. A repeated key maps to its last value. Float keys are
//! matched by value: -0.0 equals 0.0, and a NaN key matches every NaN input (opset 4's rule; the
//! reference implementation behaves the same way for opset 2).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use vinort_ir::Values;

use vinort_ir::{DType, Error, Node, Result, RunContext, Tensor, Value};

use super::{ML_DOMAIN, ML_MAX_OPSET};
use crate::kernel::{Kernel, NodeInfo, Registry, tensor_in, with_numeric};
use crate::numeric::Numeric;

pub(crate) fn register(r: &mut Registry) {
    r.add(ML_DOMAIN, "LabelEncoder", 1..=1, v1_factory);
    r.add(ML_DOMAIN, "LabelEncoder", 2..=ML_MAX_OPSET, v2_factory);
}

/// Keys of one element kind, each mapped to its row in the value table.
enum Keys {
    Str(HashMap<String, usize>),
    Int(HashMap<i64, usize>),
    /// Keyed by [`float_key`].
    Float(HashMap<u64, usize>),
}

/// The hash key of a float: equal values (including 0.0 and -0.0, and any two NaNs) share it.
fn float_key(v: f64) -> u64 {
    if v.is_nan() {
        f64::NAN.to_bits()
    } else if v == 0.0 {
        0
    } else {
        v.to_bits()
    }
}

/// Key list as read from the attributes, before indexing.
enum KeyList {
    Str(Vec<String>),
    Int(Vec<i64>),
    Float(Vec<f64>),
}

impl KeyList {
    fn len(&self) -> usize {
        match self {
            KeyList::Str(v) => v.len(),
            KeyList::Int(v) => v.len(),
            KeyList::Float(v) => v.len(),
        }
    }

    /// Indexes the keys; a repeated key keeps its last position unless `first_wins`.
    fn index(self, first_wins: bool) -> Keys {
        fn build<K: std::hash::Hash + Eq>(keys: impl Iterator<Item = K>, first_wins: bool) -> HashMap<K, usize> {
            let mut m = HashMap::new();
            for (i, k) in keys.enumerate() {
                match m.entry(k) {
                    Entry::Occupied(mut e) if !first_wins => {
                        e.insert(i);
                    }
                    Entry::Occupied(_) => {}
                    Entry::Vacant(e) => {
                        e.insert(i);
                    }
                }
            }
            m
        }
        match self {
            KeyList::Str(v) => Keys::Str(build(v.into_iter(), first_wins)),
            KeyList::Int(v) => Keys::Int(build(v.into_iter(), first_wins)),
            KeyList::Float(v) => Keys::Float(build(v.into_iter().map(float_key), first_wins)),
        }
    }
}

/// The values followed by the default, as one 1-D table.
enum Table {
    Str(Vec<String>),
    /// Raw (native-endian) elements of `dtype`.
    Raw {
        dtype: DType,
        bytes: Vec<u8>,
    },
}

/// One key → value mapping with its default.
pub(crate) struct Encoder {
    key_dtype: DType,
    keys: Keys,
    table: Table,
    /// Row of the default in `table` (the number of values).
    default_row: usize,
}

impl Encoder {
    /// Maps every element of `x`.
    pub(crate) fn encode(&self, x: &Tensor) -> Result<Tensor> {
        if x.dtype() != self.key_dtype {
            return Err(Error::invalid(format!(
                "input of type {} does not match the key type {}",
                x.dtype(),
                self.key_dtype
            )));
        }
        let d = self.default_row;
        let rows: Vec<usize> = match &self.keys {
            Keys::Str(m) => x.as_strings()?.iter().map(|s| m.get(s).copied().unwrap_or(d)).collect(),
            Keys::Int(m) => x.to_i64_vec()?.iter().map(|v| m.get(v).copied().unwrap_or(d)).collect(),
            Keys::Float(m) => x.to_f64_vec()?.into_iter().map(|v| m.get(&float_key(v)).copied().unwrap_or(d)).collect(),
        };
        match &self.table {
            Table::Str(v) => Tensor::from_strings(x.shape(), rows.iter().map(|&r| v[r].clone()).collect()),
            Table::Raw { dtype, bytes } => {
                let sz = dtype.size();
                Tensor::build_raw(*dtype, x.shape(), |o| {
                    for (o, &r) in o.chunks_exact_mut(sz).zip(&rows) {
                        o.copy_from_slice(&bytes[r * sz..(r + 1) * sz]);
                    }
                })
            }
        }
    }
}

/// Element types opset 4 allows for keys and values.
fn table_type(d: DType) -> bool {
    matches!(d, DType::String | DType::I64 | DType::I32 | DType::I16 | DType::F32 | DType::F64)
}

/// Values (and defaults) as read from the attributes: a 1-D tensor of the value type.
fn values_tensor(node: &Node) -> Result<Tensor> {
    let mut found = Vec::new();
    if let Some(t) = node.attr::<Tensor>("values_tensor")? {
        if !table_type(t.dtype()) {
            return Err(node.error(format!("values_tensor of type {} is not supported", t.dtype())));
        }
        found.push(t.to_aligned());
    }
    if let Some(v) = node.attr::<Vec<String>>("values_strings")? {
        found.push(Tensor::from_strings(&[v.len()], v)?);
    }
    if let Some(v) = node.attr::<Vec<i64>>("values_int64s")? {
        found.push(Tensor::from_slice(&[v.len()], &v)?);
    }
    if let Some(v) = node.attr::<Vec<f32>>("values_floats")? {
        found.push(Tensor::from_slice(&[v.len()], &v)?);
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(node.error("one of values_tensor, values_strings, values_int64s, values_floats must be set")),
        _ => Err(node.error("only one of values_tensor, values_strings, values_int64s, values_floats may be set")),
    }
}

fn key_list(node: &Node) -> Result<(DType, KeyList)> {
    let mut found = Vec::new();
    if let Some(t) = node.attr::<Tensor>("keys_tensor")? {
        let t = t.to_aligned();
        let keys = match t.dtype() {
            DType::String => KeyList::Str(t.as_strings()?.to_vec()),
            DType::I64 | DType::I32 | DType::I16 => KeyList::Int(t.to_i64_vec()?),
            DType::F32 | DType::F64 => KeyList::Float(t.to_f64_vec()?),
            other => return Err(node.error(format!("keys_tensor of type {other} is not supported"))),
        };
        found.push((t.dtype(), keys));
    }
    if let Some(v) = node.attr::<Vec<String>>("keys_strings")? {
        found.push((DType::String, KeyList::Str(v)));
    }
    if let Some(v) = node.attr::<Vec<i64>>("keys_int64s")? {
        found.push((DType::I64, KeyList::Int(v)));
    }
    if let Some(v) = node.attr::<Vec<f32>>("keys_floats")? {
        found.push((DType::F32, KeyList::Float(v.into_iter().map(f64::from).collect())));
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(node.error("one of keys_tensor, keys_strings, keys_int64s, keys_floats must be set")),
        _ => Err(node.error("only one of keys_tensor, keys_strings, keys_int64s, keys_floats may be set")),
    }
}

/// A one-element tensor of a numeric `dtype` holding `v`.
fn numeric_scalar(dtype: DType, v: f64) -> Result<Tensor> {
    with_numeric!(dtype, |T| Ok(Tensor::scalar::<T>(T::from_f64_as(v))),
        other => Err(Error::invalid(format!("{other} is not a numeric type"))))
}

/// The default for values of type `vt`: `default_tensor` (opset 4), else the `default_*`
/// attribute of that type, else the spec's default.
fn default_value(node: &Node, vt: DType) -> Result<Tensor> {
    if let Some(t) = node.attr::<Tensor>("default_tensor")? {
        if t.len() != 1 || t.dtype() != vt {
            return Err(node.error(format!(
                "default_tensor must be a single {vt} element, got {}{:?}",
                t.dtype(),
                t.shape()
            )));
        }
        return Ok(t.to_aligned());
    }
    match vt {
        DType::String => {
            let s = node.attr_or::<String>("default_string", "_Unused".into())?;
            Tensor::from_strings(&[1], vec![s])
        }
        DType::I64 => Ok(Tensor::scalar(node.attr_or::<i64>("default_int64", -1)?)),
        DType::F32 => Ok(Tensor::scalar(node.attr_or::<f32>("default_float", -0.0)?)),
        DType::F64 => numeric_scalar(vt, -0.0),
        _ => numeric_scalar(vt, -1.0),
    }
}

/// Builds the value table: `values` then `default`, both of one type.
fn table(values: &Tensor, default: &Tensor) -> Result<Table> {
    if values.dtype() == DType::String {
        let mut v = values.as_strings()?.to_vec();
        v.extend_from_slice(default.as_strings()?);
        return Ok(Table::Str(v));
    }
    let mut bytes = values.as_bytes().to_vec();
    bytes.extend_from_slice(default.as_bytes());
    Ok(Table::Raw { dtype: values.dtype(), bytes })
}

/// The opset 2 / 4 encoder of a node.
pub(crate) fn encoder_v2(node: &Node) -> Result<Encoder> {
    let (key_dtype, keys) = key_list(node)?;
    let values = values_tensor(node)?;
    if keys.len() != values.len() {
        return Err(node.error(format!(
            "{} keys but {} values: keys_* and values_* must have the same length",
            keys.len(),
            values.len()
        )));
    }
    let default = default_value(node, values.dtype())?;
    Ok(Encoder { key_dtype, keys: keys.index(false), table: table(&values, &default)?, default_row: values.len() })
}

fn v2_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(Box::new(encoder_v2(info.node)?))
}

impl Kernel for Encoder {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        Ok(smallvec::smallvec![self.encode(tensor_in(inputs, 0)?)?.into()])
    }
}

/// Opset 1: both directions over `classes_strings`; the input type picks one.
struct V1 {
    to_int: Encoder,
    to_string: Encoder,
}

fn v1_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let classes = n.attr_or::<Vec<String>>("classes_strings", Vec::new())?;
    let count = classes.len();
    let default_int = n.attr_or::<i64>("default_int64", -1)?;
    let default_string = n.attr_or::<String>("default_string", "_Unused".into())?;
    let indices: Vec<i64> = (0..count as i64).collect();
    let mut ints = indices.clone();
    ints.push(default_int);
    let to_int = Encoder {
        key_dtype: DType::String,
        // The spec looks a string up "at the index at which it is found": the first one.
        keys: KeyList::Str(classes.clone()).index(true),
        table: Table::Raw { dtype: DType::I64, bytes: ints.iter().flat_map(|v| v.to_ne_bytes()).collect() },
        default_row: count,
    };
    let mut strings = classes;
    strings.push(default_string);
    let to_string = Encoder {
        key_dtype: DType::I64,
        keys: KeyList::Int(indices).index(false),
        table: Table::Str(strings),
        default_row: count,
    };
    Ok(Box::new(V1 { to_int, to_string }))
}

impl Kernel for V1 {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let enc = match x.dtype() {
            DType::String => &self.to_int,
            DType::I64 => &self.to_string,
            other => return Err(Error::invalid(format!("LabelEncoder-1 maps string or int64 inputs, got {other}"))),
        };
        Ok(smallvec::smallvec![enc.encode(x)?.into()])
    }
}
