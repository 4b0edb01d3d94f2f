//! The vinort side of docs/migration.md: the same program as `migrate_ort.rs`, through
//! `[OpenVino(CPU, FP32), Cpu]`.
use ndarray::Array4;
use vinort::openvino::Precision;
use vinort::{Cpu, GraphOptimizationLevel, OpenVino, Runtime};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let session = Runtime::load("models/mobilenetv2_tiny/model.onnx")?
        .optimization_level(GraphOptimizationLevel::All)
        .intra_threads(2)
        .providers([OpenVino::cpu().precision(Precision::Fp32).into(), Cpu::default().into()])
        .build()?;
    for input in session.inputs() {
        println!("input {}: {:?}", input.name, input.ty);
    }

    let image = Array4::<f32>::from_elem((1, 3, 64, 64), 0.5);
    let outputs = session.run(vinort::inputs!["input" => &image])?; // borrowed, no copy
    let probabilities = outputs["probabilities"].try_extract_array::<f32>()?;
    println!("probabilities {:?}: {probabilities:.4}", probabilities.shape());
    println!("{}", session.plan()); // where each node ran, and why
    Ok(())
}
