//! Profiling, `ort`'s `with_profiling` and `Session::end_profiling`: a Chrome trace
//! (`chrome://tracing`, Perfetto) of the session in ONNX Runtime's file format, a JSON list of
//! complete events `{"cat", "pid", "tid", "dur", "ts", "ph": "X", "name", "args"}` with times
//! in microseconds from the session's start.
//!
//! vinort records the session's initialization (`session_initialization`: loading is done
//! before the builder exists, so it is not in the trace), every run (`model_run`, with the
//! run's tag) and, inside it, every partition's run (`partition_<i>_kernel_time`, category
//! `Node`, with its provider and node count) and every kernel a Cpu partition runs
//! (`<node>_kernel_time`, category `Node`, with its op and provider, as ONNX Runtime names
//! them, for the nodes as the Cpu optimizer left them: a fused kernel reports its fused op). An
//! OpenVINO partition runs as one compiled model: there the partition is the finest unit
//! vinort times.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value as Json, json};

use crate::error::{Error, Result};
use crate::partition::PlannedPartition;
use crate::session::{Session, SessionBuilder};

impl SessionBuilder {
    /// Profiles the session, like `ort`'s `with_profiling`: its initialization, every run and
    /// every partition's part of it are recorded, and [`Session::end_profiling`] writes them
    /// to `<prefix>_<date>_<time>_<ms>.json` (UTC), a Chrome trace in ONNX Runtime's format. A
    /// profiled session is never shared through an [`Environment`](crate::Environment).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/mobilenetv2_tiny/model.onnx");
    /// # let dir = tempfile::tempdir()?;
    /// let prefix = dir.path().join("mobilenet");
    /// let session = vinort::Runtime::load(model)?.profiling(&prefix).build()?;
    /// let x = vinort::Tensor::from_vec(&[1, 3, 64, 64], vec![0.5f32; 3 * 64 * 64])?;
    /// session.run([("input", x)])?;
    /// let trace = session.end_profiling()?; // e.g. .../mobilenet_2026-05-04_10-11-12_345.json
    /// let text = std::fs::read_to_string(&trace)?;
    /// assert!(text.contains("\"model_run\"") && text.contains("\"session_initialization\""));
    /// # Ok(()) }
    /// ```
    pub fn profiling(mut self, prefix: impl AsRef<Path>) -> SessionBuilder {
        self.profiling = Some(prefix.as_ref().to_owned());
        self
    }
}

impl Session {
    /// Writes the profile of a session built with [`SessionBuilder::profiling`] and returns
    /// the file's path, like `ort`'s `end_profiling`; nothing is recorded afterwards. An
    /// [`Error::Config`] when the session was not profiled or the profile was already written.
    pub fn end_profiling(&self) -> Result<PathBuf> {
        match &self.inner.profiler {
            Some(p) => p.end(),
            None => {
                Err(Error::Config("end_profiling: the session was not built with SessionBuilder::profiling".into()))
            }
        }
    }

    /// When profiling started, in nanoseconds since the Unix epoch (`ort`'s
    /// `profiling_start_ns`); `None` for a session that is not profiled.
    pub fn profiling_start_ns(&self) -> Option<u64> {
        self.inner.profiler.as_ref().map(|p| p.start_ns)
    }
}

/// The events of one profiled session, until they are written.
pub(crate) struct Profiler {
    prefix: PathBuf,
    t0: Instant,
    start_ns: u64,
    /// `None` once written.
    events: Mutex<Option<Vec<Json>>>,
}

impl Profiler {
    /// Starts profiling now.
    pub fn new(prefix: PathBuf) -> Profiler {
        let start_ns = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        Profiler { prefix, t0: Instant::now(), start_ns, events: Mutex::new(Some(vec![])) }
    }

    fn events(&self) -> std::sync::MutexGuard<'_, Option<Vec<Json>>> {
        self.events.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// True until the profile is written.
    pub fn is_on(&self) -> bool {
        self.events().is_some()
    }

    /// Records a complete event from `began` to now.
    fn record(&self, cat: &str, name: String, began: Instant, args: Json) {
        self.record_span(cat, name, began, Instant::now(), args);
    }

    /// Records a complete event from `began` to `ended`.
    fn record_span(&self, cat: &str, name: String, began: Instant, ended: Instant, args: Json) {
        let event = json!({
            "cat": cat,
            "pid": std::process::id(),
            "tid": thread_id(),
            "dur": ended.saturating_duration_since(began).as_micros() as u64,
            "ts": began.saturating_duration_since(self.t0).as_micros() as u64,
            "ph": "X",
            "name": name,
            "args": args,
        });
        if let Some(events) = self.events().as_mut() {
            events.push(event);
        }
    }

    /// Records the session's build, from when profiling started.
    pub fn initialized(&self, partitions: &[PlannedPartition]) {
        let parts: Vec<Json> =
            partitions.iter().map(|p| json!({"provider": p.provider, "node_count": p.nodes.len()})).collect();
        self.record("Session", "session_initialization".into(), self.t0, json!({ "partitions": parts }));
    }

    /// Runs partition `index` and records it.
    pub fn partition<R>(&self, index: usize, planned: &PlannedPartition, run: impl FnOnce() -> R) -> R {
        let began = Instant::now();
        let out = run();
        let args = json!({
            "op_name": "partition",
            "provider": planned.provider,
            "node_count": planned.nodes.len(),
            "partition_index": index,
        });
        self.record("Node", format!("partition_{index}_kernel_time"), began, args);
        out
    }

    /// Records a run that began at `began`.
    pub fn model_run(&self, began: Instant, tag: Option<&str>) {
        let args = tag.map_or_else(|| json!({}), |t| json!({ "run_tag": t }));
        self.record("Session", "model_run".into(), began, args);
    }

    /// Writes the events to `<prefix>_<UTC date>_<time>_<ms>.json` (with `_<n>` added when
    /// that file exists) and stops recording.
    pub fn end(&self) -> Result<PathBuf> {
        let mut guard = self.events();
        let Some(events) = guard.as_ref() else {
            return Err(Error::Config("end_profiling: the profile was already written".into()));
        };
        let stem = format!("{}_{}", self.prefix.display(), utc_stamp(SystemTime::now()));
        let io = |path: &Path, e: std::io::Error| Error::Config(format!("writing the profile {}: {e}", path.display()));
        let mut n = 0;
        let (path, mut file) = loop {
            let path = PathBuf::from(if n == 0 { format!("{stem}.json") } else { format!("{stem}_{n}.json") });
            match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(f) => break (path, f),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
                Err(e) => return Err(io(&path, e)),
            }
        };
        let text = serde_json::to_vec(events).map_err(|e| Error::Config(format!("profile: {e}")))?;
        file.write_all(&text).map_err(|e| io(&path, e))?;
        *guard = None;
        Ok(path)
    }
}

impl vinort_ir::NodeTimes for Profiler {
    /// One event per kernel run, as ONNX Runtime names them: `<node>_kernel_time`, category
    /// `Node`, with the op and provider in its arguments.
    fn node(&self, node: &str, op: &str, provider: &str, began: Instant, ended: Instant) {
        let args = json!({"op_name": op, "provider": provider});
        self.record_span("Node", format!("{node}_kernel_time"), began, ended, args);
    }
}

/// A small number naming the calling thread in traces (Rust has no stable numeric thread id).
fn thread_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local!(static ID: u64 = NEXT.fetch_add(1, Ordering::Relaxed));
    ID.with(|id| *id)
}

/// `YYYY-MM-DD_HH-MM-SS_mmm` in UTC, as ONNX Runtime 1.31 stamps its profile files (it uses
/// local time, which the standard library cannot give).
fn utc_stamp(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (y, m, d) = civil_date((secs / 86_400) as i64);
    let s = secs % 86_400;
    let ms = since.subsec_millis();
    format!("{y:04}-{m:02}-{d:02}_{:02}-{:02}-{:02}_{ms:03}", s / 3600, s % 3600 / 60, s % 60)
}

/// The proleptic Gregorian date of a day counted from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_date(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_of_known_days() {
        // Day numbers from `date -u -d @<seconds>`: the epoch, a leap day, the turn of 2024.
        assert_eq!(civil_date(0), (1970, 1, 1));
        assert_eq!(civil_date(11_016), (2000, 2, 29));
        assert_eq!(civil_date(19_722), (2023, 12, 31));
        assert_eq!(civil_date(19_723), (2024, 1, 1));
        assert_eq!(civil_date(-1), (1969, 12, 31));
        let t = UNIX_EPOCH + std::time::Duration::from_millis(1_709_210_096_007); // 2024-02-29 12:34:56.007 UTC
        assert_eq!(utc_stamp(t), "2024-02-29_12-34-56_007");
    }
}
