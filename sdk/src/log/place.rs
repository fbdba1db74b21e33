//! Where a backend keeps a record ([`Place`]), and loading a record's bytes into the CPU's cache
//! ahead of reading it ([`Prefetcher`]).
//!
//! Why: a `GetTask` over a view of many tasks walks a chain of dependent loads, each a trip to
//! memory (the view's id table, the task's entry, the record's batch in the log's mapped
//! segment). A load that waits for nothing does not add to the chain, so the id table keeps
//! the places of a task's first records beside its slot and the view asks for their batches
//! while it reads the entry: two links instead of three.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Where a backend keeps a record, as the backend said when it returned or appended it
/// ([`StoredRecord::place`], [`Appended::place`]). Given back to [`LogBackend::read_at`]
/// beside the record's offset, it lets the backend read the record without looking it up in
/// its index: in a long log that lookup is a cache miss of its own, one more wait in every
/// `GetTask`.
///
/// The embedded log's place is the byte position of the record's batch in its segment (27
/// bits: the first 128 MiB of a segment, twice the default `segment_bytes`; a batch past that
/// has no place and is looked up) beside the low 5 bits of the segment's id, so that a
/// [`Prefetcher`] finds the segment without the record's offset. Iggy gives none.
///
/// A place proves nothing: the backend checks what it finds there and looks the record up
/// when it does not match, so a stale or foreign place costs a lookup, never a wrong record.
/// Opaque to everybody else, and stable for as long as the record is kept: a view stores it
/// in its checkpoints.
///
/// [`StoredRecord::place`]: super::StoredRecord::place
/// [`Appended::place`]: super::Appended::place
/// [`LogBackend::read_at`]: super::raw::LogBackend::read_at
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Place(u32);

/// Bits of a place that hold the batch's position; the ones above hold the segment's tag.
const POSITION_BITS: u32 = 27;

/// A cache line, and how many of them a prefetch asks for from a batch's start: a typical
/// task record's batch (header and record, 150-300 bytes) without reading its length first.
const LINE: usize = 64;
const PREFETCH_LINES: usize = 4;

/// Segment tags: the low bits of a segment's id.
const TAGS: usize = 1 << (32 - POSITION_BITS);

impl Place {
    /// No place known: the backend looks the record up (what Iggy always gives).
    pub const UNKNOWN: Self = Self(u32::MAX);

    /// A place from its raw value, as a backend makes one or a checkpoint stored it.
    pub const fn from_raw(raw: u32) -> Self {
        Self(raw)
    }

    /// The raw value, to store.
    pub const fn raw(self) -> u32 {
        self.0
    }

    /// The place of a batch at byte `position` of the segment numbered `segment`, or
    /// [`UNKNOWN`](Self::UNKNOWN) past the positions a place holds.
    pub(crate) fn in_segment(segment: usize, position: u64) -> Self {
        let tag = (segment % TAGS) as u32;
        u32::try_from(position)
            .ok()
            .filter(|p| *p < 1 << POSITION_BITS)
            .map(|p| Self(tag << POSITION_BITS | p))
            .filter(|place| *place != Self::UNKNOWN)
            .unwrap_or(Self::UNKNOWN)
    }

    /// The batch's position in its segment and the segment's tag, unless unknown.
    pub(crate) fn in_segment_parts(self) -> Option<(usize, u64)> {
        (self != Self::UNKNOWN).then_some((
            (self.0 >> POSITION_BITS) as usize,
            u64::from(self.0 & ((1 << POSITION_BITS) - 1)),
        ))
    }

    /// Whether this place can be one in the segment numbered `segment`.
    pub(crate) fn is_in(self, segment: usize) -> bool {
        self.in_segment_parts()
            .is_some_and(|(tag, _)| tag == segment % TAGS)
    }
}

impl Default for Place {
    fn default() -> Self {
        Self::UNKNOWN
    }
}

/// Asks the CPU to load the batches at given places of a topic's partitions into its cache,
/// without waiting for them ([`LogBackend::prefetcher`](super::raw::LogBackend::prefetcher)): a
/// hint that costs a few instructions and changes nothing but how soon a read finds its bytes.
/// A wrong, stale or unknown place is simply not helped.
#[derive(Clone)]
pub struct Prefetcher {
    partitions: Arc<[Arc<MappedSegments>]>,
}

impl Prefetcher {
    /// A prefetcher over these partitions' segments, indexed by partition.
    pub(crate) fn new(partitions: Arc<[Arc<MappedSegments>]>) -> Self {
        Self { partitions }
    }

    /// Start loading the first bytes of the batch at `place` of `partition`.
    #[inline]
    pub fn prefetch(&self, partition: u32, place: Place) {
        let Some((tag, position)) = place.in_segment_parts() else {
            return;
        };
        let Some(segments) = self.partitions.get(partition as usize) else {
            return;
        };
        let start = segments.addresses[tag].load(Ordering::Relaxed);
        if start != 0 {
            let first = start.wrapping_add(position as usize) & !(LINE - 1);
            for line in 0..PREFETCH_LINES {
                prefetch_line(first.wrapping_add(line * LINE));
            }
        }
    }
}

impl fmt::Debug for Prefetcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prefetcher")
            .field("partitions", &self.partitions.len())
            .finish()
    }
}

/// Where one partition's mapped segments start in memory, by segment tag: each mapped segment
/// publishes its address here, and withdraws it when unmapped. Where two mapped segments share
/// a tag (more than 32 of them), the later one holds it, and places in the other are not helped.
#[derive(Debug, Default)]
pub(crate) struct MappedSegments {
    addresses: [AtomicUsize; TAGS],
}

impl MappedSegments {
    /// Segment `segment` is mapped at `address`.
    pub(crate) fn publish(&self, segment: usize, address: usize) {
        self.addresses[segment % TAGS].store(address, Ordering::Relaxed);
    }

    /// Where segment `segment` is mapped, as published (0: not known).
    #[cfg(test)]
    pub(crate) fn address(&self, segment: usize) -> usize {
        self.addresses[segment % TAGS].load(Ordering::Relaxed)
    }

    /// Segment `segment`, mapped at `address`, is unmapped.
    pub(crate) fn withdraw(&self, segment: usize, address: usize) {
        let _ = self.addresses[segment % TAGS].compare_exchange(
            address,
            0,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }
}

/// Ask the CPU to load the cache line at `address`.
#[inline(always)]
fn prefetch_line(address: usize) {
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    // SAFETY: a prefetch is a hint to the cache: it never faults and never reads anything into
    // the program, whatever the address (an unmapped one included).
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(address as *const i8);
    }
    #[cfg(target_arch = "aarch64")]
    #[allow(unsafe_code)]
    // SAFETY: as above: `prfm` never faults.
    unsafe {
        std::arch::asm!("prfm pldl1keep, [{0}]", in(reg) address, options(nostack, readonly, preserves_flags));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = address;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_place_holds_a_position_and_its_segments_tag() {
        let place = Place::in_segment(37, 4096);
        assert_eq!(place.in_segment_parts(), Some((37 % TAGS, 4096)));
        assert!(place.is_in(37) && place.is_in(37 + TAGS) && !place.is_in(36));
        let last = (1 << POSITION_BITS) - 1;
        assert_eq!(
            Place::in_segment(0, last).in_segment_parts(),
            Some((0, last))
        );
        assert_eq!(
            Place::in_segment(0, 1 << POSITION_BITS),
            Place::UNKNOWN,
            "too far in"
        );
        assert_eq!(
            Place::in_segment(TAGS - 1, last),
            Place::UNKNOWN,
            "the unknown value"
        );
        assert_eq!(Place::UNKNOWN.in_segment_parts(), None);
        assert!(!Place::UNKNOWN.is_in(TAGS - 1));
    }

    #[test]
    fn a_prefetch_of_any_place_is_harmless() {
        let segments = Arc::new(MappedSegments::default());
        let bytes = vec![7u8; 256];
        segments.publish(3, bytes.as_ptr() as usize);
        let prefetcher = Prefetcher::new(vec![segments.clone()].into());
        prefetcher.prefetch(0, Place::in_segment(3, 128));
        // Unmapped or nonsense addresses, unknown places, partitions that do not exist.
        segments.publish(4, usize::MAX - 64);
        prefetcher.prefetch(0, Place::in_segment(4, 1 << 20));
        prefetcher.prefetch(0, Place::in_segment(5, 0));
        prefetcher.prefetch(0, Place::UNKNOWN);
        prefetcher.prefetch(9, Place::in_segment(3, 0));
        segments.withdraw(3, 1);
        assert_ne!(
            segments.addresses[3].load(Ordering::Relaxed),
            0,
            "not its address"
        );
        segments.withdraw(3, bytes.as_ptr() as usize);
        assert_eq!(segments.addresses[3].load(Ordering::Relaxed), 0);
    }
}
