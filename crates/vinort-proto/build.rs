//! Compiles the vendored ONNX schema with `protox` (a pure-Rust protobuf compiler), so a fresh
//! machine needs no system `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Read when the script runs, not baked in when it is compiled: a cached build script
    // then still finds the schema after the checkout moves.
    let proto_dir = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    let files = ["onnx.proto", "onnx-data.proto"];
    for f in &files {
        println!("cargo:rerun-if-changed={}", proto_dir.join(f).display());
    }
    let fds = protox::compile(files, [&proto_dir])?;
    let mut cfg = prost_build::Config::new();
    // Every `bytes` field becomes `bytes::Bytes`: decoding from a `Bytes` that owns a memory
    // mapping then slices the mapping instead of copying (this is how raw_data stays zero-copy).
    cfg.bytes(["."]);
    cfg.compile_fds(fds)?;
    Ok(())
}
