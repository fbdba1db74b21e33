//! The bytes of a checkpoint: the view's tasks at known log positions, checksummed.
//!
//! ```text
//! magic "agentlog/view-checkpoint\0", u8 version (= 5; 4 had places without their segment's
//!   tag, 3 no places, 2 no shown / answered flags, 1 stored rule 8's ids as one set: all are
//!   ignored, and the view replays)
//! u64 created_ms, str16 stream, str16 topic, u32 partitions
//! per partition: u64 position (the next offset to apply), u32 anchor length, u32 anchor crc
//!   (of the record at position - 1: a checkpoint of another log does not match; 0, 0 at 0)
//! u32 owners; per owner: str16 principal, str16 tenant
//! u64 tasks; per task: str16 id, u32 owner, str16 context id, machine, u32 records, u64 each,
//!   u32 × 3 places (of the first content records in the log's files, as the log gave them:
//!   `log::Place`; u32::MAX = not known)
//!   machine: u8 state (255 = none), u64 status ms, u8 flags (1 has message, 2 last message
//!   id, 4 seen, 8 claim, 16 shown, 32 answered: fold rule 15, 64 push configs: rule 16;
//!   a checkpoint from before rule 16 has no 64, right for a log without push records),
//!   [str16 last message id],
//!   u32 attempts, u64 retention ms,
//!   [u32 n, str16 × n client ids seen, u32 m, str16 × m other ids seen, oldest first],
//!   [u32 attempt, u32 turn attempt, str16 holder, u64 lease],
//!   u32 n, str16 × n pending
//! u32 crc32c of every byte before it
//! ```
//!
//! Little-endian throughout. The positions and anchors come first so that a reader can check
//! them before it decodes the tasks.

use agentlog_wire::StateCode;
use agentlog_wire::fold::{Claim, MachineSnapshot};

use super::super::key::Key;
use super::super::tasks::applied::{PLACED, Places};
use crate::agent::Caller;
use crate::log::raw::Place;

const MAGIC: &[u8] = b"agentlog/view-checkpoint\0";
const VERSION: u8 = 5;
const NO_STATE: u8 = 255;
const HAS_MESSAGE: u8 = 1;
const HAS_LAST_MESSAGE: u8 = 2;
const HAS_SEEN: u8 = 4;
const HAS_CLAIM: u8 = 8;
const SHOWN: u8 = 16;
const ANSWERED: u8 = 32;
const PUSH_CONFIGS: u8 = 64;

/// Where a checkpoint stands in one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Position {
    /// The next offset to apply: the checkpoint holds every record before it.
    pub next: u64,
    /// The length and crc32c of the record at `next - 1`'s payload (0, 0 when `next` is 0).
    pub anchor: (u32, u32),
}

impl Position {
    /// The anchor of a record payload.
    pub(crate) fn anchor_of(payload: &[u8]) -> (u32, u32) {
        (
            u32::try_from(payload.len()).unwrap_or(u32::MAX),
            crc32c::crc32c(payload),
        )
    }
}

/// One task as a checkpoint holds it, its ids borrowed from the checkpoint's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskRecord<'a> {
    pub id: &'a str,
    pub owner: u32,
    pub context_id: &'a str,
    pub machine: MachineSnapshot,
    /// The view's applied records (`Applied` words: offset and content mark).
    pub records: smallvec::SmallVec<[u64; 4]>,
    /// Where the first content records sit in the log's files: a hint, checked when read.
    pub places: Places,
}

/// A decoded checkpoint, borrowing its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Checkpoint<'a> {
    pub created_ms: u64,
    pub stream: String,
    pub topic: String,
    pub positions: Vec<Position>,
    pub owners: Vec<Caller>,
    pub tasks: TaskList<'a>,
}

/// A checkpoint's tasks, decoded as they are read ([`TaskList::iter`]): a restore builds its
/// tasks from the checkpoint's bytes with no copy of them all in between. The checksum has
/// been checked; a task that does not decode (a bad field under a good checksum: a writer's
/// bug) is an `Err` item, and the reader gives up on the checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskList<'a> {
    count: u64,
    /// From the first task to the checksum.
    bytes: &'a [u8],
    owners: usize,
}

impl<'a> TaskList<'a> {
    pub(crate) fn len(&self) -> usize {
        usize::try_from(self.count).unwrap_or(usize::MAX)
    }

    /// Every task, in the checkpoint's order; the last is an `Err` if bytes follow it.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Result<TaskRecord<'a>, CodecError>> + 'a {
        let mut r = Reader {
            bytes: self.bytes,
            pos: 0,
        };
        let (owners, count) = (self.owners, self.count);
        (0..count).map(move |n| {
            let task = task(&mut r, owners)?;
            if n + 1 == count && r.left() != 4 {
                return Err(CodecError::Malformed("trailing bytes"));
            }
            Ok(task)
        })
    }
}

/// Why a checkpoint's bytes were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CodecError {
    #[error("not a view checkpoint")]
    Magic,
    #[error("checkpoint format version {0} is not known")]
    Version(u8),
    #[error("the checksum does not match (the checkpoint is damaged)")]
    Checksum,
    #[error("the checkpoint ends early or has a bad field: {0}")]
    Malformed(&'static str),
}

/// Encode the header (up to the positions) of a checkpoint; [`encode_owners`] and
/// [`encode_task`] append the rest and [`seal`] the checksum.
pub(crate) fn encode_header(
    out: &mut Vec<u8>,
    created_ms: u64,
    stream: &str,
    topic: &str,
    positions: &[Position],
) {
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    put_u64(out, created_ms);
    put_str(out, stream);
    put_str(out, topic);
    put_u32(out, positions.len() as u32);
    for position in positions {
        put_u64(out, position.next);
        put_u32(out, position.anchor.0);
        put_u32(out, position.anchor.1);
    }
}

/// Append the owners, and room for the task count ([`patch_count`] fills it in once the tasks
/// are appended, with [`encode_task`]); where the count goes.
pub(crate) fn encode_owners(out: &mut Vec<u8>, owners: &[Caller]) -> usize {
    put_u32(out, owners.len() as u32);
    for owner in owners {
        put_str(out, &owner.principal);
        put_str(out, &owner.tenant);
    }
    let at = out.len();
    put_u64(out, 0);
    at
}

/// Append one task.
pub(crate) fn encode_task(
    out: &mut Vec<u8>,
    id: &Key,
    owner: u32,
    context_id: &Key,
    machine: &MachineSnapshot,
    records: impl ExactSizeIterator<Item = u64>,
    places: &Places,
) {
    let mut text = [0; 36];
    put_str(out, id.text(&mut text));
    put_u32(out, owner);
    put_str(out, context_id.text(&mut text));
    put_machine(out, machine);
    put_u32(out, records.len() as u32);
    for record in records {
        put_u64(out, record);
    }
    for place in places {
        put_u32(out, place.raw());
    }
}

/// Write the task count where [`encode_owners`] left room for it.
pub(crate) fn patch_count(out: &mut [u8], at: usize, count: u64) {
    if let Some(room) = out.get_mut(at..at + 8) {
        room.copy_from_slice(&count.to_le_bytes());
    }
}

/// Append the owners and `count` tasks (given by `tasks`) to a checkpoint.
#[cfg(test)]
pub(crate) fn encode_tasks<'a>(
    out: &mut Vec<u8>,
    owners: &[Caller],
    count: usize,
    tasks: impl Iterator<Item = (&'a Key, u32, &'a Key, MachineSnapshot, Vec<u64>, Places)>,
) {
    let at = encode_owners(out, owners);
    for (id, owner, context_id, machine, records, places) in tasks {
        encode_task(
            out,
            id,
            owner,
            context_id,
            &machine,
            records.into_iter(),
            &places,
        );
    }
    patch_count(out, at, count as u64);
}

/// Append the checksum of everything before it.
pub(crate) fn seal(out: &mut Vec<u8>) {
    let crc = crc32c::crc32c(out);
    put_u32(out, crc);
}

fn put_machine(out: &mut Vec<u8>, m: &MachineSnapshot) {
    out.push(m.state.map_or(NO_STATE, |s| s.code()));
    put_u64(out, m.status_timestamp_ms);
    let mut flags = 0;
    if m.status_has_message {
        flags |= HAS_MESSAGE;
    }
    if m.last_message_id.is_some() {
        flags |= HAS_LAST_MESSAGE;
    }
    if m.seen.is_some() {
        flags |= HAS_SEEN;
    }
    if m.claim.is_some() {
        flags |= HAS_CLAIM;
    }
    if m.shown {
        flags |= SHOWN;
    }
    if m.answered {
        flags |= ANSWERED;
    }
    if m.push_configs {
        flags |= PUSH_CONFIGS;
    }
    out.push(flags);
    if let Some(last) = &m.last_message_id {
        put_str(out, last);
    }
    put_u32(out, m.attempts);
    put_u64(out, m.retention_ms);
    if let Some((clients, recent)) = &m.seen {
        for ids in [clients, recent] {
            put_u32(out, ids.len() as u32);
            for id in ids {
                put_str(out, id);
            }
        }
    }
    if let Some(claim) = &m.claim {
        put_u32(out, claim.attempt);
        put_u32(out, claim.turn_attempt);
        put_str(out, &claim.holder);
        put_u64(out, claim.lease_until_ms);
    }
    put_u32(out, m.pending.len() as u32);
    for id in &m.pending {
        put_str(out, id);
    }
}

/// Decode a whole checkpoint, checksum first.
pub(crate) fn decode(bytes: &[u8]) -> Result<Checkpoint<'_>, CodecError> {
    let mut r = decode_start(bytes)?;
    let (created_ms, stream, topic, positions) = header(&mut r)?;
    let owners = (0..r.u32()?)
        .map(|_| {
            Ok(Caller {
                principal: r.str()?,
                tenant: r.str()?,
            })
        })
        .collect::<Result<Vec<_>, CodecError>>()?;
    let count = r.u64()?;
    let tasks = TaskList {
        count,
        bytes: &bytes[r.pos..],
        owners: owners.len(),
    };
    if count == 0 && r.left() != 4 {
        return Err(CodecError::Malformed("trailing bytes"));
    }
    Ok(Checkpoint {
        created_ms,
        stream,
        topic,
        positions,
        owners,
        tasks,
    })
}

fn task<'a>(r: &mut Reader<'a>, owners: usize) -> Result<TaskRecord<'a>, CodecError> {
    let id = r.text()?;
    let owner = r.u32()?;
    if owner as usize >= owners {
        return Err(CodecError::Malformed("owner"));
    }
    let context_id = r.text()?;
    let machine = machine(r)?;
    let records = (0..r.u32()?).map(|_| r.u64()).collect::<Result<_, _>>()?;
    let mut places = [Place::UNKNOWN; PLACED];
    for place in &mut places {
        *place = Place::from_raw(r.u32()?);
    }
    Ok(TaskRecord {
        id,
        owner,
        context_id,
        machine,
        records,
        places,
    })
}

fn decode_start(bytes: &[u8]) -> Result<Reader<'_>, CodecError> {
    if !bytes.starts_with(MAGIC) {
        return Err(CodecError::Magic);
    }
    let version = *bytes.get(MAGIC.len()).ok_or(CodecError::Magic)?;
    if version != VERSION {
        return Err(CodecError::Version(version));
    }
    let body_len = bytes.len().checked_sub(4).ok_or(CodecError::Checksum)?;
    let (body, crc) = bytes.split_at(body_len);
    let crc = u32::from_le_bytes(crc.try_into().map_err(|_| CodecError::Checksum)?);
    if crc32c::crc32c(body) != crc {
        return Err(CodecError::Checksum);
    }
    Ok(Reader {
        bytes,
        pos: MAGIC.len() + 1,
    })
}

type Header = (u64, String, String, Vec<Position>);

fn header(r: &mut Reader<'_>) -> Result<Header, CodecError> {
    let created_ms = r.u64()?;
    let stream = r.str()?;
    let topic = r.str()?;
    let partitions = r.u32()?;
    let positions = (0..partitions)
        .map(|_| {
            Ok(Position {
                next: r.u64()?,
                anchor: (r.u32()?, r.u32()?),
            })
        })
        .collect::<Result<_, CodecError>>()?;
    Ok((created_ms, stream, topic, positions))
}

fn machine(r: &mut Reader<'_>) -> Result<MachineSnapshot, CodecError> {
    let code = r.u8()?;
    let state = if code == NO_STATE {
        None
    } else {
        Some(
            StateCode(code)
                .state()
                .map_err(|_| CodecError::Malformed("state"))?,
        )
    };
    let status_timestamp_ms = r.u64()?;
    let flags = r.u8()?;
    let known = HAS_MESSAGE | HAS_LAST_MESSAGE | HAS_SEEN | HAS_CLAIM | SHOWN | ANSWERED;
    if flags & !(known | PUSH_CONFIGS) != 0 {
        return Err(CodecError::Malformed("machine flags"));
    }
    let last_message_id = (flags & HAS_LAST_MESSAGE != 0)
        .then(|| r.str())
        .transpose()?;
    let attempts = r.u32()?;
    let retention_ms = r.u64()?;
    let ids = |r: &mut Reader<'_>| {
        (0..r.u32()?)
            .map(|_| r.str())
            .collect::<Result<Vec<_>, _>>()
    };
    let seen = if flags & HAS_SEEN != 0 {
        let clients = ids(r)?;
        Some((clients, ids(r)?))
    } else {
        None
    };
    let claim = (flags & HAS_CLAIM != 0)
        .then(|| {
            Ok::<_, CodecError>(Claim {
                attempt: r.u32()?,
                turn_attempt: r.u32()?,
                holder: r.str()?.into(),
                lease_until_ms: r.u64()?,
            })
        })
        .transpose()?;
    let pending = (0..r.u32()?).map(|_| r.str()).collect::<Result<_, _>>()?;
    Ok(MachineSnapshot {
        state,
        status_timestamp_ms,
        status_has_message: flags & HAS_MESSAGE != 0,
        last_message_id,
        seen,
        attempts,
        claim,
        pending,
        retention_ms,
        shown: flags & SHOWN != 0,
        answered: flags & ANSWERED != 0,
        push_configs: flags & PUSH_CONFIGS != 0,
    })
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// A str16; ids and names are short (the wire caps them at u16 lengths too).
fn put_str(out: &mut Vec<u8>, s: &str) {
    let bytes = &s.as_bytes()[..s.len().min(usize::from(u16::MAX))];
    out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
    out.extend_from_slice(bytes);
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|end| *end <= self.bytes.len().saturating_sub(4))
            .ok_or(CodecError::Malformed("truncated"))?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn left(&self) -> u64 {
        (self.bytes.len() - self.pos) as u64
    }

    fn u8(&mut self) -> Result<u8, CodecError> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, CodecError> {
        let mut b = [0; 4];
        b.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(b))
    }

    fn u64(&mut self) -> Result<u64, CodecError> {
        let mut b = [0; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(b))
    }

    fn text(&mut self) -> Result<&'a str, CodecError> {
        let mut b = [0; 2];
        b.copy_from_slice(self.take(2)?);
        let len = usize::from(u16::from_le_bytes(b));
        std::str::from_utf8(self.take(len)?).map_err(|_| CodecError::Malformed("utf-8"))
    }

    fn str(&mut self) -> Result<String, CodecError> {
        self.text().map(str::to_owned)
    }
}

#[cfg(test)]
mod tests;
