//! Opening a partition's directory: every segment scanned, torn tails cut, damage refused.

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Contents, Entry, Loc, Partition, Segment, Slot};
use crate::error::Result;
use crate::log::embedded::EmbeddedOptions;
use crate::log::embedded::files::{io_error, sync_dir};
use crate::log::embedded::mapped;
use crate::log::embedded::segment::{self, Damage};

impl Partition {
    /// Rebuild a partition from its directory, truncating a torn tail (and, if
    /// `options.truncate_corrupt`, corruption) and refusing other damage.
    ///
    /// A gap between two segment files is where deleted segments were
    /// ([`delete_segments`](Self::delete_segments)): it becomes a hole, not an error. A
    /// segment starting *before* the previous one ended is corruption, and so is a batch out
    /// of sequence inside a segment.
    pub fn recover(index: u32, dir: PathBuf, options: &EmbeddedOptions) -> Result<Self> {
        let bases = segment_bases(&dir)?;

        let mapped = Arc::default();
        let mut entries = Vec::new();
        let mut slots = Vec::new();
        let mut end = bases.first().copied().unwrap_or(0);
        let mut active = None;
        let count = bases.len();
        for (i, base) in bases.iter().copied().enumerate() {
            let path = dir.join(segment::file_name(base));
            if base < end {
                let err = segment::corrupt_at(
                    &path,
                    0,
                    &format!(
                        "segment starts at offset {base}, before {end} where the previous one ends"
                    ),
                );
                if !options.truncate_corrupt {
                    return Err(err);
                }
                tracing::warn!(error = %err.report(), "removing overlapping segments (truncate_corrupt)");
                remove_segments(&dir, &bases[i..])?;
                break;
            }
            if base > end {
                slots.push(Slot::hole(end));
            }
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .map_err(|e| io_error("cannot open", &path, e))?;
            let scan = scan_file(&file, &path, base)?;
            let is_last = i + 1 == count;
            let mut cut = false;
            match scan.damage {
                None => {}
                Some(Damage::TornTail(why)) if is_last => {
                    tracing::warn!(
                        file = %path.display(),
                        at = scan.valid_len,
                        "truncating a torn tail ({why}) left by an interrupted write"
                    );
                    cut = true;
                }
                Some(Damage::TornTail(why) | Damage::Corrupt(why)) => {
                    let err = segment::corrupt_at(&path, scan.valid_len, &why);
                    if !options.truncate_corrupt {
                        return Err(err);
                    }
                    tracing::warn!(error = %err.report(), "cutting the partition at corrupt data (truncate_corrupt)");
                    cut = true;
                }
            }
            if cut {
                file.set_len(scan.valid_len)
                    .and_then(|()| file.sync_all())
                    .map_err(|e| io_error("cannot truncate", &path, e))?;
            }
            let file = Arc::new(file);
            for batch in &scan.batches {
                let loc = Loc {
                    segment: slots.len(),
                    pos: batch.pos,
                    len: batch.len,
                };
                entries.push(Entry::stored(batch.base_offset, loc)?);
            }
            active = Some((slots.len(), Arc::clone(&file), scan.valid_len));
            let max_len = scan.valid_len.max(options.segment_bytes);
            let id = slots.len();
            slots.push(Slot::of(
                Segment::new(path, file, base, max_len, (id, &mapped)),
                scan.valid_len,
            ));
            end = scan.next_offset;
            if cut && !is_last {
                remove_segments(&dir, &bases[i + 1..])?;
                break;
            }
        }
        let contents = Contents {
            entries,
            slots,
            end,
            active,
            mapped,
        };
        Ok(Self::with_contents(
            index,
            Some(dir),
            options.cache_bytes_per_partition,
            contents,
        ))
    }
}

/// Scan a segment file, through a map of it (no copy) where the system gives one; the map is
/// gone when this returns, before the caller may truncate the file.
fn scan_file(file: &std::fs::File, path: &Path, base: u64) -> Result<segment::Scan> {
    let len = file
        .metadata()
        .map_err(|e| io_error("cannot read", path, e))?
        .len();
    if let Some(map) = mapped::map_whole(file, len) {
        return Ok(segment::scan(&map, base));
    }
    let bytes = fs::read(path).map_err(|e| io_error("cannot read", path, e))?;
    Ok(segment::scan(&bytes, base))
}

/// The base offsets of the segment files in a partition directory, ascending.
pub(super) fn segment_bases(dir: &Path) -> Result<Vec<u64>> {
    let mut bases = Vec::new();
    for item in fs::read_dir(dir).map_err(|e| io_error("cannot list", dir, e))? {
        let item = item.map_err(|e| io_error("cannot list", dir, e))?;
        if let Some(base) = item.file_name().to_str().and_then(segment::parse_file_name) {
            bases.push(base);
        }
    }
    bases.sort_unstable();
    Ok(bases)
}

/// Delete the segment files with these bases (used only by `truncate_corrupt`).
fn remove_segments(dir: &Path, bases: &[u64]) -> Result<()> {
    for base in bases {
        let path = dir.join(segment::file_name(*base));
        fs::remove_file(&path).map_err(|e| io_error("cannot remove", &path, e))?;
    }
    sync_dir(dir)
}
