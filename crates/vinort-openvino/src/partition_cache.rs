//! Partition files: how partitions that are not the whole model file use `cache_dir`.
//!
//! With `cache_dir`, a whole model compiles from its file in one call and OpenVINO's cache
//! keys on the file, so a warm session skips reading the model. A partition of a model has no
//! file: it is serialized and read from memory, and OpenVINO's cache would hash the whole
//! read model, weights included, before it could find its entry, which costs about as much
//! as compiling. So with `cache_dir` vinort writes each partition once as an ONNX file in the
//! cache folder, `vinort-partition-<key>.onnx`, and compiles it from that file: OpenVINO's
//! own cache then keys on the file, and a warm session finds its compiled blob without
//! serializing the partition or reading it. The key covers what determines the partition
//! without reading any weight: the identity (canonical path, size, modification time) of the
//! model file and of the external data files its partition files point into, the partition's nodes and boundary, the compile properties, the device
//! and the OpenVINO version. (Importing an exported blob instead is not an option through
//! the C API: `ov_core_import_model` takes no properties, and the CPU plugin then runs an
//! f32 partition in bf16.)

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use vinort_ir::{Model, PartitionDef};

use crate::fnv::{OFFSET, fnv1a};

/// The partition file for this partition in `dir`, when the model came from a file.
pub fn entry(
    dir: &Path,
    model: &Model,
    part: &PartitionDef,
    device: &str,
    version: &str,
    props: &[(String, String)],
) -> Option<PathBuf> {
    let path = std::fs::canonicalize(model.path.as_ref()?).ok()?;
    let meta = std::fs::metadata(&path).ok()?;
    let mtime = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos();
    let g = &model.graph;
    let mut key = format!(
        "vinort partition cache 1\nopenvino {version}\ndevice {device}\nfile {}\nsize {}\nmtime {mtime}\n",
        path.display(),
        meta.len()
    );
    // Partition files reference weights in the model's external data files (see
    // `crate::export`): their identity is part of the key too.
    for (file, _) in model.weight_files.iter().filter(|(f, _)| *f != path) {
        let meta = std::fs::metadata(file).ok()?;
        let mtime = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos();
        let _ = writeln!(key, "weights {} size {} mtime {mtime}", file.display(), meta.len());
    }
    let mut sorted: Vec<&(String, String)> = props.iter().filter(|(k, _)| k != "CACHE_DIR").collect();
    sorted.sort();
    for (k, v) in sorted {
        let _ = writeln!(key, "prop {k}={v}");
    }
    for ix in &part.nodes {
        let _ = writeln!(key, "node {} {}", ix.index(), g.node(*ix).name);
    }
    for v in &part.inputs {
        let _ = writeln!(key, "in {}", g.value(*v).name);
    }
    for v in &part.outputs {
        let _ = writeln!(key, "out {}", g.value(*v).name);
    }
    // FNV-1a is stable across Rust releases; a second offset basis makes the name 128 bits.
    let (a, b) = (fnv1a(key.as_bytes(), OFFSET), fnv1a(key.as_bytes(), SECOND_OFFSET));
    Some(dir.join(format!("vinort-partition-{a:016x}{b:016x}.onnx")))
}

const SECOND_OFFSET: u64 = 0x6c62_272e_07bb_0142;

/// Writes the entry with `write` to a temporary sibling and renames it into place, so a
/// reader never sees half an entry.
pub fn store<E: From<std::io::Error>>(entry: &Path, write: impl FnOnce(&Path) -> Result<(), E>) -> Result<(), E> {
    let tmp = entry.with_extension(format!("tmp.{}", std::process::id()));
    let r = write(&tmp).and_then(|()| Ok(std::fs::rename(&tmp, entry)?));
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}
