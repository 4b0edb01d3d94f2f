//! The vinort side of the second pair in docs/migration.md: a fixed dimension, profiling, the
//! model's metadata, an output taken by name from a tagged run, and I/O binding. Run from the
//! repository root: `cargo run -p vinort-bench --example migrate_vinort_more`. MobileNetV2-tiny's
//! input is static ([1, 3, 64, 64]), so fixing `batch` changes nothing here (the plan says so);
//! give it a model whose inputs name a `batch` dim (such as `captcha_crnn` of
//! `scripts/gen-wheel-models`) and every provider compiles that batch size.
use vinort::openvino::Precision;
use vinort::{Cpu, OpenVino, RunOptions, Runtime, Tensor};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let session = Runtime::load("models/mobilenetv2_tiny/model.onnx")?
        .providers([OpenVino::cpu().precision(Precision::Fp32).into(), Cpu::default().into()])
        .dimension_override("batch", 1)
        .profiling(std::env::temp_dir().join("mobilenet"))
        .build()?;

    let metadata = session.metadata();
    println!("{:?} from {:?}, version {:?}", metadata.graph_name, metadata.producer_name, metadata.version);
    for (key, value) in &metadata.custom {
        println!("  {key} = {value:?}");
    }
    for input in session.inputs() {
        println!("input {}: {:?} {:?}", input.name, input.ty.tensor_dtype(), input.ty.tensor_shape());
    }

    let image = Tensor::from_vec(&[1, 3, 64, 64], vec![0.5f32; 3 * 64 * 64])?;
    let options = RunOptions::new().with_tag("first image");
    let probabilities = session
        .run_with_options(vinort::inputs!["input" => &image], &options)?
        .remove("probabilities")
        .ok_or("no output 'probabilities'")?;
    let (shape, p) = probabilities.try_extract_tensor::<f32>()?;
    println!("probabilities {shape:?}: {p:.4?}");

    let mut bound = [0f32; 10];
    let mut binding = session.binding();
    binding.bind_input("input", &image)?;
    binding.bind_output("probabilities", &[1, 10], &mut bound)?;
    session.run_with(&mut binding, &RunOptions::new())?;
    drop(binding);
    println!("bound: {bound:.4?}");

    println!("profile: {}", session.end_profiling()?.display());
    for warning in &session.plan().warnings {
        println!("warning: {warning}"); // here: the `batch` override changed nothing
    }
    Ok(())
}
