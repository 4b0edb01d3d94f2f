//! ONNX Runtime's `OVEP_BIN` container: how ORT's OpenVINO EP (1.23 and later, its
//! `BinManager`) stores the blobs of EPContext nodes, in `ep_cache_context` (embed_mode 1) and
//! in the `<stem>_OpenVINOExecutionProvider.bin` file (embed_mode 0) alike. One container holds
//! the blobs of every partition of a model; a node finds its own by its `partition_name`.
//!
//! # Format (version 1)
//!
//! ```text
//! offset 0   u64 LE magic  "OVEP_BIN" (0x4E49425F5045564F)
//!        8   u64 LE version  1
//!       16   u64 LE header size  40
//!       24   u64 LE offset of the BSON metadata
//!       32   u64 LE size of the BSON metadata
//! BSON { version: "1.<minor>.<patch>", producer: "onnxruntime-openvino-ep-<ORT version>",
//!        blob_metadata_map: { <partition_name>: { data_offset, size } },
//!        weights_metadata_map: { <tensor>: { location, data_offset, size } } (shared weights only) }
//! each blob: OpenVINO's exported model at `data_offset` (absolute, 64 KiB aligned), `size` bytes
//! ```
//!
//! Integers are BSON int32 or int64 (nlohmann::json writes the smallest that fits). A blob that
//! reads its weights from `weights_metadata_map`'s files is not supported: vinort imports
//! self-contained blobs only, and says so.

use bytes::Bytes;

/// The container's first eight bytes.
pub const MAGIC: &[u8; 8] = b"OVEP_BIN";
const HEADER_SIZE: u64 = 40;

/// Why a container could not give a blob.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BinError {
    /// The header is cut short or names another version or size.
    #[error("its OVEP_BIN header is invalid: {0}")]
    Header(String),
    /// The BSON metadata does not parse.
    #[error("its OVEP_BIN metadata (BSON) is invalid: {0}")]
    Metadata(String),
    /// The metadata's schema is another major version.
    #[error("its OVEP_BIN metadata is schema version {0}, but vinort reads version 1.x")]
    Schema(String),
    /// No blob of that partition.
    #[error("its OVEP_BIN container holds no blob for partition '{name}' (it holds: {held})")]
    NoBlob {
        /// The partition asked for.
        name: String,
        /// The partitions it holds.
        held: String,
    },
    /// The blob lies outside the container.
    #[error("its OVEP_BIN entry '{name}' ({offset} + {size} bytes) lies outside the {len}-byte container")]
    OutOfRange {
        /// The partition.
        name: String,
        /// Its offset.
        offset: i64,
        /// Its size.
        size: i64,
        /// The container's length.
        len: usize,
    },
    /// The blobs read weights from other files (ORT's shared-weights contexts).
    #[error(
        "its OVEP_BIN container was written with shared weights ({0} tensors read from external files), \
         which vinort does not import: compile the model without weight sharing"
    )]
    SharedWeights(usize),
}

/// True when `data` is an `OVEP_BIN` container.
pub fn is_container(data: &[u8]) -> bool {
    data.starts_with(MAGIC)
}

/// The blob of partition `name` in the container `data`, sharing its buffer.
pub fn blob(data: &Bytes, name: &str) -> Result<Bytes, BinError> {
    let u64_at = |at: usize| -> Result<u64, BinError> {
        data.get(at..at + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
            .ok_or_else(|| BinError::Header(format!("{} bytes, shorter than its 40-byte header", data.len())))
    };
    if !is_container(data) {
        return Err(BinError::Header("no OVEP_BIN magic".into()));
    }
    let (version, header_size, bson_at, bson_size) = (u64_at(8)?, u64_at(16)?, u64_at(24)?, u64_at(32)?);
    if version != 1 {
        return Err(BinError::Header(format!("version {version}, but vinort reads version 1")));
    }
    if header_size != HEADER_SIZE {
        return Err(BinError::Header(format!("header size {header_size}, expected {HEADER_SIZE}")));
    }
    let bson = usize::try_from(bson_at)
        .ok()
        .zip(usize::try_from(bson_size).ok())
        .and_then(|(at, size)| data.get(at..at.checked_add(size)?))
        .ok_or_else(|| {
            BinError::Header(format!("metadata at {bson_at} + {bson_size} bytes lies outside {} bytes", data.len()))
        })?;
    let meta = Doc::parse(bson).map_err(BinError::Metadata)?;
    let schema = meta.string("version").ok_or_else(|| BinError::Metadata("no 'version'".into()))?;
    if schema.split('.').next() != Some("1") {
        return Err(BinError::Schema(schema));
    }
    if let Some(w) = meta.doc("weights_metadata_map")
        && !w.0.is_empty()
    {
        return Err(BinError::SharedWeights(w.0.len()));
    }
    let blobs = meta.doc("blob_metadata_map").ok_or_else(|| BinError::Metadata("no 'blob_metadata_map'".into()))?;
    let Some(entry) = blobs.doc(name) else {
        let held: Vec<&str> = blobs.0.iter().map(|(k, _)| k.as_str()).collect();
        return Err(BinError::NoBlob { name: name.to_owned(), held: held.join(", ") });
    };
    let field =
        |k: &str| entry.int(k).ok_or_else(|| BinError::Metadata(format!("entry '{name}' has no integer '{k}'")));
    let (offset, size) = (field("data_offset")?, field("size")?);
    let out_of_range = || BinError::OutOfRange { name: name.to_owned(), offset, size, len: data.len() };
    let start = usize::try_from(offset).map_err(|_| out_of_range())?;
    let end = usize::try_from(size).ok().and_then(|s| start.checked_add(s)).ok_or_else(out_of_range)?;
    if end > data.len() {
        return Err(out_of_range());
    }
    Ok(data.slice(start..end))
}

/// A BSON value, as far as the metadata needs one.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Str(String),
    Int(i64),
    Doc(Doc),
    Other,
}

/// A BSON document: its elements in file order.
#[derive(Debug, Clone, PartialEq)]
struct Doc(Vec<(String, Value)>);

impl Doc {
    fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    fn string(&self, key: &str) -> Option<String> {
        match self.get(key)? {
            Value::Str(s) => Some(s.clone()),
            _ => None,
        }
    }

    fn int(&self, key: &str) -> Option<i64> {
        match self.get(key)? {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    fn doc(&self, key: &str) -> Option<&Doc> {
        match self.get(key)? {
            Value::Doc(d) => Some(d),
            _ => None,
        }
    }

    /// Parses the document that fills `b` (bsonspec.org, version 1.1), nested at most 8 deep.
    fn parse(b: &[u8]) -> Result<Doc, String> {
        Doc::parse_at(b, 0).and_then(|(d, len)| match len == b.len() {
            true => Ok(d),
            false => Err(format!("the document is {len} bytes of {}", b.len())),
        })
    }

    /// The document at the start of `b` and its length.
    fn parse_at(b: &[u8], depth: usize) -> Result<(Doc, usize), String> {
        if depth > 8 {
            return Err("nested deeper than 8 documents".into());
        }
        let i32_at = |at: usize| -> Result<i32, String> {
            b.get(at..at + 4).map(|x| i32::from_le_bytes([x[0], x[1], x[2], x[3]])).ok_or("cut short".to_owned())
        };
        let len = usize::try_from(i32_at(0)?).map_err(|_| "negative document length".to_owned())?;
        if len < 5 || len > b.len() || b[len - 1] != 0 {
            return Err(format!("document length {len} does not fit its {} bytes", b.len()));
        }
        let mut elements = vec![];
        let mut at = 4;
        while at < len - 1 {
            let kind = b[at];
            let name_end = b[at + 1..len].iter().position(|&c| c == 0).ok_or("an unterminated element name")? + at + 1;
            let name = String::from_utf8_lossy(&b[at + 1..name_end]).into_owned();
            at = name_end + 1;
            let fixed = |n: usize| if at + n < len { Ok(n) } else { Err(format!("element '{name}' is cut short")) };
            let (value, size) = match kind {
                0x10 => (Value::Int(i64::from(i32_at(at)?)), fixed(4)?),
                0x12 => {
                    let n = fixed(8)?;
                    (Value::Int(i64::from_le_bytes(b[at..at + 8].try_into().map_err(|_| "cut short")?)), n)
                }
                0x02 => {
                    let n =
                        usize::try_from(i32_at(at)?).map_err(|_| format!("string '{name}' has a negative length"))?;
                    let size = fixed(n.checked_add(4).ok_or("overflow")?)?;
                    if n == 0 || b[at + 4 + n - 1] != 0 {
                        return Err(format!("string '{name}' is not terminated"));
                    }
                    (Value::Str(String::from_utf8_lossy(&b[at + 4..at + 4 + n - 1]).into_owned()), size)
                }
                0x03 | 0x04 => {
                    let (d, n) = Doc::parse_at(&b[at..len - 1], depth + 1)?;
                    (if kind == 0x03 { Value::Doc(d) } else { Value::Other }, n)
                }
                0x01 | 0x09 | 0x11 => (Value::Other, fixed(8)?),
                0x08 => (Value::Other, fixed(1)?),
                0x0A => (Value::Other, 0),
                0x05 => {
                    let n =
                        usize::try_from(i32_at(at)?).map_err(|_| format!("binary '{name}' has a negative length"))?;
                    (Value::Other, fixed(n.checked_add(5).ok_or("overflow")?)?)
                }
                other => return Err(format!("element '{name}' has BSON type 0x{other:02x}, which ORT does not write")),
            };
            elements.push((name, value));
            at += size;
        }
        Ok((Doc(elements), len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A BSON document of `(name, encoded value with its type byte first)` elements.
    fn doc(elements: &[(&str, Vec<u8>)]) -> Vec<u8> {
        let mut body = vec![];
        for (name, v) in elements {
            body.push(v[0]);
            body.extend_from_slice(name.as_bytes());
            body.push(0);
            body.extend_from_slice(&v[1..]);
        }
        let mut out = ((body.len() + 5) as i32).to_le_bytes().to_vec();
        out.extend(body);
        out.push(0);
        out
    }

    fn s(v: &str) -> Vec<u8> {
        let mut out = vec![0x02];
        out.extend(((v.len() + 1) as i32).to_le_bytes());
        out.extend(v.as_bytes());
        out.push(0);
        out
    }

    fn i32v(v: i32) -> Vec<u8> {
        [&[0x10][..], &v.to_le_bytes()].concat()
    }

    fn i64v(v: i64) -> Vec<u8> {
        [&[0x12][..], &v.to_le_bytes()].concat()
    }

    fn sub(d: Vec<u8>) -> Vec<u8> {
        [vec![0x03], d].concat()
    }

    /// A container as ORT 1.24 writes it: header, BSON, blobs at 64 KiB (here: 256) alignment.
    fn container(blobs: &[(&str, &[u8])], extra: Vec<(&str, Vec<u8>)>) -> Bytes {
        let mut entries = vec![];
        let mut at = 256;
        for (i, (name, b)) in blobs.iter().enumerate() {
            let offset = if i % 2 == 0 { i32v(at) } else { i64v(at as i64) };
            entries.push((*name, sub(doc(&[("data_offset", offset), ("size", i32v(b.len() as i32))]))));
            at += 256;
        }
        let mut meta = vec![("version", s("1.0.0")), ("producer", s("onnxruntime-openvino-ep-1.24.1"))];
        meta.extend(extra);
        meta.push(("blob_metadata_map", sub(doc(&entries))));
        let bson = doc(&meta);
        let mut out = MAGIC.to_vec();
        for v in [1u64, 40, 40, bson.len() as u64] {
            out.extend(v.to_le_bytes());
        }
        out.extend(&bson);
        for (_, b) in blobs {
            out.resize(out.len().div_ceil(256) * 256, 0);
            out.extend_from_slice(b);
        }
        Bytes::from(out)
    }

    #[test]
    fn finds_each_partitions_blob_by_name() {
        let c = container(&[("p_0", b"first blob"), ("p_1", b"second")], vec![]);
        assert!(is_container(&c));
        assert_eq!(&blob(&c, "p_0").unwrap()[..], b"first blob");
        assert_eq!(&blob(&c, "p_1").unwrap()[..], b"second");
        let e = blob(&c, "p_2").unwrap_err();
        assert_eq!(e, BinError::NoBlob { name: "p_2".into(), held: "p_0, p_1".into() });
    }

    #[test]
    fn refuses_damage_other_versions_and_shared_weights_by_name() {
        let c = container(&[("p", b"blob")], vec![]);
        // Cut anywhere, flipped in the header or the metadata: an error, never a panic.
        for cut in 0..c.len() {
            let _ = blob(&c.slice(..cut), "p");
        }
        for at in 0..300.min(c.len()) {
            let mut bad = c.to_vec();
            bad[at] ^= 0xff;
            let _ = blob(&Bytes::from(bad), "p");
        }
        let mut v2 = c.to_vec();
        v2[8] = 2;
        assert!(matches!(blob(&Bytes::from(v2), "p"), Err(BinError::Header(m)) if m.contains("version 2")));
        let short = c.slice(..c.len() - 1);
        assert!(matches!(blob(&short, "p"), Err(BinError::OutOfRange { .. })));
        let weights = sub(doc(&[("w", sub(doc(&[("location", s("w.bin"))])))]));
        let shared = container(&[("p", b"blob")], vec![("weights_metadata_map", weights)]);
        assert_eq!(blob(&shared, "p"), Err(BinError::SharedWeights(1)));
        assert!(!is_container(b"\x30\0\0\0"));
    }
}
