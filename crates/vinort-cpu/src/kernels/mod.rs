//! Kernels, one folder per op family, grouped by what the ops do. Each family's `register`
//! adds its ops to the registry.

use crate::kernel::Registry;

#[cfg(feature = "k-attention")]
pub mod attention;
#[cfg(feature = "k-loss")]
pub(crate) mod bitcast;
pub mod control;
#[cfg(feature = "k-linalg")]
pub mod conv;
#[cfg(any(feature = "k-linalg", feature = "k-rnn"))]
pub(crate) mod dense;
#[cfg(feature = "k-elementwise")]
pub mod elementwise;
#[cfg(feature = "k-loss")]
pub mod gather;
#[cfg(feature = "k-image")]
pub mod image;
#[cfg(feature = "k-linalg")]
pub mod linalg;
#[cfg(feature = "k-loss")]
pub mod loss;
#[cfg(feature = "k-ml")]
pub mod ml;
#[cfg(feature = "k-norm")]
pub mod norm;
#[cfg(feature = "k-linalg")]
pub mod pool;
#[cfg(feature = "k-quant")]
pub mod quant;
#[cfg(feature = "k-norm")]
pub mod reduce;
#[cfg(feature = "k-rnn")]
pub mod rnn;
#[cfg(feature = "k-sequence")]
pub mod sequence;
#[cfg(feature = "k-shape")]
pub mod shape;
#[cfg(feature = "k-loss")]
pub(crate) mod support;
#[cfg(feature = "k-text")]
pub mod text;
#[cfg(feature = "k-loss")]
pub mod training;

/// A registry with every kernel of this crate.
pub fn registry() -> Registry {
    let mut r = Registry::default();
    control::register(&mut r);
    #[cfg(feature = "k-elementwise")]
    elementwise::register(&mut r);
    #[cfg(feature = "k-linalg")]
    linalg::register(&mut r);
    #[cfg(feature = "k-linalg")]
    conv::register(&mut r);
    #[cfg(feature = "k-linalg")]
    pool::register(&mut r);
    #[cfg(feature = "k-norm")]
    norm::register(&mut r);
    #[cfg(feature = "k-norm")]
    reduce::register(&mut r);
    #[cfg(feature = "k-shape")]
    shape::register(&mut r);
    #[cfg(feature = "k-loss")]
    gather::register(&mut r);
    #[cfg(feature = "k-attention")]
    attention::register(&mut r);
    #[cfg(feature = "k-image")]
    image::register(&mut r);
    #[cfg(feature = "k-loss")]
    loss::register(&mut r);
    #[cfg(feature = "k-loss")]
    training::register(&mut r);
    #[cfg(feature = "k-loss")]
    bitcast::register(&mut r);
    #[cfg(feature = "k-quant")]
    quant::register(&mut r);
    #[cfg(feature = "k-sequence")]
    sequence::register(&mut r);
    #[cfg(feature = "k-text")]
    text::register(&mut r);
    #[cfg(feature = "k-ml")]
    ml::register(&mut r);
    #[cfg(feature = "k-rnn")]
    rnn::register(&mut r);
    r
}
