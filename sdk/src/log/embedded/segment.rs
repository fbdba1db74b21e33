//! The on-disk batch format and the scan that validates a segment file.
//!
//! A segment file is named after the offset of its first record (`{base:020}.seg`) and holds
//! batches back to back. One batch, little-endian:
//!
//! ```text
//! 0  magic       u32  "ALB1"
//! 4  body_len    u32  bytes of body after this header
//! 8  base_offset u64  offset of the batch's first record
//! 16 count       u32  records in the batch
//! 20 body_crc    u32  CRC32C of the body
//! 24 header_crc  u32  CRC32C of bytes 0..24
//! 28 body        count × (len u32, bytes)
//! ```
//!
//! The header has its own checksum so a flipped length can never be mistaken for a short
//! (torn) batch and silently cut the log there.

use std::ops::Range;
use std::path::Path;

use bytes::Bytes;

use crate::error::{Error, ErrorKind, Result};

/// Bytes in a batch header.
pub(crate) const HEADER_LEN: usize = 28;
const MAGIC: u32 = u32::from_le_bytes(*b"ALB1");

/// A decoded, checksum-verified batch header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub body_len: u32,
    pub base_offset: u64,
    pub count: u32,
    pub body_crc: u32,
}

impl Header {
    /// Bytes of the whole batch, header included.
    pub fn batch_len(&self) -> usize {
        HEADER_LEN + self.body_len as usize
    }
}

/// Append the encoding of a batch of `records` starting at `base_offset` to `out`.
/// Returns the number of bytes added.
pub(crate) fn encode_batch(
    out: &mut Vec<u8>,
    base_offset: u64,
    records: &[Bytes],
) -> Result<usize> {
    let start = out.len();
    let body_len: usize = records.iter().map(|r| 4 + r.len()).sum();
    let too_big = || Error::new(ErrorKind::InvalidParams, "batch larger than 4 GiB");
    let body_len32 = u32::try_from(body_len).map_err(|_| too_big())?;
    let count = u32::try_from(records.len()).map_err(|_| too_big())?;
    out.reserve(HEADER_LEN + body_len);
    out.resize(start + HEADER_LEN, 0);
    for record in records {
        // Each record is shorter than the whole body, which fits in u32.
        out.extend_from_slice(&(record.len() as u32).to_le_bytes());
        out.extend_from_slice(record);
    }
    let body_crc = crc32c::crc32c(&out[start + HEADER_LEN..]);
    let header = &mut out[start..start + HEADER_LEN];
    header[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    header[4..8].copy_from_slice(&body_len32.to_le_bytes());
    header[8..16].copy_from_slice(&base_offset.to_le_bytes());
    header[16..20].copy_from_slice(&count.to_le_bytes());
    header[20..24].copy_from_slice(&body_crc.to_le_bytes());
    let header_crc = crc32c::crc32c(&header[0..24]);
    header[24..28].copy_from_slice(&header_crc.to_le_bytes());
    Ok(HEADER_LEN + body_len)
}

/// Decode a header, or `None` if its checksum or magic is wrong.
pub(crate) fn decode_header(bytes: &[u8]) -> Option<Header> {
    let bytes = bytes.get(..HEADER_LEN)?;
    let u32_at = |i: usize| {
        let mut b = [0u8; 4];
        b.copy_from_slice(&bytes[i..i + 4]);
        u32::from_le_bytes(b)
    };
    if u32_at(0) != MAGIC || u32_at(24) != crc32c::crc32c(&bytes[0..24]) {
        return None;
    }
    let mut base = [0u8; 8];
    base.copy_from_slice(&bytes[8..16]);
    Some(Header {
        body_len: u32_at(4),
        base_offset: u64::from_le_bytes(base),
        count: u32_at(16),
        body_crc: u32_at(20),
    })
}

/// Split a verified body into its records, each made by `record` from its byte range in
/// `body`. `None` if the record lengths do not add up to `count` records filling the body
/// exactly.
pub(crate) fn split_body<T>(
    body: &[u8],
    count: u32,
    mut record: impl FnMut(Range<usize>) -> T,
) -> Option<Vec<T>> {
    let mut records = Vec::with_capacity(count as usize);
    let mut pos = 0usize;
    for _ in 0..count {
        let len_bytes = body.get(pos..pos + 4)?;
        let mut b = [0u8; 4];
        b.copy_from_slice(len_bytes);
        let len = u32::from_le_bytes(b) as usize;
        let end = (pos + 4).checked_add(len)?;
        if end > body.len() {
            return None;
        }
        records.push(record(pos + 4..end));
        pos = end;
    }
    (pos == body.len()).then_some(records)
}

/// Decode a whole batch read back from `file` at byte `pos`, verifying both checksums and
/// that it starts at `expected_base`. Any mismatch is [`ErrorKind::Corrupt`]. The records
/// are slices of `batch` (no copy).
pub(crate) fn decode_batch(
    batch: Bytes,
    file: &Path,
    pos: u64,
    expected_base: u64,
) -> Result<Vec<Bytes>> {
    let count = verify_batch(&batch, file, pos, expected_base)?;
    let body = batch.slice(HEADER_LEN..);
    split_body(&body, count, |range| body.slice(range))
        .ok_or_else(|| corrupt_at(file, pos, "record lengths do not match the batch"))
}

/// [`decode_batch`] for bytes borrowed from a segment map: each record is copied out, and
/// nothing else is allocated.
pub(crate) fn decode_batch_copied(
    batch: &[u8],
    file: &Path,
    pos: u64,
    expected_base: u64,
) -> Result<Vec<Bytes>> {
    let count = verify_batch(batch, file, pos, expected_base)?;
    let body = &batch[HEADER_LEN..];
    split_body(body, count, |range| Bytes::copy_from_slice(&body[range]))
        .ok_or_else(|| corrupt_at(file, pos, "record lengths do not match the batch"))
}

/// Check a batch's header checksum, length, base offset and body checksum; its record count.
fn verify_batch(batch: &[u8], file: &Path, pos: u64, expected_base: u64) -> Result<u32> {
    let corrupt = |what: &str| corrupt_at(file, pos, what);
    let header = decode_header(batch).ok_or_else(|| corrupt("bad batch header checksum"))?;
    if header.batch_len() != batch.len() {
        return Err(corrupt("batch length differs from the index"));
    }
    if header.base_offset != expected_base {
        return Err(corrupt("batch base offset differs from the index"));
    }
    if crc32c::crc32c(&batch[HEADER_LEN..]) != header.body_crc {
        return Err(corrupt("bad batch body checksum"));
    }
    Ok(header.count)
}

/// The typed error for bad stored bytes: names the file and the byte offset.
pub(crate) fn corrupt_at(file: &Path, pos: u64, what: &str) -> Error {
    Error::new(
        ErrorKind::Corrupt,
        format!("{what} in {} at byte {pos}", file.display()),
    )
}

/// A batch found by [`scan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ScannedBatch {
    pub pos: u64,
    pub base_offset: u64,
    pub count: u32,
    pub len: u32,
}

/// What is wrong at the end of the valid part of a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Damage {
    /// An unfinished last write: a short header, a batch running past the end of the file,
    /// a final batch whose body checksum fails, or zero fill. Safe to cut.
    TornTail(String),
    /// Bad bytes with valid-looking data after them, or a batch out of sequence: the disk
    /// or something else changed acknowledged data.
    Corrupt(String),
}

/// The result of scanning one segment's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Scan {
    pub batches: Vec<ScannedBatch>,
    /// Bytes from the start that hold valid batches.
    pub valid_len: u64,
    /// The offset after the last valid batch.
    pub next_offset: u64,
    /// `None` if the whole file is valid.
    pub damage: Option<Damage>,
}

/// Walk the batches of a segment whose first record should be `base_offset`.
pub(crate) fn scan(bytes: &[u8], base_offset: u64) -> Scan {
    let mut batches = Vec::new();
    let mut pos = 0usize;
    let mut next = base_offset;
    let damage = loop {
        let rest = &bytes[pos..];
        if rest.is_empty() {
            break None;
        }
        if rest.len() < HEADER_LEN {
            break Some(Damage::TornTail(format!(
                "{} bytes of a batch header",
                rest.len()
            )));
        }
        let Some(header) = decode_header(rest) else {
            if rest.iter().all(|b| *b == 0) {
                break Some(Damage::TornTail(format!("{} zero bytes", rest.len())));
            }
            break Some(Damage::Corrupt("bad batch header checksum".into()));
        };
        if header.base_offset != next {
            break Some(Damage::Corrupt(format!(
                "batch starts at offset {} where {next} was expected",
                header.base_offset
            )));
        }
        if rest.len() < header.batch_len() {
            break Some(Damage::TornTail(format!(
                "a batch of {} bytes cut at {}",
                header.batch_len(),
                rest.len()
            )));
        }
        let body = &rest[HEADER_LEN..header.batch_len()];
        if crc32c::crc32c(body) != header.body_crc {
            if rest.len() == header.batch_len() {
                break Some(Damage::TornTail(
                    "the last batch's body checksum fails".into(),
                ));
            }
            break Some(Damage::Corrupt("bad batch body checksum".into()));
        }
        if split_body(body, header.count, |_| ()).is_none() {
            break Some(Damage::Corrupt(
                "record lengths do not match the batch".into(),
            ));
        }
        batches.push(ScannedBatch {
            pos: pos as u64,
            base_offset: header.base_offset,
            count: header.count,
            len: header.batch_len() as u32,
        });
        pos += header.batch_len();
        next += u64::from(header.count);
    };
    Scan {
        batches,
        valid_len: pos as u64,
        next_offset: next,
        damage,
    }
}

/// The file name of the segment whose first record is `base_offset`.
pub(crate) fn file_name(base_offset: u64) -> String {
    format!("{base_offset:020}.seg")
}

/// The base offset a segment file name encodes, if it is one.
pub(crate) fn parse_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".seg")?;
    (digits.len() == 20).then_some(())?;
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn batch(base: u64, records: &[&str]) -> Vec<u8> {
        let records: Vec<Bytes> = records.iter().map(|r| Bytes::from(r.to_string())).collect();
        let mut out = Vec::new();
        encode_batch(&mut out, base, &records).unwrap();
        out
    }

    fn two_batches() -> Vec<u8> {
        let mut bytes = batch(10, &["a", "bb"]);
        bytes.extend(batch(12, &["ccc"]));
        bytes
    }

    #[test]
    fn round_trips_a_batch() {
        let bytes = batch(7, &["x", "", "yz"]);
        let records = decode_batch(Bytes::from(bytes), Path::new("f"), 0, 7).unwrap();
        assert_eq!(
            records,
            vec![Bytes::from("x"), Bytes::new(), Bytes::from("yz")]
        );
    }

    #[test]
    fn scans_valid_segments() {
        let bytes = two_batches();
        let scan = scan(&bytes, 10);
        assert_eq!(scan.damage, None);
        assert_eq!(scan.batches.len(), 2);
        assert_eq!(scan.next_offset, 13);
        assert_eq!(scan.valid_len, bytes.len() as u64);
    }

    #[test]
    fn every_truncation_is_a_torn_tail_keeping_whole_batches() {
        let bytes = two_batches();
        let first = batch(10, &["a", "bb"]).len();
        for cut in 0..bytes.len() {
            let scan = scan(&bytes[..cut], 10);
            let expect = if cut >= first { first } else { 0 };
            assert_eq!(scan.valid_len, expect as u64, "cut at {cut}");
            if cut != 0 && cut != first {
                assert!(
                    matches!(scan.damage, Some(Damage::TornTail(_))),
                    "cut at {cut}"
                );
            }
        }
    }

    #[test]
    fn every_bit_flip_in_a_non_final_batch_is_corruption() {
        let bytes = two_batches();
        let first = batch(10, &["a", "bb"]).len();
        for i in 0..first {
            for bit in 0..8 {
                let mut flipped = bytes.clone();
                flipped[i] ^= 1 << bit;
                let scan = scan(&flipped, 10);
                assert!(
                    matches!(scan.damage, Some(Damage::Corrupt(_))),
                    "byte {i} bit {bit}: {:?}",
                    scan.damage
                );
                assert_eq!(scan.valid_len, 0);
            }
        }
    }

    #[test]
    fn a_flipped_batch_never_decodes() {
        let bytes = batch(3, &["hello", "world"]);
        for i in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[i] ^= 0x10;
            let err = decode_batch(Bytes::from(flipped), Path::new("seg"), 99, 3).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Corrupt);
            assert!(err.message().contains("seg at byte 99"), "{err}");
        }
    }

    #[test]
    fn zero_fill_is_a_torn_tail() {
        let mut bytes = two_batches();
        let len = bytes.len();
        bytes.extend(std::iter::repeat_n(0, 4096));
        let scan = scan(&bytes, 10);
        assert!(matches!(scan.damage, Some(Damage::TornTail(_))));
        assert_eq!(scan.valid_len, len as u64);
    }

    #[test]
    fn out_of_sequence_is_corruption() {
        let bytes = two_batches();
        assert!(matches!(scan(&bytes, 11).damage, Some(Damage::Corrupt(_))));
    }

    #[test]
    fn file_names_round_trip() {
        assert_eq!(parse_file_name(&file_name(42)), Some(42));
        assert_eq!(parse_file_name("42.seg"), None);
        assert_eq!(parse_file_name("00000000000000000042.tmp"), None);
    }
}
