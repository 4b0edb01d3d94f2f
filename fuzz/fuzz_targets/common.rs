//! What the model targets share: load, build and run once on small generated inputs, under
//! tight memory limits so a hostile size is refused fast. Every error is fine; a panic, an
//! abort or a hang is a finding.

use vinort::{DType, Dim, Provider, Runtime, Tensor};

/// Largest input the target generates, in elements.
const MAX_INPUT: usize = 1 << 16;

pub fn load_build_run(data: &[u8], providers: Vec<Provider>) {
    vinort::ir::limits::set_memory_limit(256 << 20);
    let Ok(builder) = Runtime::from_bytes(data.to_vec()) else { return };
    let Ok(session) = builder.providers(providers).memory_limit(64 << 20).build() else { return };
    let mut inputs = vec![];
    for info in session.inputs().iter().filter(|i| i.required()) {
        let (Some(dtype), Some(shape)) = (info.ty.tensor_dtype(), info.ty.tensor_shape()) else { return };
        let shape: Vec<usize> = shape.iter().map(|d| if let Dim::Fixed(n) = d { *n } else { 1 }).collect();
        let n = shape.iter().try_fold(1usize, |a, d| a.checked_mul(*d));
        if n.is_none_or(|n| n > MAX_INPUT) || dtype == DType::String {
            return;
        }
        let Ok(t) = Tensor::build_raw(dtype, &shape, |b| b.iter_mut().enumerate().for_each(|(i, v)| *v = i as u8 % 7))
        else {
            return;
        };
        inputs.push((info.name.clone(), t));
    }
    let _ = session.run(inputs.iter().map(|(k, v)| (k.as_str(), v)));
}
