//! The `ort` side of the second pair in docs/migration.md: a fixed dimension, profiling, the
//! model's metadata, an output taken by name from a tagged run, and I/O binding. Built only
//! with `--features anchors`; `ORT_DYLIB_PATH` names the ONNX Runtime library
//! (`scripts/py-env --ovep` installs one with the OpenVINO EP). MobileNetV2-tiny's input is
//! static ([1, 3, 64, 64]), so fixing `batch` changes nothing here; give it a model whose inputs
//! name a `batch` dim (such as `captcha_crnn` of `scripts/gen-wheel-models`) and every provider
//! compiles that batch size.
use ort::ep::OpenVINO;
use ort::memory::Allocator;
use ort::session::{RunOptions, Session};
use ort::value::Tensor;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = ort::init_from(std::env::var("ORT_DYLIB_PATH")?)?.build()?;
    let mut session = Session::builder(&env)?
        .with_execution_providers([OpenVINO::default().with_device_type("CPU").with_precision("FP32").build()])?
        .with_dimension_override("batch", 1)?
        .with_profiling(std::env::temp_dir().join("mobilenet"))?
        .commit_from_file("models/mobilenetv2_tiny/model.onnx")?;

    let metadata = session.metadata()?;
    println!("{:?} from {:?}, version {:?}", metadata.name(), metadata.producer(), metadata.version());
    for key in metadata.custom_keys()? {
        println!("  {key} = {:?}", metadata.custom(&key));
    }
    drop(metadata);
    for input in session.inputs() {
        println!("input {}: {:?} {:?}", input.name(), input.dtype().tensor_type(), input.dtype().tensor_shape());
    }

    let image = Tensor::from_array(([1usize, 3, 64, 64], vec![0.5f32; 3 * 64 * 64]))?;
    let options = RunOptions::new()?.with_tag("first image")?;
    let probabilities = session
        .run_with_options(ort::inputs!["input" => &image], &options)?
        .remove("probabilities")
        .ok_or("no output 'probabilities'")?;
    let (shape, p) = probabilities.try_extract_tensor::<f32>()?;
    println!("probabilities {shape:?}: {p:.4?}");

    let mut binding = session.create_binding()?;
    binding.bind_input("input", &image)?;
    binding.bind_output("probabilities", Tensor::<f32>::new(&Allocator::default(), [1usize, 10])?)?;
    let outputs = session.run_binding(&binding)?;
    println!("bound: {:.4?}", outputs["probabilities"].try_extract_tensor::<f32>()?.1);
    drop(outputs);

    println!("profile: {}", session.end_profiling()?);
    Ok(())
}
