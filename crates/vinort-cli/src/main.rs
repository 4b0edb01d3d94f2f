//! `vinort`: run ONNX models through ordered execution providers.

mod perf;
mod plan;
mod save;
mod watchdog;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use vinort::ir::limits;
use vinort::{DType, Dim, Runtime, Session, Tensor, Value};
use vinort_tools::providers::ProviderArgs;
use vinort_tools::stats;
use vinort_tools::testcase::{self, read_tensor};

// Counts heap allocations for `vinort perf`: two relaxed atomic adds per allocation.
#[global_allocator]
static ALLOCATOR: vinort_tools::alloc_count::Counting = vinort_tools::alloc_count::Counting;

#[derive(Parser)]
// `--version` is vinort's own: it also reports the OpenVINO library found, which clap's
// fixed version string cannot.
#[command(
    name = "vinort",
    about = "Run ONNX models through OpenVINO and Rust CPU kernels",
    disable_version_flag = true,
    arg_required_else_help = true
)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    /// Print vinort's version and the version of the OpenVINO library found (or why none was).
    #[arg(short = 'V', long)]
    version: bool,
    /// The most tensor memory vinort may hold at once, in bytes or with a K/M/G suffix
    /// (default: a quarter of the physical memory). A model asking for more fails with an error.
    #[arg(long, global = true, value_name = "BYTES", value_parser = parse_bytes)]
    memory_limit: Option<usize>,
    /// End the command (session build and runs) after this long, with exit code 124: 90s,
    /// 500ms, 2m; 0 (the default) waits for ever.
    #[arg(long, global = true, value_name = "DURATION", value_parser = watchdog::parse_duration)]
    timeout: Option<std::time::Duration>,
    /// The longest one OpenVINO compile or probe may take before its partition is refused
    /// and the model re-partitioned (default 60s; 0 waits for ever).
    #[arg(long, global = true, value_name = "DURATION", value_parser = watchdog::parse_duration)]
    compile_timeout: Option<std::time::Duration>,
}

/// `4096`, `64K`, `512M`, `2G` (powers of 1024).
fn parse_bytes(s: &str) -> std::result::Result<usize, String> {
    let t = s.trim();
    let (digits, shift) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 10),
        Some((i, 'm' | 'M')) => (&t[..i], 20),
        Some((i, 'g' | 'G')) => (&t[..i], 30),
        _ => (t, 0),
    };
    let n: usize = digits.trim().parse().map_err(|_| format!("'{s}' is not a byte count such as 4096, 512M or 2G"))?;
    n.checked_mul(1 << shift).filter(|n| *n > 0).ok_or_else(|| format!("'{s}' is not a byte count that fits"))
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a model once or more: prints the partition plan, output summaries and timing.
    Run {
        /// The model file.
        model: PathBuf,
        #[command(flatten)]
        providers: ProviderArgs,
        /// An input from a TensorProto file: NAME=PATH (repeatable). Other inputs are random.
        #[arg(long = "input", value_name = "NAME=PATH")]
        inputs: Vec<String>,
        /// Feed a test_data_set folder's input_K.pb files and compare the outputs with its
        /// output_K.pb files: exit code 1 when one differs by more than the tolerance.
        #[arg(long)]
        test_data: Option<PathBuf>,
        /// Relative tolerance of the --test-data comparison: |got - ref| <= atol + rtol * |ref|.
        /// Default: tolerance.txt of the data set's parent folder (the test case), else 1e-3.
        #[arg(long, requires = "test_data")]
        rtol: Option<f64>,
        /// Absolute tolerance of the --test-data comparison. Default: the case's tolerance.txt,
        /// else 1e-7.
        #[arg(long, requires = "test_data")]
        atol: Option<f64>,
        /// Write every output of the first run to DIR as output_<i>.pb (ONNX TensorProto) and
        /// <name>.npy.
        #[arg(long, value_name = "DIR")]
        output_dir: Option<PathBuf>,
        /// Value for a symbolic dimension of random inputs: NAME=N (repeatable; default 1).
        #[arg(long = "dim", value_name = "NAME=N")]
        dims: Vec<String>,
        /// Number of timed runs after the first.
        #[arg(short = 'r', long, default_value_t = 10)]
        runs: usize,
        /// Seed for random inputs.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Print the partition plan: which provider runs which nodes and why nodes were refused.
    // The shorter help these subcommands have always shown.
    #[command(mut_arg("providers", |a| a.help("Providers in priority order, comma separated")))]
    #[command(mut_arg("options", |a| a.help("OpenVINO options as \"key|value key|value\"")))]
    Partition {
        /// The model file.
        model: PathBuf,
        #[command(flatten)]
        providers: ProviderArgs,
        /// Output format: text (as `run` prints it), json (docs/plan-format.md), dot
        /// (Graphviz), svg (drawn without Graphviz), html (one self-contained page).
        #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
        format: PlanFormat,
        /// Write to FILE instead of standard output.
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Compile a model and save it as a compiled-context model (ONNX Runtime's EPContext
    /// format): its OpenVINO partitions become EPContext nodes holding their compiled blobs, so
    /// a session of OUT imports them instead of compiling. Run OUT with the same providers.
    #[command(mut_arg("providers", |a| a.help("Providers in priority order, comma separated")))]
    #[command(mut_arg("options", |a| a.help("OpenVINO options as \"key|value key|value\"")))]
    Compile {
        /// The model file.
        model: PathBuf,
        /// Where to write the context model.
        #[arg(short = 'o', long)]
        output: PathBuf,
        #[command(flatten)]
        providers: ProviderArgs,
        /// Write each blob to a file next to OUT (embed_mode 0) instead of inside it.
        #[arg(long)]
        blob_files: bool,
    },
    /// Measure a model like onnxruntime_perf_test: session creation, first inference, latency
    /// percentiles, throughput, peak memory, and allocations and tensor copies per inference.
    Perf(perf::PerfArgs),
    /// The OpenVINO version and devices, or where the library was looked for.
    Devices,
    /// Print a shell completion script: `vinort completions bash > /etc/bash_completion.d/vinort`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Run ONNX test-case folders (model.onnx + test_data_set_N/input_K.pb, output_K.pb), like
    /// onnx_test_runner: one line per case, then "N passed, M failed".
    // The shorter help these subcommands have always shown.
    #[command(mut_arg("providers", |a| a.help("Providers in priority order, comma separated")))]
    #[command(mut_arg("options", |a| a.help("OpenVINO options as \"key|value key|value\"")))]
    Test {
        /// Case folders, or folders of case folders.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        #[command(flatten)]
        providers: ProviderArgs,
        /// Relative tolerance for every case: |got - ref| <= atol + rtol * |ref|. Default: the
        /// case's tolerance.txt (written by vinort's test generators), else 1e-3.
        #[arg(long)]
        rtol: Option<f64>,
        /// Absolute tolerance for every case. Default: the case's tolerance.txt, else 1e-7.
        #[arg(long)]
        atol: Option<f64>,
    },
}

/// `vinort partition --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PlanFormat {
    /// The plan as text.
    Text,
    /// The plan as JSON (docs/plan-format.md).
    Json,
    /// A Graphviz graph.
    Dot,
    /// An SVG picture.
    Svg,
    /// A self-contained HTML page: picture, legend and tables.
    Html,
}

/// The providers of `-e`/`-i`/`--strict`. The message is the whole error: the CLI has always
/// printed it as one line.
fn providers(args: &ProviderArgs) -> Result<Vec<vinort::Provider>> {
    args.build().map_err(|e| anyhow!("{e}"))
}

fn build(model: &Path, args: &ProviderArgs) -> Result<(Session, f64)> {
    build_profiled(model, args, None)
}

/// [`build`], profiling the session into `<profile>_<time>.json` when a prefix is given.
fn build_profiled(model: &Path, args: &ProviderArgs, profile: Option<&Path>) -> Result<(Session, f64)> {
    let t0 = Instant::now();
    let mut builder = Runtime::load(model)
        .with_context(|| format!("loading {}", model.display()))?
        .providers(providers(args)?)
        .cost_model(args.cost_model == vinort_tools::providers::Switch::On);
    if let Some(prefix) = profile {
        builder = builder.profiling(prefix);
    }
    let session = builder.build().with_context(|| format!("building a session for {}", model.display()))?;
    Ok((session, stats::ms(t0.elapsed())))
}

/// A small deterministic generator (xorshift*), enough for random test inputs.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The largest random input `run` makes. A larger one is a model's declared dims gone wrong
/// far more often than a real need, and it would take minutes to make and to run.
const RANDOM_INPUT_MAX: usize = 1 << 30;

fn random_input(info: &vinort::IoInfo, dims: &[(String, usize)], rng: &mut Rng) -> Result<Tensor> {
    let (Some(dtype), Some(shape)) = (info.ty.tensor_dtype(), info.ty.tensor_shape()) else {
        bail!("input '{}' has type {}; give it with --input", info.name, info.ty)
    };
    let shape: Vec<usize> = shape
        .iter()
        .map(|d| match d {
            Dim::Fixed(n) => *n,
            Dim::Symbol(s) => dims.iter().find(|(k, _)| k == s).map_or(1, |(_, v)| *v),
            Dim::Unknown => 1,
        })
        .collect();
    // Declared dims are the model's word: the size is checked before anything is made.
    let bytes = limits::byte_size(&shape, dtype.size().max(1)).unwrap_or(usize::MAX);
    if bytes > RANDOM_INPUT_MAX && bytes <= limits::memory_limit() {
        bail!(
            "input '{}' of type {} and shape {:?} would be {} of random data (more than {}); give it with --input",
            info.name,
            info.ty,
            shape,
            limits::human(bytes),
            limits::human(RANDOM_INPUT_MAX)
        )
    }
    if let Err(r) = limits::check(bytes) {
        bail!(
            "input '{}' of type {} and shape {:?}: {r}; give it with --input, or its symbolic dims with --dim",
            info.name,
            info.ty,
            shape
        )
    }
    let n = limits::byte_size(&shape, 1).unwrap_or(usize::MAX);
    Ok(match dtype {
        DType::F32 => Tensor::from_vec(&shape, (0..n).map(|_| rng.unit() as f32 * 2.0 - 1.0).collect())?,
        DType::F64 => Tensor::from_vec(&shape, (0..n).map(|_| rng.unit() * 2.0 - 1.0).collect())?,
        DType::I64 => Tensor::from_vec(&shape, (0..n).map(|_| (rng.next() % 10) as i64).collect())?,
        DType::I32 => Tensor::from_vec(&shape, (0..n).map(|_| (rng.next() % 10) as i32).collect())?,
        DType::Bool => Tensor::from_vec(&shape, (0..n).map(|_| rng.next() % 2 == 1).collect())?,
        DType::U8 => Tensor::from_vec(&shape, (0..n).map(|_| rng.next() as u8).collect())?,
        other => bail!("random inputs of type {other} are not supported; give '{}' with --input", info.name),
    })
}

/// Outputs larger than this many elements are summarized by type and shape only: their
/// statistics would take a copy of eight bytes per element.
const SUMMARY_MAX: usize = 1 << 24;

fn summary(v: &Value) -> String {
    match v {
        Value::Tensor(t) if t.len() > SUMMARY_MAX => {
            format!("{} {:?} ({} elements: too many to summarize)", t.dtype(), t.shape(), t.len())
        }
        Value::Tensor(t) => {
            let head = match t.to_f64_vec() {
                Ok(x) => {
                    let shown: Vec<String> = x.iter().take(6).map(|v| format!("{v:.6}")).collect();
                    let (mn, mx) =
                        x.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(*v), b.max(*v)));
                    let mean = if x.is_empty() { 0.0 } else { x.iter().sum::<f64>() / x.len() as f64 };
                    format!(
                        "[{}{}] min {mn:.6} max {mx:.6} mean {mean:.6}",
                        shown.join(", "),
                        if x.len() > 6 { ", …" } else { "" }
                    )
                }
                Err(_) => String::new(),
            };
            format!("{} {:?} {head}", t.dtype(), t.shape())
        }
        other => other.value_type().to_string(),
    }
}

/// A `--input NAME=PATH` or test-data file.
fn load_pb(path: &Path) -> Result<Tensor> {
    Ok(read_tensor(path)?.1)
}

struct RunArgs<'a> {
    model: &'a Path,
    providers: &'a ProviderArgs,
    inputs: &'a [String],
    test_data: Option<&'a Path>,
    rtol: Option<f64>,
    atol: Option<f64>,
    output_dir: Option<&'a Path>,
    dims: &'a [String],
    runs: usize,
    seed: u64,
}

fn run(a: RunArgs<'_>) -> Result<()> {
    let RunArgs { model, providers, inputs, test_data, rtol, atol, output_dir, dims, runs, seed } = a;
    let (session, build_ms) = build(model, providers)?;
    println!("model: {}", model.display());
    print!("{}", session.plan());
    println!("session created in {build_ms:.1} ms");
    let dims: Vec<(String, usize)> = dims
        .iter()
        .map(|d| {
            let (k, v) = d.split_once('=').context("--dim wants NAME=N")?;
            Ok((k.to_owned(), v.parse().context("--dim value must be a number")?))
        })
        .collect::<Result<_>>()?;
    let mut given: Vec<(String, Tensor)> = vec![];
    for spec in inputs {
        let (k, p) = spec.split_once('=').context("--input wants NAME=PATH")?;
        given.push((k.to_owned(), load_pb(Path::new(p))?));
    }
    let mut expected: Vec<Value> = vec![];
    let mut tolerance = testcase::Tolerance::default();
    if let Some(dir) = test_data {
        for (i, info) in session.inputs().iter().enumerate() {
            let p = dir.join(format!("input_{i}.pb"));
            if p.exists() {
                given.push((info.name.clone(), load_pb(&p)?));
            }
        }
        expected = read_expected(dir, session.outputs())?;
        // The data set's folder sits in its test case's, next to tolerance.txt.
        let case = dir.parent().unwrap_or(dir);
        let t = testcase::read_tolerance(case, tolerance)?;
        tolerance = testcase::Tolerance { rtol: rtol.unwrap_or(t.rtol), atol: atol.unwrap_or(t.atol) };
    }
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    // An overridable initializer not given keeps its initializer.
    for info in session.inputs().iter().filter(|i| i.required()) {
        if !given.iter().any(|(k, _)| *k == info.name) {
            given.push((info.name.clone(), random_input(info, &dims, &mut rng)?));
        }
    }
    let t0 = Instant::now();
    let out = session.run(given.iter().map(|(k, v)| (k.as_str(), v)))?;
    let first_ms = stats::ms(t0.elapsed());
    for (name, v) in out.iter() {
        println!("output {name}: {}", summary(v));
    }
    let mut mismatched: Vec<String> = vec![];
    for (i, (exp, (name, got))) in expected.iter().zip(out.iter()).enumerate() {
        let verdict = match testcase::compare(got, exp, tolerance) {
            Ok(()) => "ok".to_owned(),
            Err(m) => {
                mismatched.push(format!("output_{i} ({name})"));
                format!("MISMATCH: {m}")
            }
        };
        match (exp, got) {
            (Value::Tensor(exp), Value::Tensor(got)) => {
                let worst = match (exp.to_f64_vec(), got.to_f64_vec()) {
                    (Ok(e), Ok(g)) => {
                        let w = e.iter().zip(&g).map(|(a, b)| (a - b).abs() / (1e-6 + a.abs())).fold(0.0, f64::max);
                        format!(" max relative difference {w:.3e}")
                    }
                    _ => String::new(),
                };
                let same_shape = exp.shape() == got.shape();
                println!(
                    "check output_{i} ({name}): shape {}{worst}: {verdict}",
                    if same_shape { "ok" } else { "MISMATCH" }
                );
            }
            _ => println!("check output_{i} ({name}): {verdict}"),
        }
    }
    if let Some(dir) = output_dir {
        let (written, notes) = save::write_outputs(dir, out.iter())?;
        for n in notes {
            eprintln!("warning: {n}");
        }
        println!("wrote {} file(s) to {}", written.len(), dir.display());
    }
    let mut times = stats::time_runs(runs, || session.run(given.iter().map(|(k, v)| (k.as_str(), v))).map(drop))?;
    times.sort_by(f64::total_cmp);
    println!("first run {first_ms:.3} ms");
    if !times.is_empty() {
        println!(
            "{} runs: min {:.3} ms, median {:.3} ms, max {:.3} ms",
            runs,
            times[0],
            times[times.len() / 2],
            times[times.len() - 1]
        );
    }
    if !mismatched.is_empty() {
        bail!(
            "{} output(s) differ from the test data (rtol {}, atol {}): {}",
            mismatched.len(),
            tolerance.rtol,
            tolerance.atol,
            mismatched.join(", ")
        );
    }
    Ok(())
}

/// The `output_K.pb` files of a data set, read as the model declares output K; more files than
/// outputs is an error.
fn read_expected(dir: &Path, outputs: &[vinort::IoInfo]) -> Result<Vec<Value>> {
    let files: Vec<PathBuf> = (0..).map(|i| dir.join(format!("output_{i}.pb"))).take_while(|p| p.exists()).collect();
    if files.len() > outputs.len() {
        bail!("'{}' has {} output files, but the model has {} output(s)", dir.display(), files.len(), outputs.len());
    }
    files.iter().zip(outputs).map(|(p, info)| Ok(testcase::read_value(p, &info.ty)?)).collect()
}

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("VINORT_LOG").unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .init();
    match cli_main() {
        Ok(()) => watchdog::leave(0),
        Err(e) => {
            eprintln!("error: {}", report(&e));
            watchdog::leave(1)
        }
    }
}

/// `vinort --version`: vinort's version, then the OpenVINO library's or why none was found,
/// OpenVINO's CPU capabilities and the ISA level of the Cpu provider's kernels.
/// Never an error: a missing OpenVINO is an answer here.
fn version_text() -> String {
    let ov = match vinort::openvino::devices() {
        Ok((version, _)) => format!("OpenVINO {version}\n{}", openvino_cpu_line()),
        // The reason lists every place searched, one per line: kept whole, indented.
        Err(e) => {
            let why = e.to_string();
            let lines: Vec<&str> = why.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
            format!("OpenVINO: not found ({})", lines.join("\n  "))
        }
    };
    format!("vinort {}\n{ov}\nCpu provider kernels: {}\n", env!("CARGO_PKG_VERSION"), vinort::isa::isa())
}

/// What OpenVINO's CPU plugin offers and does here: its capabilities, the ISA cap, int8 and
/// the default precision.
fn openvino_cpu_line() -> String {
    let caps = vinort::openvino::device_property("CPU", "OPTIMIZATION_CAPABILITIES")
        .unwrap_or_else(|e| format!("(unknown: {e})"));
    format!("OpenVINO CPU: capabilities {caps}; {}", vinort::openvino::cpu_kind().describe())
}

/// The error and its causes, one per line, leaving out a cause whose text the lines before
/// already hold (vinort's errors print their source inline). Printed by hand instead of by
/// returning the error from `main`, so an error reads the same whether or not RUST_BACKTRACE
/// is set: a stack dump helps nobody who gave a wrong path.
fn report(e: &anyhow::Error) -> String {
    let mut out = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !out.contains(&c) {
            out.push_str("\n  caused by: ");
            out.push_str(&c);
        }
    }
    out
}

fn cli_main() -> Result<()> {
    let cli = Cli::parse();
    if cli.version {
        print!("{}", version_text());
        return Ok(());
    }
    let Some(cmd) = cli.cmd else {
        Cli::command().error(clap::error::ErrorKind::MissingSubcommand, "a command is required").exit()
    };
    if let Some(bytes) = cli.memory_limit {
        limits::set_memory_limit(bytes);
    }
    if let Some(limit) = cli.timeout {
        watchdog::arm(limit);
    }
    // Every session the command builds is built on this thread.
    vinort::ir::deadline::with_compile_timeout(cli.compile_timeout, || command(cmd))
}

fn command(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::Run { model, providers, inputs, test_data, rtol, atol, output_dir, dims, runs, seed } => run(RunArgs {
            model: &model,
            providers: &providers,
            inputs: &inputs,
            test_data: test_data.as_deref(),
            rtol,
            atol,
            output_dir: output_dir.as_deref(),
            dims: &dims,
            runs,
            seed,
        }),
        Cmd::Test { dirs, providers: args, rtol, atol } => {
            // One provider list for every case: a typo is one error, and OpenVINO starts once.
            let list = providers(&args)?;
            let cases = testcase::discover(&dirs)?;
            let mut outcomes = Vec::with_capacity(cases.len());
            for case in &cases {
                // The case's own tolerance, then what the command line overrides.
                let o = match testcase::read_tolerance(&case.dir, testcase::Tolerance::default()) {
                    Ok(t) => {
                        let tol = testcase::Tolerance { rtol: rtol.unwrap_or(t.rtol), atol: atol.unwrap_or(t.atol) };
                        let on = args.cost_model == vinort_tools::providers::Switch::On;
                        testcase::run_case_with(case, || list.clone(), tol, |b| b.cost_model(on))
                    }
                    Err(e) => testcase::CaseOutcome {
                        name: case.name.clone(),
                        status: testcase::Status::Error(e.to_string()),
                        note: None,
                        providers_used: vec![],
                        path: String::new(),
                    },
                };
                println!("{}", testcase::format_line(&o));
                outcomes.push(o);
            }
            println!("{}", testcase::summary_line(&outcomes));
            let failed =
                outcomes.iter().any(|o| matches!(o.status, testcase::Status::Fail(_) | testcase::Status::Error(_)));
            if failed {
                watchdog::exit(1);
            }
            Ok(())
        }
        Cmd::Perf(args) => perf::perf(&args),
        Cmd::Compile { model, output, providers, blob_files } => {
            let (session, ms) = build(&model, &providers)?;
            print!("{}", session.plan());
            let embed = if blob_files { vinort::EmbedMode::Files } else { vinort::EmbedMode::Embedded };
            let t0 = Instant::now();
            session.save_context(&output, embed).with_context(|| format!("saving {}", output.display()))?;
            let contexts = session.plan().partitions.iter().filter(|p| p.provider.starts_with("OpenVino")).count();
            println!(
                "compiled in {ms:.1} ms; wrote {} ({contexts} EPContext node(s)) in {:.1} ms",
                output.display(),
                stats::ms(t0.elapsed())
            );
            Ok(())
        }
        Cmd::Devices => match vinort::openvino::devices() {
            Ok((version, devices)) => {
                println!("OpenVINO {version}");
                for (d, name) in devices {
                    println!("  {d}: {name}");
                }
                println!("{}", openvino_cpu_line());
                println!("Cpu provider kernels: {}", vinort::isa::isa());
                Ok(())
            }
            Err(e) => bail!("{e}"),
        },
        Cmd::Partition { model, providers, format, output } => {
            let (session, ms) = build(&model, &providers)?;
            let text = match format {
                PlanFormat::Text => format!("{}session created in {ms:.1} ms\n", session.plan()),
                PlanFormat::Json => plan::PlanDoc::new(&model, &session).to_json(),
                PlanFormat::Dot => plan::to_dot(&plan::PlanDoc::new(&model, &session)),
                PlanFormat::Svg => plan::to_svg(&plan::PlanDoc::new(&model, &session))?,
                PlanFormat::Html => plan::to_html(&plan::PlanDoc::new(&model, &session))?,
            };
            match output {
                Some(path) => {
                    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
                    println!("wrote {}", path.display());
                }
                None => print!("{text}"),
            }
            Ok(())
        }
        Cmd::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "vinort", &mut std::io::stdout());
            Ok(())
        }
    }
}
