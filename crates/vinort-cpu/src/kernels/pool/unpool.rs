//! [MaxUnpool](https://onnx.ai/onnx/operators/onnx__MaxUnpool.html), opset 9–latest, any
//! element type: scatters pooled values back to the positions MaxPool's `Indices` recorded.

use vinort_ir::{Error, Result, Tensor, Value};

use crate::kernel::{FnKernel, Kernel, NodeInfo, Registry, index_below, opt_tensor_in, tensor_in};

pub(crate) fn register(r: &mut Registry) {
    r.op("", "MaxUnpool", maxunpool_factory);
}

fn maxunpool_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let kernel: Vec<i64> = n.req_attr("kernel_shape")?;
    let k = kernel.len();
    let strides: Vec<i64> = n.attr_or("strides", vec![1; k])?;
    let pads: Vec<i64> = n.attr_or("pads", vec![0; 2 * k])?;
    if strides.len() != k || pads.len() != 2 * k || kernel.iter().chain(&strides).chain(&pads).any(|v| *v < 0) {
        return Err(n.error("kernel_shape, strides and pads do not agree"));
    }
    Ok(Box::new(FnKernel(move |inputs: &[Option<&Value>]| {
        let x = tensor_in(inputs, 0)?;
        let idx = tensor_in(inputs, 1)?.to_i64_vec()?;
        let s = x.shape();
        if s.len() != k + 2 || idx.len() != x.len() {
            return Err(Error::invalid(format!("MaxUnpool input shape {s:?} does not fit the kernel and indices")));
        }
        let mut inferred = vec![s[0], s[1]];
        for d in 0..k {
            let v = (s[d + 2] as i64 - 1) * strides[d] - pads[d] - pads[k + d] + kernel[d];
            inferred.push(usize::try_from(v).map_err(|_| Error::invalid("MaxUnpool output extent is negative"))?);
        }
        let shape = match opt_tensor_in(inputs, 2)? {
            Some(t) => t
                .to_i64_vec()?
                .into_iter()
                .map(|v| usize::try_from(v).map_err(|_| Error::invalid("negative output_shape")))
                .collect::<Result<Vec<_>>>()?,
            None => inferred.clone(),
        };
        if shape.len() != inferred.len() || shape.iter().zip(&inferred).any(|(a, b)| a < b) {
            return Err(Error::invalid(format!("output_shape {shape:?} is smaller than {inferred:?}")));
        }
        let total: usize = inferred.iter().product();
        let es = x.dtype().size();
        let xb = x.as_bytes();
        // Indices address the inferred shape, which sits at the origin of the output.
        let ost = vinort_ir::tensor::strides_of(&shape);
        let ist = vinort_ir::tensor::strides_of(&inferred);
        let mut err = None;
        let y = Tensor::build_raw(x.dtype(), &shape, |out| {
            for (e, &i) in idx.iter().enumerate() {
                let Some(i) = index_below(i, total) else {
                    err = Some(Error::invalid(format!("MaxUnpool index {i} is out of range")));
                    return;
                };
                let mut rem = i;
                let mut off = 0;
                for (a, b) in ist.iter().zip(ost.iter()) {
                    off += (rem / a) * b;
                    rem %= a;
                }
                out[off * es..(off + 1) * es].copy_from_slice(&xb[e * es..(e + 1) * es]);
            }
        })?;
        if let Some(e) = err {
            return Err(e);
        }
        Ok(vec![Value::from(y)])
    })))
}
