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
//! model file and of the external data files its partition files point into, the partition's nodes and boundary (names and types), the compile properties, the device
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
    // With types: a session that fixed a symbolic dim (`dimension_override`) serializes the
    // same nodes with static shapes, and must not read another session's dynamic file.
    for v in &part.inputs {
        let _ = writeln!(key, "in {} {}", g.value(*v).name, g.value(*v).ty);
    }
    for v in &part.outputs {
        let _ = writeln!(key, "out {} {}", g.value(*v).name, g.value(*v).ty);
    }
    // FNV-1a is stable across Rust releases; a second offset basis makes the name 128 bits.
    let (a, b) = (fnv1a(key.as_bytes(), OFFSET), fnv1a(key.as_bytes(), SECOND_OFFSET));
    Some(dir.join(format!("vinort-partition-{a:016x}{b:016x}.onnx")))
}

const SECOND_OFFSET: u64 = 0x6c62_272e_07bb_0142;

/// Checks that the cache folder exists or can be created and that a file can be written in
/// it (a read-only, full or unreachable folder fails here).
pub fn usable(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = tempfile::Builder::new().prefix(".vinort-write-check").tempfile_in(dir)?;
    std::io::Write::write_all(&mut probe.as_file(), b"vinort")?;
    probe.as_file().sync_all()?;
    probe.close()
}

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

/// The checksum file of a partition file: its length and CRC-32, written after it.
fn seal_path(entry: &Path) -> PathBuf {
    entry.with_extension("onnx.crc32")
}

/// Records the partition file's length and CRC-32 next to it ([`intact`] checks them).
pub fn seal(entry: &Path) -> std::io::Result<()> {
    let (len, crc) = checksum(entry)?;
    store(&seal_path(entry), |tmp| std::fs::write(tmp, format!("{len}\t{crc:08x}\n")))
}

/// True when the partition file is there and matches its checksum file. One that does not
/// (damaged on disk, cut short, or left without a checksum by an interrupted write) is
/// removed with its checksum file so it is written anew: OpenVINO would compile whatever
/// weights it holds.
pub fn intact(entry: &Path) -> bool {
    if !entry.is_file() {
        return false;
    }
    let sealed = std::fs::read_to_string(seal_path(entry)).ok().and_then(|t| {
        let mut f = t.trim().split('\t');
        Some((f.next()?.parse::<u64>().ok()?, u32::from_str_radix(f.next()?, 16).ok()?))
    });
    let ok = sealed.is_some() && checksum(entry).ok() == sealed;
    if !ok {
        tracing::warn!(entry = %entry.display(), "partition file does not match its checksum; writing it anew");
        let _ = std::fs::remove_file(entry);
        let _ = std::fs::remove_file(seal_path(entry));
    }
    ok
}

/// Checksums of the blobs OpenVINO writes in `cache_dir`.
///
/// OpenVINO notices a truncated blob and compiles anew, but it imports a blob with flipped
/// bytes in its weights as it is: measured on 2026.4.1, one bit flipped in a cached
/// MobileNetV2's blob gave `LOADED_FROM_CACHE=YES` and outputs off by 4e-4, silently. So
/// every compile with a cache folder is bracketed: [`Blobs::check`] verifies the blobs an
/// earlier compile of the same partition saw OpenVINO write (listed in a record file next to
/// them, `vinort-partition-<key>.blobs`: name, length, CRC-32) and removes any that no longer
/// match, so OpenVINO compiles anew instead of importing it; [`Blobs::record`] then lists the
/// blobs this compile wrote. A blob no vinort compile saw written (another program's) has no
/// record and is not checked.
#[derive(Debug)]
pub struct Blobs {
    record: PathBuf,
    dir: PathBuf,
    before: Vec<(std::ffi::OsString, u64, Option<std::time::SystemTime>)>,
    /// One line per blob removed because it no longer matched its record.
    pub removed: Vec<String>,
}

/// The CRC-32 and length of a file, read in pieces.
fn checksum(path: &Path) -> std::io::Result<(u64, u32)> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let (mut h, mut len, mut buf) = (crc32fast::Hasher::new(), 0u64, vec![0u8; 1 << 20]);
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok((len, h.finalize()));
        }
        h.update(&buf[..n]);
        len += n as u64;
    }
}

/// The `*.blob` files in `dir` with their length and modification time.
fn blob_files(dir: &Path) -> Vec<(std::ffi::OsString, u64, Option<std::time::SystemTime>)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return vec![] };
    entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "blob"))
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            meta.is_file().then(|| (e.file_name(), meta.len(), meta.modified().ok()))
        })
        .collect()
}

/// The record's lines: blob name, length, CRC-32.
fn read_record(record: &Path) -> Vec<(String, u64, u32)> {
    let Ok(text) = std::fs::read_to_string(record) else { return vec![] };
    text.lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            let (name, len, crc) = (f.next()?, f.next()?.parse().ok()?, u32::from_str_radix(f.next()?, 16).ok()?);
            // Only plain file names: a record never points outside its folder.
            (!name.contains(['/', '\\']) && name.ends_with(".blob")).then(|| (name.to_owned(), len, crc))
        })
        .collect()
}

impl Blobs {
    /// Before a compile whose partition entry is `entry`: removes the recorded blobs that no
    /// longer match their record, and notes the blobs there are now.
    pub fn check(entry: &Path) -> Blobs {
        let record = entry.with_extension("blobs");
        let dir = entry.parent().unwrap_or(Path::new(".")).to_owned();
        let mut removed = vec![];
        for (name, len, crc) in read_record(&record) {
            let path = dir.join(&name);
            let found = match checksum(&path) {
                Ok(found) => found,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    tracing::warn!(blob = %path.display(), error = %e, "cannot read a cached blob");
                    continue;
                }
            };
            if found != (len, crc) {
                let why = if found.0 != len {
                    format!("{} bytes where {len} were written", found.0)
                } else {
                    "its checksum differs from the one taken when it was written".to_owned()
                };
                let outcome = match std::fs::remove_file(&path) {
                    Ok(()) => "removed; compiled anew".to_owned(),
                    Err(e) => format!("could not remove it: {e}"),
                };
                tracing::warn!(blob = %path.display(), why, outcome, "corrupted cache blob");
                removed.push(format!("cache_dir blob {name} was corrupted ({why}): {outcome}"));
            }
        }
        Blobs { before: blob_files(&dir), record, dir, removed }
    }

    /// After the compile: adds the blobs written or rewritten since [`Blobs::check`] to the
    /// record. Best effort: a record that cannot be written only means no check next time.
    pub fn record(self) {
        let written: Vec<_> = blob_files(&self.dir).into_iter().filter(|b| !self.before.contains(b)).collect();
        if written.is_empty() {
            return;
        }
        let mut lines: Vec<(String, u64, u32)> = read_record(&self.record);
        for (name, _, _) in written {
            let Some(name) = name.to_str().map(str::to_owned) else { continue };
            let Ok((len, crc)) = checksum(&self.dir.join(&name)) else { continue };
            lines.retain(|(n, _, _)| *n != name);
            lines.push((name, len, crc));
        }
        let text: String = lines.iter().map(|(n, len, crc)| format!("{n}\t{len}\t{crc:08x}\n")).collect();
        if let Err(e) = store(&self.record, |tmp| std::fs::write(tmp, &text)) {
            tracing::warn!(record = %self.record.display(), error = %e, "could not write the cache blob record");
        }
    }
}
