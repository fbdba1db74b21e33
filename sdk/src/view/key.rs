//! [`Key`]: a task or context id as the view stores it, in 24 bytes and usually no heap: a
//! canonical UUID (what the bridge derives and generates) as its 16 bytes, any other id of up
//! to 22 bytes inline, a longer one boxed. A view of a million tasks holds two per task.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use uuid::Uuid;

/// The longest id kept inline.
const INLINE: usize = 22;

/// An id, stored compactly ([module docs](self)). Two keys are equal when their ids are.
#[derive(Clone, PartialEq, Eq)]
pub(super) enum Key {
    /// A UUID in its canonical text form (lowercase, hyphenated).
    Uuid([u8; 16]),
    /// Any other id of up to [`INLINE`] bytes.
    Inline { len: u8, bytes: [u8; INLINE] },
    /// Any longer id.
    Heap(Box<str>),
}

/// An id as looked up: a borrowed string, with a canonical UUID seen as its bytes, so that
/// it hashes and compares as the [`Key`] it would be stored as, without building one.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum KeyRef<'a> {
    Uuid([u8; 16]),
    Str(&'a str),
}

/// Room for a key's text.
pub(super) type KeyText = [u8; 36];

impl Key {
    pub(super) fn new(id: &str) -> Self {
        match KeyRef::of(id) {
            KeyRef::Uuid(bytes) => Self::Uuid(bytes),
            KeyRef::Str(id) if id.len() <= INLINE => {
                let mut bytes = [0; INLINE];
                bytes[..id.len()].copy_from_slice(id.as_bytes());
                Self::Inline {
                    len: id.len() as u8,
                    bytes,
                }
            }
            KeyRef::Str(id) => Self::Heap(id.into()),
        }
    }

    /// The key as looked up.
    pub(super) fn as_ref(&self) -> KeyRef<'_> {
        match self {
            Self::Uuid(bytes) => KeyRef::Uuid(*bytes),
            other => KeyRef::Str(other.inline_or_heap()),
        }
    }

    /// The id's text, written into `text` when the key does not hold it as text.
    pub(super) fn text<'a>(&'a self, text: &'a mut KeyText) -> &'a str {
        match self {
            Self::Uuid(bytes) => Uuid::from_bytes(*bytes).hyphenated().encode_lower(text),
            other => other.inline_or_heap(),
        }
    }

    /// The id as a shared string (what the view's answers carry).
    pub(super) fn to_arc(&self) -> Arc<str> {
        Arc::from(self.text(&mut [0; 36]))
    }

    pub(super) fn is(&self, id: &str) -> bool {
        self.as_ref() == KeyRef::of(id)
    }

    fn inline_or_heap(&self) -> &str {
        match self {
            Self::Uuid(_) => "",
            // Built from a `&str` cut at its length: valid UTF-8.
            Self::Inline { len, bytes } => {
                std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default()
            }
            Self::Heap(id) => id,
        }
    }
}

impl<'a> KeyRef<'a> {
    pub(super) fn of(id: &'a str) -> Self {
        if id.len() == 36
            && let Ok(uuid) = Uuid::try_parse(id)
            && uuid.hyphenated().encode_lower(&mut [0; 36]) == id
        {
            return Self::Uuid(uuid.into_bytes());
        }
        Self::Str(id)
    }
}

impl Hash for KeyRef<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            Self::Uuid(bytes) => bytes.hash(state),
            Self::Str(id) => id.hash(state),
        }
    }
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_ref().hash(state);
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text(&mut [0; 36]))
    }
}

/// A 32-bit hash of an id that every process and every build computes alike (FNV-1a over its
/// text, or over a UUID's 16 bytes): what orders tasks of equal status time in `ListTasks`, so
/// that every replica pages alike.
pub(super) fn stable_hash(id: KeyRef<'_>) -> u32 {
    let bytes: &[u8] = match &id {
        KeyRef::Uuid(bytes) => bytes,
        KeyRef::Str(id) => id.as_bytes(),
    };
    bytes.iter().fold(0x811c_9dc5, |hash: u32, byte| {
        (hash ^ u32::from(*byte)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_text_in_24_bytes() {
        assert_eq!(std::mem::size_of::<Key>(), 24);
        let uuid = "0b9d2d9e-6f1c-4e57-9a3b-5f2f1d0c8e11";
        let long = "a-context-id-longer-than-twenty-two-bytes";
        for (id, stored_as_uuid) in [
            (uuid, true),
            ("0B9D2D9E-6F1C-4E57-9A3B-5F2F1D0C8E11", false), // not canonical: kept as text
            ("0b9d2d9e6f1c4e579a3b5f2f1d0c8e11", false),
            ("", false),
            ("ctx-7", false),
            ("exactly-twenty-two-byt", false),
            (long, false),
            ("ünïcødé-ids-are-text-too", false),
        ] {
            let key = Key::new(id);
            assert_eq!(key.text(&mut [0; 36]), id);
            assert_eq!(&*key.to_arc(), id);
            assert_eq!(matches!(key, Key::Uuid(_)), stored_as_uuid, "{id}");
            assert!(key.is(id));
            assert!(!key.is("other"));
            assert!(key.as_ref() == KeyRef::of(id));
        }
        assert!(matches!(
            Key::new("exactly-twenty-two-byt"),
            Key::Inline { .. }
        ));
        assert!(matches!(Key::new(long), Key::Heap(_)));
    }

    #[test]
    fn the_stable_hash_is_fnv_1a() {
        // The FNV-1a test vectors.
        assert_eq!(stable_hash(KeyRef::of("")), 0x811c_9dc5);
        assert_eq!(stable_hash(KeyRef::of("a")), 0xe40c_292c);
        assert_eq!(stable_hash(KeyRef::of("foobar")), 0xbf9c_f968);
    }
}
