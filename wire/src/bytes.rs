//! The little-endian primitives both binary formats are written and read with (task records,
//! `record/codec.rs`; membership records, `members/codec.rs`): length-prefixed UTF-8 strings
//! and a reader that names the field it was reading when the bytes run out.

use crate::WireError;

pub(crate) fn put_str16(out: &mut Vec<u8>, field: &'static str, s: &str) -> Result<(), WireError> {
    let len = u16::try_from(s.len()).map_err(|_| WireError::FieldTooLong {
        field,
        len: s.len(),
        max: u16::MAX as usize,
    })?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

pub(crate) fn put_str32(out: &mut Vec<u8>, field: &'static str, s: &str) -> Result<(), WireError> {
    let len = u32::try_from(s.len()).map_err(|_| WireError::FieldTooLong {
        field,
        len: s.len(),
        max: u32::MAX as usize,
    })?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

pub(crate) struct Reader<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn take(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], WireError> {
        let available = self.bytes.len() - self.pos;
        if available < n {
            return Err(WireError::Truncated {
                field,
                at: self.pos,
                needed: n - available,
            });
        }
        let slice = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(slice)
    }

    pub(crate) fn array<const N: usize>(
        &mut self,
        field: &'static str,
    ) -> Result<[u8; N], WireError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(field, N)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, field: &'static str) -> Result<u8, WireError> {
        Ok(self.array::<1>(field)?[0])
    }

    pub(crate) fn u64(&mut self, field: &'static str) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }

    pub(crate) fn text(&mut self, field: &'static str, len: usize) -> Result<String, WireError> {
        let bytes = self.take(field, len)?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| WireError::InvalidUtf8 { field })
    }

    pub(crate) fn str16(&mut self, field: &'static str) -> Result<String, WireError> {
        let len = u16::from_le_bytes(self.array(field)?);
        self.text(field, usize::from(len))
    }

    pub(crate) fn str32(&mut self, field: &'static str) -> Result<String, WireError> {
        let len = u32::from_le_bytes(self.array(field)?);
        let len = usize::try_from(len).map_err(|_| WireError::FieldTooLong {
            field,
            len: usize::MAX,
            max: usize::MAX,
        })?;
        self.text(field, len)
    }
}
