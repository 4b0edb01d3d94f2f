//! EPContext models written by ONNX Runtime + its OpenVINO EP (issue 14): vinort loads them
//! when the OpenVINO versions match, importing the blobs (no compile of ONNX nodes), with the
//! outputs of the ORT session that compiled them bit for bit; it refuses them by name under
//! another OpenVINO version, and a damaged blob is an error, not a crash.
//!
//! Data: `scripts/gen-ort-context` (run by `scripts/test`) writes, from ONNX Runtime 1.24.1 +
//! OpenVINO EP (OpenVINO 2025.4.1), the context models of mobilenetv2_tiny, bert_tiny and
//! segnet_bench (split: 4 OpenVINO partitions around 3 MaxUnpool nodes) in both embed modes,
//! with ORT's inputs and outputs, to `target/ort-context` (or `$VINORT_ORT_CONTEXT`). Its
//! `openvino.txt` names the OpenVINO 2025.4.1 this binary loads (`OpenVino::library_path`): the
//! `openvino==2025.4.1` wheel, because the OpenVINO that onnxruntime-openvino bundles cannot
//! import CPU blobs at all (it lacks the IR frontend; scripts/gen_ort_context.py says more).
//! One process loads one OpenVINO, so the other-version check runs in a child process of this
//! test binary with the default OpenVINO (`VINORT_OPENVINO_LIB`, 2026.4.1 under scripts/test).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::read_pbs;
use vinort::ir::proto::onnx;
use vinort::ir::proto::prost::Message;
use vinort::openvino::Precision;
use vinort::{Cpu, OpenVino, Provider, Runtime, Session, Tensor};

/// The generated data: its folder and the OpenVINO the contexts were compiled with.
struct Data {
    dir: PathBuf,
    library: PathBuf,
    version: String,
}

fn data() -> Data {
    let dir = std::env::var_os("VINORT_ORT_CONTEXT")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::repo().join("target/ort-context"));
    assert!(
        dir.join(".complete").exists(),
        "test data missing at {}: run scripts/gen-ort-context (scripts/test does)",
        dir.display()
    );
    let text = std::fs::read_to_string(dir.join("openvino.txt")).unwrap();
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k).and_then(|v| v.strip_prefix(' ')))
            .unwrap_or_else(|| panic!("openvino.txt has no '{k}' line"))
            .to_owned()
    };
    Data { library: dir.join(field("library")), version: field("version"), dir }
}

/// The source models: `(name, EPContext nodes, ONNX nodes ORT left to its CPU EP)`.
const MODELS: [(&str, usize, usize); 3] = [("mobilenetv2_tiny", 1, 0), ("bert_tiny", 1, 0), ("segnet_bench", 4, 3)];

/// Every case folder, `<model>_embed<1|0>`, with its counts.
fn cases() -> Vec<(String, usize, usize)> {
    MODELS.iter().flat_map(|&(m, ctx, onnx)| [1, 0].map(|e| (format!("{m}_embed{e}"), ctx, onnx))).collect()
}

/// OpenVINO on the CPU at FP32, as ORT's session was (`precision FP32`); `library`: the
/// OpenVINO to load, else the default search.
fn providers(library: Option<&Path>) -> [Provider; 2] {
    let ov = OpenVino::cpu().precision(Precision::Fp32);
    let ov = match library {
        Some(l) => ov.library_path(l),
        None => ov,
    };
    [ov.error_on_failure(), Cpu::default().into()]
}

fn build(model: &Path, library: Option<&Path>) -> vinort::Result<Session> {
    Runtime::load(model)?.providers(providers(library)).build()
}

/// Runs the case's inputs; `(name, got, want)` per output.
fn run(s: &Session, case: &Path) -> Vec<(String, Tensor, Tensor)> {
    let set = case.join("test_data_set_0");
    let feeds = read_pbs(&set, "input");
    let out = s.run(feeds.iter().map(|(n, t)| (n.as_str(), t))).unwrap();
    read_pbs(&set, "output")
        .into_iter()
        .map(|(name, want)| {
            let got = out.get(&name).unwrap_or_else(|| panic!("no output {name}")).as_tensor().unwrap().clone();
            (name, got, want)
        })
        .collect()
}

/// "bit-identical", or how far apart.
fn compare(got: &Tensor, want: &Tensor) -> Result<(), String> {
    if got.dtype() != want.dtype() || got.shape() != want.shape() {
        return Err(format!("{:?} {:?} vs ORT's {:?} {:?}", got.dtype(), got.shape(), want.dtype(), want.shape()));
    }
    if got.as_bytes() == want.as_bytes() {
        return Ok(());
    }
    let (g, w) = (got.to_f64_vec().unwrap(), want.to_f64_vec().unwrap());
    let differ = g.iter().zip(&w).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
    let max = g.iter().zip(&w).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    Err(format!("{differ} of {} elements differ, max |diff| {max:e}", g.len()))
}

#[test]
fn ort_written_contexts_import_without_compiling_and_match_ort_bit_for_bit() {
    let d = data();
    let mut failures = vec![];
    for (case, contexts, onnx_nodes) in cases() {
        let dir = d.dir.join(&case);
        let s = build(&dir.join("model.onnx"), Some(&d.library)).unwrap_or_else(|e| panic!("{case}: {e}"));
        let loaded = vinort::openvino::devices().unwrap().0;
        assert_eq!(loaded, d.version, "this binary must run the OpenVINO the generator recorded");
        let plan = s.plan();
        println!("{case}:\n{plan}");
        let ov: Vec<_> = plan.partitions.iter().filter(|p| p.provider.starts_with("OpenVino")).collect();
        assert_eq!(ov.len(), contexts, "{case}: one OpenVINO partition per EPContext node:\n{plan}");
        for p in &ov {
            assert_eq!(p.ops.get("com.microsoft::EPContext"), Some(&1), "{case}: {plan}");
            assert_eq!(p.nodes.len(), 1, "{case}: {plan}");
            assert!(
                p.details.contains("imported from its EPContext blob") && p.details.contains("no compile"),
                "{case}: {plan}"
            );
        }
        let cpu: usize = plan.partitions.iter().filter(|p| p.provider == "Cpu").map(|p| p.nodes.len()).sum();
        assert_eq!(cpu, onnx_nodes, "{case}: the ONNX nodes ORT left to its CPU EP run on Cpu:\n{plan}");
        let on_cpu =
            plan.partitions.iter().any(|p| p.provider == "Cpu" && p.ops.keys().any(|o| o.contains("EPContext")));
        assert!(!on_cpu, "{case}: an EPContext node fell to Cpu:\n{plan}");
        for (name, got, want) in run(&s, &dir) {
            if let Err(e) = compare(&got, &want) {
                failures.push(format!("{case} {name}: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "outputs differ from ORT + OpenVINO EP's:\n{}", failures.join("\n"));
}

/// Set in the child process of [`another_openvino_version_refuses_orts_blobs_naming_both`].
const CHILD: &str = "VINORT_ORT_CONTEXT_CHILD";

#[test]
fn another_openvino_version_refuses_orts_blobs_naming_both() {
    let d = data();
    if std::env::var_os(CHILD).is_some() {
        // The child: the default OpenVINO (VINORT_OPENVINO_LIB), nothing loaded before.
        for (case, _, _) in cases() {
            let built = build(&d.dir.join(&case).join("model.onnx"), None);
            let loaded = vinort::openvino::devices().unwrap().0;
            assert!(
                !loaded.starts_with("2025.4."),
                "the child loaded OpenVINO {loaded}, the contexts' own version: set VINORT_OPENVINO_LIB to another"
            );
            let e = built.err().unwrap_or_else(|| panic!("{case}: a 2025.4 context loaded into {loaded}")).to_string();
            assert!(
                e.contains("compiled by OpenVINO 2025.4,")
                    && e.contains(&format!("OpenVINO {loaded} is loaded"))
                    && e.contains("compile the source model again"),
                "{case}: {e}"
            );
            println!("{case}: {e}");
        }
        return;
    }
    let name = "another_openvino_version_refuses_orts_blobs_naming_both";
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("VINORT_ORT_CONTEXT", &d.dir)
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("1 passed"), "the child process failed ({}):\n{text}", out.status);
    println!("{text}");
}

/// Copies a case folder to a temporary one.
fn copy_case(from: &Path) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, tmp.path().join(p.file_name().unwrap())).unwrap();
        }
    }
    tmp
}

/// `(offset, size)` of a partition's blob in an OVEP_BIN container, read as ORT writes it.
fn entry(container: &[u8], partition: &str) -> (usize, usize) {
    let key = [partition.as_bytes(), b"\0"].concat();
    let at = container.windows(key.len()).position(|w| w == key).unwrap() + key.len();
    let int = |name: &str, from: usize| {
        let k = [name.as_bytes(), b"\0"].concat();
        let i = container[from..].windows(k.len()).position(|w| w == k).unwrap() + from;
        let v = i + k.len();
        match container[i - 1] {
            0x10 => i32::from_le_bytes(container[v..v + 4].try_into().unwrap()) as usize,
            _ => i64::from_le_bytes(container[v..v + 8].try_into().unwrap()) as usize,
        }
    };
    (int("data_offset", at), int("size", at))
}

/// The embed_mode 0 case's partition name and blob file.
fn partition_and_file(model: &Path) -> (String, String) {
    let m = onnx::ModelProto::decode(std::fs::read(model).unwrap().as_slice()).unwrap();
    let n = &m.graph.unwrap().node[0];
    let attr = |k: &str| {
        let a = n.attribute.iter().find(|a| a.name.as_deref() == Some(k)).unwrap();
        String::from_utf8(a.s.as_ref().unwrap().to_vec()).unwrap()
    };
    (attr("partition_name"), attr("ep_cache_context"))
}

#[test]
fn a_damaged_ort_blob_is_a_clear_error_or_reported() {
    let d = data();
    let case = d.dir.join("mobilenetv2_tiny_embed0");
    let (partition, file) = partition_and_file(&case.join("model.onnx"));
    let original = std::fs::read(case.join(&file)).unwrap();
    let (offset, size) = entry(&original, &partition);
    let load = |edit: &dyn Fn(&mut Vec<u8>)| {
        let tmp = copy_case(&case);
        let mut bytes = original.clone();
        edit(&mut bytes);
        std::fs::write(tmp.path().join(&file), &bytes).unwrap();
        build(&tmp.path().join("model.onnx"), Some(&d.library)).map(|s| run(&s, &case))
    };
    // ORT's container header and metadata: named by vinort.
    let e = load(&|b| b[8] = 7).expect_err("another container version").to_string();
    assert!(e.contains("OVEP_BIN header is invalid") && e.contains("version 7"), "{e}");
    let e = load(&|b| b.truncate(offset + size / 2)).expect_err("a cut container").to_string();
    assert!(e.contains("lies outside"), "{e}");
    let e = load(&|b| {
        let at = b.windows(partition.len()).position(|w| w == partition.as_bytes()).unwrap();
        b[at] ^= 0x20;
    })
    .expect_err("a renamed entry")
    .to_string();
    assert!(e.contains(&format!("holds no blob for partition '{partition}'")), "{e}");
    // OpenVINO's blob itself: ORT records no checksum, so only what OpenVINO's import checks
    // can be caught. The CPU plugin's blob is a header of six u64 (offset and size of its
    // metadata, weights and model sections), 56 bytes of metadata, the weights from byte 104,
    // then the model (IR XML, obfuscated). Its header and model text are checked (measured
    // with OpenVINO 2025.4.1: "Could not deserialize by device xml header", "Start-end tags
    // mismatch")...
    for at in [offset, offset + size - 16] {
        let e = load(&|b| b[at..at + 8].iter_mut().for_each(|x| *x ^= 0x5a)).expect_err("a damaged blob").to_string();
        assert!(e.contains("could not import its blob") && e.contains(&partition), "byte {at}: {e}");
    }
    // ...but a weight byte is not: the blob imports and gives other answers, silently. (vinort's
    // own contexts carry a CRC-32 for this; ORT's format has nothing to check against.)
    let weights = offset + 104 + 1000;
    let outputs = load(&|b| b[weights] ^= 0x40).expect("OpenVINO imports a blob with a damaged weight");
    assert!(outputs.iter().any(|(_, got, want)| compare(got, want).is_err()), "a damaged weight changed no output");
}
