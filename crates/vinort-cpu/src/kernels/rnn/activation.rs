//! The activation functions RNN, GRU and LSTM accept in their `activations` attribute, with
//! the `activation_alpha` / `activation_beta` parameters.
//!
//! Names match case-insensitively (the spec spells them `Tanh`, `HardSigmoid`...). Parameters
//! are consumed in order by the functions that take them: a `Sigmoid` takes none, `LeakyRelu`
//! one alpha, `HardSigmoid` an alpha and a beta. A function whose value is not listed gets the
//! default of the ONNX operator of the same name (LeakyRelu 0.01, HardSigmoid 0.2 / 0.5, Elu
//! 1.0, ThresholdedRelu 1.0, Affine 1.0 / 0.0, ScaledTanh 1.0 / 1.0).

use vinort_ir::{Node, Result};

use super::math::Float;

/// Which function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Relu,
    Tanh,
    Sigmoid,
    Affine,
    LeakyRelu,
    ThresholdedRelu,
    ScaledTanh,
    HardSigmoid,
    Elu,
    Softsign,
    Softplus,
}

const NAMES: [(&str, Kind); 11] = [
    ("Relu", Kind::Relu),
    ("Tanh", Kind::Tanh),
    ("Sigmoid", Kind::Sigmoid),
    ("Affine", Kind::Affine),
    ("LeakyRelu", Kind::LeakyRelu),
    ("ThresholdedRelu", Kind::ThresholdedRelu),
    ("ScaledTanh", Kind::ScaledTanh),
    ("HardSigmoid", Kind::HardSigmoid),
    ("Elu", Kind::Elu),
    ("Softsign", Kind::Softsign),
    ("Softplus", Kind::Softplus),
];

impl Kind {
    fn parse(name: &str) -> Option<Kind> {
        NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, k)| *k)
    }

    /// Defaults of (alpha, beta) for the parameters the function takes (None: not taken).
    fn defaults(self) -> (Option<f32>, Option<f32>) {
        match self {
            Kind::Relu | Kind::Tanh | Kind::Sigmoid | Kind::Softsign | Kind::Softplus => (None, None),
            Kind::Affine => (Some(1.0), Some(0.0)),
            Kind::LeakyRelu => (Some(0.01), None),
            Kind::ThresholdedRelu | Kind::Elu => (Some(1.0), None),
            Kind::ScaledTanh => (Some(1.0), Some(1.0)),
            Kind::HardSigmoid => (Some(0.2), Some(0.5)),
        }
    }
}

/// One activation function with its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Activation {
    pub kind: Kind,
    pub alpha: f32,
    pub beta: f32,
}

impl Activation {
    /// The function with its default parameters.
    pub fn new(kind: Kind) -> Activation {
        let (a, b) = kind.defaults();
        Activation { kind, alpha: a.unwrap_or(0.0), beta: b.unwrap_or(0.0) }
    }

    /// The function at one point.
    /// [`Activation::eval`] over a slice, in place (vectorized where [`Float::activate`] is).
    pub fn apply<T: Float>(&self, v: &mut [T]) {
        T::activate(*self, v)
    }

    #[inline]
    pub fn eval<T: Float>(&self, x: T) -> T {
        let (zero, one) = (T::ZERO, T::ONE);
        let alpha = T::from_f64(self.alpha as f64);
        let beta = T::from_f64(self.beta as f64);
        match self.kind {
            Kind::Relu => {
                if x > zero {
                    x
                } else {
                    zero
                }
            }
            Kind::Tanh => x.tanh(),
            Kind::Sigmoid => one / (one + (-x).exp()),
            Kind::Affine => alpha * x + beta,
            Kind::LeakyRelu => {
                if x >= zero {
                    x
                } else {
                    alpha * x
                }
            }
            Kind::ThresholdedRelu => {
                if x >= alpha {
                    x
                } else {
                    zero
                }
            }
            Kind::ScaledTanh => alpha * (beta * x).tanh(),
            Kind::HardSigmoid => {
                let y = alpha * x + beta;
                if y < zero {
                    zero
                } else if y > one {
                    one
                } else {
                    y
                }
            }
            Kind::Elu => {
                if x >= zero {
                    x
                } else {
                    alpha * (x.exp() - one)
                }
            }
            Kind::Softsign => x / (one + x.abs()),
            // log(1 + e^x) without overflowing e^x for large x.
            Kind::Softplus => {
                if x > zero {
                    x + (-x).exp().ln_1p()
                } else {
                    x.exp().ln_1p()
                }
            }
        }
    }
}

/// The activations of a recurrent node: `per_dir` functions for each of `dirs` directions
/// (forward first), from the `activations`, `activation_alpha` and `activation_beta`
/// attributes, or `defaults` when `activations` is absent.
///
/// A bidirectional node that lists only `per_dir` functions uses them for both directions.
pub(crate) fn parse(node: &Node, defaults: &[Kind], dirs: usize) -> Result<Vec<Activation>> {
    let per_dir = defaults.len();
    let Some(names) = node.attr::<Vec<String>>("activations")? else {
        return Ok((0..dirs).flat_map(|_| defaults.iter().map(|k| Activation::new(*k))).collect());
    };
    if names.len() != per_dir * dirs && !(dirs == 2 && names.len() == per_dir) {
        return Err(node.error(format!(
            "attribute 'activations' lists {} functions; {} with {dirs} direction(s) needs {}",
            names.len(),
            node.op_type,
            per_dir * dirs
        )));
    }
    let alphas = node.attr::<Vec<f32>>("activation_alpha")?.unwrap_or_default();
    let betas = node.attr::<Vec<f32>>("activation_beta")?.unwrap_or_default();
    let (mut alphas, mut betas) = (alphas.into_iter(), betas.into_iter());
    let mut acts = Vec::with_capacity(per_dir * dirs);
    for name in &names {
        let kind = Kind::parse(name).ok_or_else(|| {
            let known: Vec<&str> = NAMES.iter().map(|(n, _)| *n).collect();
            node.error(format!("unknown activation function '{name}' (expected one of {})", known.join(", ")))
        })?;
        let (da, db) = kind.defaults();
        let alpha = da.map(|d| alphas.next().unwrap_or(d)).unwrap_or(0.0);
        let beta = db.map(|d| betas.next().unwrap_or(d)).unwrap_or(0.0);
        acts.push(Activation { kind, alpha, beta });
    }
    if acts.len() < per_dir * dirs {
        acts.extend_from_within(..);
    }
    Ok(acts)
}
