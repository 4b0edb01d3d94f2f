//! Runs every (model, runtime) measurement in its own child process and writes the tables.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use vinort_tools::stats::percentile;

use crate::measure::Paired;
use crate::{Measurement, RUNTIMES};

/// Each runtime's measurement (or why it failed) for one model.
type Row = Vec<(String, Result<Measurement, String>)>;

/// A model's paired runs, f32 then default precision (or why each failed).
type Pairs = (Result<Paired, String>, Result<Paired, String>);

/// One child process: `vinort-bench measure ...`, its JSON line parsed, or its error text.
/// Runtimes with a model cache also time a warm second session.
fn child(model: &Path, runtime: &str, runs: usize, warmup: usize, threads: usize) -> Result<Measurement, String> {
    measure_child(model, runtime, runs, warmup, threads, true)
}

fn measure_child(
    model: &Path,
    runtime: &str,
    runs: usize,
    warmup: usize,
    threads: usize,
    warm_cache: bool,
) -> Result<Measurement, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let cache = std::env::temp_dir().join(format!("vinort-bench-cache-{}-{runtime}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let mut cmd = Command::new(exe);
    cmd.arg("measure")
        .args(["--runtime", runtime, "--runs", &runs.to_string(), "--warmup", &warmup.to_string()])
        .args(["--threads", &threads.to_string()]);
    if warm_cache && matches!(runtime, "vinort-ov-f32" | "vinort-ov" | "openvino-f32" | "openvino" | "ort-ovep") {
        cmd.arg("--cache-dir").arg(&cache);
    }
    cmd.arg(model).env("RUST_BACKTRACE", "0");
    eprintln!("measuring {runtime} on {} ...", model.display());
    let out = cmd.output().map_err(|e| e.to_string());
    let _ = std::fs::remove_dir_all(&cache);
    let out = out?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        // anyhow prints "Error: context", then "Caused by:" and the causes: keep the root cause.
        let lines: Vec<&str> = err.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        let cause = match lines.iter().position(|l| *l == "Caused by:") {
            Some(i) => lines[i + 1..]
                .iter()
                .map(|l| l.trim_start_matches(|c: char| c.is_ascii_digit() || c == ':').trim())
                .collect::<Vec<_>>()
                .join("; "),
            None => lines.last().copied().unwrap_or("failed").to_owned(),
        };
        return Err(cause.chars().take(200).collect());
    }
    let line = stdout.lines().rev().find(|l| l.starts_with('{')).ok_or("no measurement printed")?;
    Measurement::from_json(line).map_err(|e| e.to_string())
}

/// One child process: `vinort-bench pair ...`.
fn pair_child(model: &Path, precision: &str, runs: usize, threads: usize) -> Result<Paired, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    eprintln!("pairing vinort with native OpenVINO ({precision}) on {} ...", model.display());
    let out = Command::new(exe)
        .arg("pair")
        .args(["--precision", precision, "--runs", &runs.to_string(), "--threads", &threads.to_string()])
        .arg(model)
        .env("RUST_BACKTRACE", "0")
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(err.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or("failed").to_owned());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().rev().find(|l| l.starts_with('{')).ok_or("no pairs printed")?;
    Paired::from_json(line).map_err(|e| e.to_string())
}

/// Session creation of vinort `[OpenVino(CPU), Cpu]` and of native OpenVINO at one
/// precision, in fresh processes alternating `n` times (vinort first in even pairs, OpenVINO
/// first in odd ones), with no model cache: both pay the library load, the plugin load and a
/// cold compile, at the same moments of the machine.
fn session_pairs(model: &Path, precision: &str, n: usize, threads: usize) -> Result<Paired, String> {
    let (ours, theirs) = if precision == "f32" { ("vinort-ov-f32", "openvino-f32") } else { ("vinort-ov", "openvino") };
    eprintln!("pairing session creation ({precision}) on {} ...", model.display());
    let mut p = Paired { vinort_ms: vec![], native_ms: vec![] };
    for i in 0..n {
        let session = |r: &str| measure_child(model, r, 1, 0, threads, false).map(|m| m.session_ms);
        let (a, b) = if i % 2 == 0 {
            let a = session(ours)?;
            (a, session(theirs)?)
        } else {
            let b = session(theirs)?;
            (session(ours)?, b)
        };
        p.vinort_ms.push(a);
        p.native_ms.push(b);
    }
    Ok(p)
}

/// vinort's and native OpenVINO's runtimes at each precision the targets are judged at.
const PRECISIONS: [(&str, &str, &str); 2] =
    [("vinort-ov-f32", "openvino-f32", "f32"), ("vinort-ov", "openvino", "default precision")];

/// Precision `k`'s pairs judged against a ratio `limit`, when they were measured.
fn paired_verdict(pairs: &Option<Pairs>, k: usize, limit: f64) -> Option<(String, bool)> {
    let (f, d) = pairs.as_ref()?;
    let p = if k == 0 { f } else { d }.as_ref().ok()?;
    let r = p.median_ratio();
    Some((format!("paired median ratio {r:.3} ({:+.1}%)", 100.0 * (r - 1.0)), r <= limit))
}

/// One table row per model with pairs: medians (to `decimals`) and the order-balanced ratio,
/// f32 then default precision.
fn pair_rows(doc: &mut String, results: &[(String, Row)], pairs: &[Option<Pairs>], decimals: usize) {
    for ((model, _), p) in results.iter().zip(pairs) {
        let Some((f, d)) = p else { continue };
        let cells = |p: &Result<Paired, String>| match p {
            Ok(p) => (
                format!(
                    "{:.decimals$} / {:.decimals$}",
                    percentile(&p.vinort_ms, 50.0),
                    percentile(&p.native_ms, 50.0)
                ),
                format!("{:.3}", p.median_ratio()),
            ),
            Err(e) => (format!("failed: {}", e.replace('|', "/")), "—".into()),
        };
        let ((fm, fr), (dm, dr)) = (cells(f), cells(d));
        let _ = writeln!(doc, "| {model} | {fm} | {fr} | {dm} | {dr} |");
    }
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| s.lines().next().map(|l| l.split_whitespace().nth(1).unwrap_or("0").parse::<u64>().unwrap_or(0)))
        .map(|kb| format!("{:.0} GiB", kb as f64 / 1024.0 / 1024.0))
        .unwrap_or_default();
    // The flags that decide which kernels run and how int8 and bf16 behave (the CPU kind),
    // then what the two providers made of them: a number is only comparable within a kind.
    let flags = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let first = flags.lines().find(|l| l.starts_with("flags")).unwrap_or("");
    let isa: Vec<&str> =
        ["avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16"]
            .into_iter()
            .filter(|f| first.split_whitespace().any(|w| w == *f))
            .collect();
    format!(
        "{cpu}, {cores} cores, {mem}, flags {}; Cpu provider kernels {}; OpenVINO CPU: {}",
        isa.join(" "),
        vinort::isa::isa(),
        vinort::openvino::cpu_kind().describe()
    )
}

fn today() -> String {
    Command::new("date")
        .arg("+%Y-%m-%d %H:%M %Z")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// Merges one runtime's measurements from several rounds: every latency pooled (so the
/// median is over all runs of all rounds), and the median round for the one-off times.
fn merge(rounds: Vec<Result<Measurement, String>>) -> Result<Measurement, String> {
    let mut ok = vec![];
    for r in rounds {
        ok.push(r?);
    }
    let median_of = |v: Vec<f64>| percentile(&v, 50.0);
    let mut m = ok.first().cloned().ok_or("no rounds")?;
    m.session_ms = median_of(ok.iter().map(|m| m.session_ms).collect());
    m.first_ms = median_of(ok.iter().map(|m| m.first_ms).collect());
    let warm: Vec<f64> = ok.iter().filter_map(|m| m.session_warm_ms).collect();
    m.session_warm_ms = (!warm.is_empty()).then(|| median_of(warm));
    m.latencies_ms = ok.iter().flat_map(|m| m.latencies_ms.iter().copied()).collect();
    Ok(m)
}

/// Measures everything and renders `docs/performance.md`.
///
/// Each model is measured in `rounds` rounds; a round runs every runtime once, each in its
/// own process, and each round starts the runtime list one place later, so no runtime always
/// runs first (cold caches) or right after the heaviest one. A slow minute of a noisy machine
/// then touches every column instead of one.
#[allow(clippy::too_many_arguments)]
pub fn table(
    models: &[PathBuf],
    runtimes: &[String],
    runs: usize,
    warmup: usize,
    threads: usize,
    rounds: usize,
    pairs: usize,
    session_pairs_n: usize,
    command: &str,
) -> Result<String> {
    let mut results: Vec<(String, Row)> = vec![];
    // Per model: (f32, default precision) paired runs, for models vinort compiles whole.
    let mut paired: Vec<Option<Pairs>> = vec![];
    // Per model: (f32, default precision) session creation in alternating processes.
    let mut sessions: Vec<Option<Pairs>> = vec![];
    for model in models {
        let name = model.file_name().context("model folder name")?.to_string_lossy().into_owned();
        let mut per: Vec<Vec<Result<Measurement, String>>> = runtimes.iter().map(|_| vec![]).collect();
        for round in 0..rounds {
            for k in 0..runtimes.len() {
                let i = (k + round) % runtimes.len();
                eprint!("round {}/{rounds}: ", round + 1);
                per[i].push(child(model, &runtimes[i], runs, warmup, threads));
            }
        }
        let row: Row = runtimes.iter().cloned().zip(per.into_iter().map(merge)).collect();
        let whole =
            row.iter().any(|(r, m)| r.starts_with("vinort-ov") && m.as_ref().is_ok_and(|m| !m.note.contains(" -> ")));
        paired.push(
            (pairs > 0 && whole)
                .then(|| (pair_child(model, "f32", pairs, threads), pair_child(model, "default", pairs, threads))),
        );
        sessions.push((session_pairs_n > 0 && whole).then(|| {
            (
                session_pairs(model, "f32", session_pairs_n, threads),
                session_pairs(model, "default", session_pairs_n, threads),
            )
        }));
        results.push((name, row));
    }
    let mut doc = String::new();
    let label = |r: &str| RUNTIMES.iter().find(|(n, _)| *n == r).map_or(r.to_owned(), |(_, l)| (*l).to_owned());
    let _ = writeln!(
        doc,
        "# Performance\n\n\
         Generated by `{command}` on {} — do not edit by hand.\n\n\
         Machine: {}.\n\
         Batch 1; inputs from each model's `test_data_set_0`; {threads} threads for every runtime. \
         Each runtime runs in its own process (`vinort-bench measure`: {warmup} warm-up runs, then \
         {runs} timed runs), {rounds} times per model, interleaved: round after round every runtime \
         runs once, each round starting one runtime later. Latency is the median (p90) of all \
         {total} timed runs of a runtime; session creation and first inference are the median \
         round. All in this one sitting: the machine is noisy, so compare within this table, not \
         across runs.\n",
        today(),
        machine(),
        total = runs * rounds
    );
    let _ = writeln!(doc, "## Latency, median ms (p90 in brackets)\n");
    let _ = writeln!(doc, "| model | {} |", runtimes.iter().map(|r| label(r)).collect::<Vec<_>>().join(" | "));
    let _ = writeln!(doc, "|---|{}", "---|".repeat(runtimes.len()));
    for (model, row) in &results {
        let cells: Vec<String> = row
            .iter()
            .map(|(_, m)| match m {
                Ok(m) => format!("{:.3} ({:.3})", m.median(), percentile(&m.latencies_ms, 90.0)),
                Err(e) => format!("failed: {}", e.replace('|', "/")),
            })
            .collect();
        let _ = writeln!(doc, "| {model} | {} |", cells.join(" | "));
    }
    let find = |row: &[(String, Result<Measurement, String>)], r: &str| -> Option<Measurement> {
        row.iter().find(|(n, _)| n == r).and_then(|(_, m)| m.as_ref().ok().cloned())
    };
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
        _ => "—".into(),
    };
    let _ = writeln!(
        doc,
        "\n## Ratios (latency of vinort ÷ latency of the other; below 1.00 means vinort is faster)\n\n\
         | model | vinort OV f32 ÷ OpenVINO f32 | vinort OV default ÷ OpenVINO default | vinort OV f32 ÷ ORT+OVEP | vinort [Cpu] ÷ ORT CPU EP |\n|---|---|---|---|---|"
    );
    for (model, row) in &results {
        let med = |r: &str| find(row, r).map(|m| m.median());
        let _ = writeln!(
            doc,
            "| {model} | {} | {} | {} | {} |",
            ratio(med("vinort-ov-f32"), med("openvino-f32")),
            ratio(med("vinort-ov"), med("openvino")),
            ratio(med("vinort-ov-f32"), med("ort-ovep")),
            ratio(med("vinort-cpu"), med("ort-cpu")),
        );
    }
    let header = "| model | f32: vinort / OpenVINO median ms | f32 ratio | default precision: vinort / OpenVINO median ms | default ratio |\n|---|---|---|---|---|";
    if paired.iter().any(Option::is_some) {
        let _ = writeln!(
            doc,
            "\n## vinort against native OpenVINO in one process (paired)\n\n\
             `vinort-bench pair`: vinort `[OpenVino(CPU), Cpu]` and the same model compiled whole by \
             OpenVINO's C API with the same properties (f32: `INFERENCE_PRECISION_HINT=f32` and \
             `DYNAMIC_QUANTIZATION_GROUP_SIZE=0`, as vinort's precision FP32 sets them) live in one process \
             and run alternately, {pairs} pairs per precision \
             after warm-up, so both see the same moments of the machine. The ratio is vinort's latency ÷ \
             OpenVINO's, order-balanced: the geometric mean of its median over the pairs vinort ran \
             first and its median over the pairs OpenVINO ran first (the second run of a pair is \
             slower while the first one's threads wind down). This is what the 3% target is judged on.\n\n{header}"
        );
        pair_rows(&mut doc, &results, &paired, 3);
    }
    if sessions.iter().any(Option::is_some) {
        let _ = writeln!(
            doc,
            "\n## Session creation against native OpenVINO (paired processes)\n\n\
             For each model vinort compiles whole: vinort `[OpenVino(CPU), Cpu]` and native OpenVINO \
             (`compile_model` from the file) each create a session in a fresh process, {session_pairs_n} \
             times alternating (each pays the library and plugin load and a cold compile; no model cache). \
             The ratio is vinort's ÷ OpenVINO's, order-balanced as above. vinort hands OpenVINO the model \
             from memory with its weights by address, which spares OpenVINO's reader copying every weight \
             out of the file. This is what the session-creation target is judged on.\n\n{header}"
        );
        pair_rows(&mut doc, &results, &sessions, 1);
    }
    let _ = writeln!(doc, "\n## Targets (issues 5 and 13), judged on this run\n");
    let _ = writeln!(doc, "| model | target | measured | met |\n|---|---|---|---|");
    for (((model, row), pair), session) in results.iter().zip(&paired).zip(&sessions) {
        let get = |r: &str| find(row, r);
        let mut check = |target: &str, measured: Option<(String, bool)>| {
            let (text, ok) = measured.unwrap_or(("not measured".into(), false));
            let _ = writeln!(doc, "| {model} | {target} | {text} | {} |", if ok { "yes" } else { "**no**" });
        };
        let lat = |a: &str, b: &str| get(a).zip(get(b)).map(|(a, b)| (a.median(), b.median()));
        // A model vinort splits between providers is judged by the partitioned-model target;
        // native OpenVINO cannot compile such a model whole.
        let partitioned = get("vinort-ov-f32").is_some_and(|m| m.note.contains(" -> "));
        if !partitioned {
            for (k, (ours, theirs, what)) in PRECISIONS.into_iter().enumerate() {
                // Judged on the paired run when there is one; else on the separate processes.
                let measured = paired_verdict(pair, k, 1.03).or_else(|| {
                    lat(ours, theirs).map(|(a, b)| {
                        (format!("{:.3} vs {:.3} ms ({:+.1}%)", a, b, 100.0 * (a / b - 1.0)), a <= b * 1.03)
                    })
                });
                check(&format!("latency within 3% of native OpenVINO ({what})"), measured);
            }
            check(
                "latency no slower than ORT + OpenVINO EP",
                lat("vinort-ov-f32", "ort-ovep").map(|(a, b)| (format!("{a:.3} vs {b:.3} ms"), a <= b)),
            );
            for (k, (ours, theirs, what)) in PRECISIONS.into_iter().enumerate() {
                // Judged on the alternating processes when there are some; else on the rounds.
                let measured = paired_verdict(session, k, 1.0).or_else(|| {
                    get(ours).zip(get(theirs)).map(|(a, b)| {
                        (format!("{:.0} vs {:.0} ms", a.session_ms, b.session_ms), a.session_ms <= b.session_ms)
                    })
                });
                check(&format!("session creation no slower than native OpenVINO ({what})"), measured);
            }
        } else {
            check(
                "partitioned model faster than ORT + OpenVINO EP",
                match (get("vinort-ov-f32"), row.iter().find(|(n, _)| n == "ort-ovep").map(|(_, m)| m)) {
                    (Some(a), Some(Ok(b))) => {
                        Some((format!("{:.3} vs {:.3} ms", a.median(), b.median()), a.median() < b.median()))
                    }
                    (Some(a), Some(Err(e))) => {
                        Some((format!("{:.3} ms vs ORT+OVEP cannot run it ({e})", a.median()), true))
                    }
                    _ => None,
                },
            );
        }
        check(
            "warm cache_dir session at most 30% of cold",
            get("vinort-ov-f32").and_then(|a| {
                a.session_warm_ms.map(|w| (format!("{:.0}%", 100.0 * w / a.session_ms), w <= 0.3 * a.session_ms))
            }),
        );
        check(
            "[Cpu] within 1.2x of ORT CPU EP",
            lat("vinort-cpu", "ort-cpu").map(|(a, b)| (format!("{:.2}x", a / b), a <= 1.2 * b)),
        );
        if partitioned {
            check(
                "partitioned model faster than ORT CPU EP",
                lat("vinort-ov-f32", "ort-cpu").map(|(a, b)| (format!("{a:.3} vs {b:.3} ms"), a < b)),
            );
        }
        check(
            "at most 20 heap allocations per [Cpu] inference",
            get("vinort-cpu").and_then(|m| m.per_run).map(|p| (format!("{:.1}", p.heap_allocs), p.heap_allocs <= 20.0)),
        );
    }
    let _ = writeln!(
        doc,
        "\n## Session creation, ms (cold; warm model cache in brackets where the runtime has one)\n\n\
         | model | {} |\n|---|{}",
        runtimes.iter().map(|r| label(r)).collect::<Vec<_>>().join(" | "),
        "---|".repeat(runtimes.len())
    );
    for (model, row) in &results {
        let cells: Vec<String> = row
            .iter()
            .map(|(_, m)| match m {
                Ok(m) => match m.session_warm_ms {
                    Some(w) => format!("{:.1} ({:.1}, {:.0}%)", m.session_ms, w, 100.0 * w / m.session_ms),
                    None => format!("{:.1}", m.session_ms),
                },
                Err(_) => "—".into(),
            })
            .collect();
        let _ = writeln!(doc, "| {model} | {} |", cells.join(" | "));
    }
    let _ = writeln!(
        doc,
        "\n## First inference, ms\n\n| model | {} |\n|---|{}",
        runtimes.iter().map(|r| label(r)).collect::<Vec<_>>().join(" | "),
        "---|".repeat(runtimes.len())
    );
    for (model, row) in &results {
        let cells: Vec<String> =
            row.iter().map(|(_, m)| m.as_ref().map_or("—".into(), |m| format!("{:.2}", m.first_ms))).collect();
        let _ = writeln!(doc, "| {model} | {} |", cells.join(" | "));
    }
    let vinort_runtimes: Vec<&String> = runtimes.iter().filter(|r| r.starts_with("vinort")).collect();
    if !vinort_runtimes.is_empty() {
        let _ = writeln!(
            doc,
            "\n## Allocations and copies per inference (vinort, steady state)\n\n\
             Averaged over the timed runs of the first round: Rust heap allocations (a counting global \
             allocator; OpenVINO's own C++ allocations are not seen), tensor buffers allocated, tensor \
             buffers reused from vinort's buffer pool, tensor copies. `vinort perf MODEL` prints the same \
             counts for any model.\n\n| model | {} |\n|---|{}",
            vinort_runtimes.iter().map(|r| label(r)).collect::<Vec<_>>().join(" | "),
            "---|".repeat(vinort_runtimes.len())
        );
        for (model, row) in &results {
            let cells: Vec<String> = vinort_runtimes
                .iter()
                .map(|r| match find(row, r).and_then(|m| m.per_run) {
                    Some(p) => format!(
                        "{:.1} heap, {:.1} buffers, {:.1} reused, {:.1} copies",
                        p.heap_allocs, p.tensor_buffers, p.tensor_reuses, p.tensor_copies
                    ),
                    None => "—".into(),
                })
                .collect();
            let _ = writeln!(doc, "| {model} | {} |", cells.join(" | "));
        }
    }
    let _ = writeln!(
        doc,
        "\n## Reproducing\n\n\
         - This document: `{command}` (environment: `RUNS`, `ROUNDS`, `WARMUP`, `THREADS`, `OUT`). It \
         creates the private Python environments (`scripts/py-env`: onnxruntime 1.31.1 + openvino \
         2026.4.1; `scripts/py-env --ovep`: onnxruntime-openvino 1.24.1), generates the models \
         (`scripts/gen-bench-models`, seeded), builds `vinort-bench --features anchors` and runs \
         `vinort-bench table`.\n\
         - One runtime on one model: `vinort-bench measure --runtime vinort-ov-f32 models/generated/resnet50` \
         (runtimes: {}).\n\
         - vinort against native OpenVINO in one process: `vinort-bench pair --precision f32 models/generated/resnet50`.\n\
         - Criterion benches: `cargo bench` (latency, session, throughput, kernels, cpu_models, openvino).\n\
         - The perf_test equivalent: `vinort perf models/generated/resnet50 -e openvino,cpu -i \"precision|FP32\" -m duration -t 10`.\n\n\
         Reading the ratios: a ratio is vinort's latency ÷ the other runtime's, so below 1.00 vinort is \
         faster. Separate processes minutes apart differ by up to ±15% on this machine for the same \
         runtime, so the vinort ÷ native OpenVINO target is judged on the paired run above, where both \
         share every moment; ONNX Runtime cannot share a process with OpenVINO 2026.4 (the OpenVINO EP \
         bundles OpenVINO 2025.4), so the ORT comparisons are between processes and carry that noise.",
        RUNTIMES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
    );
    let _ = writeln!(doc, "\n## What ran where\n");
    for (model, row) in &results {
        for (r, m) in row {
            let note = match m {
                Ok(m) => m.note.clone(),
                Err(e) => format!("failed: {e}"),
            };
            let _ = writeln!(doc, "- {model}, {}: {note}", label(r));
        }
    }
    Ok(doc)
}
