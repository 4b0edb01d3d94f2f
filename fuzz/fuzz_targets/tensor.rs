//! TensorProto bytes (the test-data `.pb` files) through decode and conversion.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        vinort::ir::limits::set_memory_limit(256 << 20);
        let _ =
            vinort::ir::limits::guard(|| vinort::ir::tensor_proto::decode_tensor(bytes::Bytes::copy_from_slice(data)));
    });
}
