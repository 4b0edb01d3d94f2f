//! One resident copy of each weight: a session holds the form its kernels use (packed, or the
//! mapped file itself), not the mapped file *and* an aligned copy *and* a packed copy.
//!
//! Its own test binary with one test, so the process's resident memory is this test's.

mod common;

use common::*;
use vinort::ir::proto::onnx;
use vinort::{Cpu, Runtime, Tensor};

/// What this process holds, in bytes: the C heap's allocated blocks (`mallinfo2`: in use,
/// not what the allocator keeps free for reuse, which would let a session look smaller by
/// reusing memory the test freed) plus the resident pages of mapped files (`RssFile`).
fn held() -> usize {
    // SAFETY: mallinfo2 only reads the allocator's counters.
    let heap = unsafe { libc::mallinfo2() };
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let file_kib: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("RssFile:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    heap.uordblks + heap.hblkhd + file_kib * 1024
}

/// Deterministic weights in [-1, 1).
fn weights(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

const K: usize = 6144;
const H: usize = 1024;
const N: usize = 512;

/// `Y = Gemm(MatMul(X, W1), W2, C, transB=1)` with X `[4, H]`, W1 `[H, K]`, W2 `[N, K]`; the
/// weights' names padded by `pad` characters (which moves where their bytes land in the file).
fn model_bytes(w1: &[f32], w2: &[f32], c: &[f32], pad: (usize, usize)) -> Vec<u8> {
    let (n1, n2) = (format!("W1{}", "_".repeat(pad.0)), format!("W2{}", "_".repeat(pad.1)));
    let graph = onnx::GraphProto {
        name: Some("weights".into()),
        node: vec![
            node("MatMul", "mm", &["X", &n1], &["H"]),
            onnx::NodeProto {
                attribute: vec![vinort::ir::proto::build::attr::int("transB", 1)],
                ..node("Gemm", "gemm", &["H", &n2, "C"], &["Y"])
            },
        ],
        initializer: vec![
            f32_tensor(&n1, &[H as i64, K as i64], w1),
            f32_tensor(&n2, &[N as i64, K as i64], w2),
            f32_tensor("C", &[N as i64], c),
        ],
        input: vec![value_info("X", 1, &[4, H as i64])],
        output: vec![value_info("Y", 1, &[4, N as i64])],
        ..Default::default()
    };
    encode(&model(graph, 13))
}

#[test]
fn a_session_holds_one_resident_copy_of_its_weights() {
    let (w1, w2, c) = (weights(H * K, 1), weights(N * K, 2), weights(N, 3));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weights.onnx");
    // Misaligned weights in the file are the case that used to cost a copy more.
    let misaligned = (0..16).any(|pad| {
        std::fs::write(&path, model_bytes(&w1, &w2, &c, (pad % 4, pad / 4))).unwrap();
        let m = vinort::ir::Model::load(&path).unwrap();
        m.graph.initializers().filter(|(_, t)| t.len() > N).all(|(_, t)| !t.is_aligned())
    });
    assert!(misaligned, "no padding put both weights at a misaligned offset");
    let weight_bytes = (w1.len() + w2.len()) * 4;

    let before = held();
    let session = Runtime::load(&path).unwrap().providers([Cpu::default().threads(1).into()]).build().unwrap();
    let x = weights(4 * H, 4);
    let xt = Tensor::from_vec(&[4, H], x.clone()).unwrap();
    let out = session.run([("X", &xt)]).unwrap();
    let grown = held().saturating_sub(before);

    // The answer is right (the held weights were read through their packed form).
    let y = out[0].as_tensor().unwrap().as_slice::<f32>().unwrap().to_vec();
    for r in 0..4 {
        let h: Vec<f64> = (0..K).map(|k| (0..H).map(|i| x[r * H + i] as f64 * w1[i * K + k] as f64).sum()).collect();
        for j in (0..N).step_by(37) {
            let want = c[j] as f64 + (0..K).map(|k| h[k] * w2[j * K + k] as f64).sum::<f64>();
            let got = y[r * N + j] as f64;
            assert!((got - want).abs() <= 1e-3 * (1.0 + want.abs()), "Y[{r}, {j}] = {got}, want {want}");
        }
    }
    // One copy and some room (the output, buffers, thread stacks), never two.
    let mib = |b: usize| b as f64 / (1 << 20) as f64;
    assert!(
        grown < weight_bytes * 13 / 10,
        "the session added {:.1} MiB of resident memory for {:.1} MiB of weights",
        mib(grown),
        mib(weight_bytes)
    );
}
