//! Kernels, one folder per op family, grouped by what the ops do. Each family's `register`
//! adds its ops to the registry.

use crate::kernel::Registry;

pub mod attention;
pub(crate) mod bitcast;
pub mod contrib;
pub mod control;
pub mod conv;
pub(crate) mod dense;
pub mod elementwise;
pub(crate) mod epilogue;
pub mod gather;
pub mod image;
pub mod linalg;
pub mod loss;
pub mod ml;
pub mod norm;
pub mod pool;
pub mod quant;
pub mod random;
pub mod reduce;
pub mod rnn;
pub mod sequence;
pub mod shape;
pub mod signal;
pub(crate) mod support;
pub mod text;
pub mod training;
pub(crate) mod window;

/// A registry with every kernel of this crate.
pub fn registry() -> Registry {
    let mut r = Registry::default();
    control::register(&mut r);
    elementwise::register(&mut r);
    linalg::register(&mut r);
    conv::register(&mut r);
    pool::register(&mut r);
    norm::register(&mut r);
    reduce::register(&mut r);
    shape::register(&mut r);
    gather::register(&mut r);
    attention::register(&mut r);
    contrib::register(&mut r);
    image::register(&mut r);
    loss::register(&mut r);
    training::register(&mut r);
    bitcast::register(&mut r);
    quant::register(&mut r);
    sequence::register(&mut r);
    text::register(&mut r);
    ml::register(&mut r);
    rnn::register(&mut r);
    signal::register(&mut r);
    random::register(&mut r);
    r
}
