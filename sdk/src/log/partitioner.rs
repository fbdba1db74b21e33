//! Key to partition: the same function on every backend.

use std::hash::Hasher;

use twox_hash::XxHash32;

/// The partition a record with `key` goes to: `XxHash32(key, seed 0) % partitions`.
///
/// This is the function the `iggy` client computes for `Partitioning::messages_key`, so a
/// task lands on the same partition index on the embedded log and on Iggy.
pub fn partition_for_key(key: &[u8], partitions: u32) -> u32 {
    let mut hasher = XxHash32::with_seed(0);
    hasher.write(key);
    // XxHash32 yields a u32 widened to u64; the cast back is lossless.
    (hasher.finish() as u32) % partitions.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_stable_and_in_range() {
        for n in 1..16 {
            let p = partition_for_key(b"task-1", n);
            assert!(p < n);
            assert_eq!(p, partition_for_key(b"task-1", n));
        }
        assert_eq!(partition_for_key(b"anything", 0), 0);
    }

    #[test]
    fn matches_xxhash32_reference() {
        // XXH32("", 0) = 0x02CC5D05 and XXH32("a", 0) = 0x550D7456 (reference vectors).
        assert_eq!(partition_for_key(b"", u32::MAX), 0x02CC_5D05);
        assert_eq!(partition_for_key(b"a", u32::MAX), 0x550D_7456);
    }
}
