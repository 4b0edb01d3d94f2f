//! Runs the ONNX node tests of this family's ops (`tests/data/node/test_<op>*`, without the
//! `_expanded` function bodies) through the Cpu provider and checks them at rtol 1e-3,
//! atol 1e-7.

use crate::test_support::{Cases, NODE_TOL, prefixed, run_node_cases};

/// Test name prefixes of this family's ops.
const PREFIXES: &[&str] = &[
    "test_attention",
    "test_flexattention",
    "test_rotary_embedding",
    "test_swish",
    "test_swiglu",
    "test_linear_attention",
    "test_causal_conv_with_state",
];

#[test]
fn onnx_node_tests() {
    run_node_cases(Cases::Matching(&prefixed(PREFIXES)), &[], NODE_TOL);
}
