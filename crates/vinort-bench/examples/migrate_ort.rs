//! The `ort` side of docs/migration.md: MobileNetV2-tiny through ONNX Runtime with its OpenVINO
//! EP, ndarray in and out. Built only with `--features anchors`; `ORT_DYLIB_PATH` names the
//! ONNX Runtime library (`scripts/py-env --ovep` installs one with the OpenVINO EP).
use ndarray::Array4;
use ort::ep::OpenVINO;
use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::TensorRef;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = ort::init_from(std::env::var("ORT_DYLIB_PATH")?)?.build()?;
    let mut session = Session::builder(&env)?
        .with_optimization_level(GraphOptimizationLevel::All)?
        .with_intra_threads(2)?
        .with_execution_providers([OpenVINO::default().with_device_type("CPU").with_precision("FP32").build()])?
        .commit_from_file("models/mobilenetv2_tiny/model.onnx")?;
    for input in session.inputs() {
        println!("input {}: {:?}", input.name(), input.dtype());
    }

    let image = Array4::<f32>::from_elem((1, 3, 64, 64), 0.5);
    let outputs = session.run(ort::inputs!["input" => TensorRef::from_array_view(&image)?])?;
    let probabilities = outputs["probabilities"].try_extract_array::<f32>()?;
    println!("probabilities {:?}: {probabilities:.4}", probabilities.shape());
    Ok(())
}
