//! [Det](https://onnx.ai/onnx/operators/onnx__Det.html), opset 11–latest, f32, f64, f16 and
//! bf16 (computed in f64 by LU decomposition, rounded once to the input type).

use vinort_ir::Values;
use vinort_ir::{Error, Result, Value};

use crate::kernel::{FnKernel, Registry, tensor_in};
use crate::kernels::support::{load_f64, store_f64};

pub(crate) fn register(r: &mut Registry) {
    r.op("", "Det", |_| Ok(Box::new(FnKernel(det_kernel))));
}

fn det_kernel(inputs: &[Option<&Value>]) -> Result<Values> {
    let x = tensor_in(inputs, 0)?;
    let s = x.shape();
    let r = s.len();
    if r < 2 || s[r - 1] != s[r - 2] {
        return Err(Error::invalid(format!("Det needs square matrices, got shape {s:?}")));
    }
    let m = s[r - 1];
    let v = load_f64(x)?;
    let dets: Vec<f64> = if m == 0 {
        vec![1.0; s[..r - 2].iter().product()]
    } else {
        v.chunks_exact(m * m).map(|a| det(a.to_vec(), m)).collect()
    };
    Ok(smallvec::smallvec![Value::from(store_f64(x.dtype(), &s[..r - 2], &dets)?)])
}

/// Determinant of an `m`×`m` row-major matrix by LU decomposition with partial pivoting.
pub fn det(mut a: Vec<f64>, m: usize) -> f64 {
    let mut d = 1.0;
    for c in 0..m {
        let p = (c..m).max_by(|&i, &j| a[i * m + c].abs().total_cmp(&a[j * m + c].abs())).unwrap_or(c);
        if a[p * m + c] == 0.0 {
            return 0.0;
        }
        if p != c {
            for k in 0..m {
                a.swap(p * m + k, c * m + k);
            }
            d = -d;
        }
        let piv = a[c * m + c];
        d *= piv;
        for i in c + 1..m {
            let f = a[i * m + c] / piv;
            if f != 0.0 {
                for k in c..m {
                    a[i * m + k] -= f * a[c * m + k];
                }
            }
        }
    }
    d
}
