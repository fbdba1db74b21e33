//! Bridges sharing an agent's partitions: who owns which (static membership), and the mark a
//! bridge puts on a request it forwards to a peer, so that the peer serves it where it lands
//! instead of forwarding it again.
//!
//! Owning a partition is placement, not safety (`skills/a2a-bridge/partitions.md`): the map
//! decides where a request is best served, never whether an answer is right. Every member
//! computes the same map from its flags alone: owner of p = p mod N, successor of member i =
//! i + 1 mod N (who holds i's partitions on demand when i does not answer).
//!
//! The mark is `v1;<member index>;<unix ms>;<hex HMAC-SHA256>` in [`FORWARDED_BY`], the MAC over
//! the method, the path (with its query), a SHA-256 of the body and the time, under the peers'
//! shared key ([`PeerKey`], `--peer-key FILE`). A mark that verifies (within [`MARK_SKEW`] of the
//! receiver's clock) asks "serve, do not forward"; one that does not is ignored (the request is
//! a client's, and may be forwarded once). A mark grants nothing else: the forwarded request
//! carries the caller's own credentials, which the receiver checks again. A captured mark
//! replayed within the skew only moves where that same request is served.

use sha2::{Digest, Sha256};

use super::owners::OwnerMap;

use crate::error::{Error, ErrorKind, Result};

/// The header carrying a forwarding peer's mark.
pub const FORWARDED_BY: &str = "agentlog-forwarded-by";

/// How far a mark's time may be from the receiver's clock, ms.
pub const MARK_SKEW: u64 = 60_000;

/// The fewest bytes a peer key file must hold.
const MIN_KEY_BYTES: usize = 32;

/// The static membership of the bridges sharing an agent: this member's index and every
/// member's advertised URL, in member order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Members {
    index: u32,
    urls: Vec<String>,
}

impl Members {
    /// Member `index` of the members at `urls` (`--member i/N --peers URL0,…`): `urls` must
    /// have N entries, distinct, each `http://` or `https://`.
    pub fn new(index: u32, count: u32, urls: Vec<String>) -> Result<Self> {
        let config = |why: String| Error::new(ErrorKind::Config, why);
        if count == 0 || index >= count {
            return Err(config(format!(
                "--member {index}/{count}: the index must be below the member count, which must be at least 1"
            )));
        }
        if urls.len() != count as usize {
            return Err(config(format!(
                "--member {index}/{count} names {count} members, --peers {}",
                urls.len()
            )));
        }
        for (n, url) in urls.iter().enumerate() {
            let scheme = url.split_once("://").map(|(s, _)| s);
            if !matches!(scheme, Some("http" | "https")) {
                return Err(config(format!(
                    "--peers: member {n}'s URL {url:?} is not http:// or https://"
                )));
            }
            if urls[..n].contains(url) {
                return Err(config(format!(
                    "--peers: {url} is named twice (members {} and {n})",
                    urls[..n].iter().position(|u| u == url).unwrap_or(0)
                )));
            }
        }
        let urls = urls
            .into_iter()
            .map(|u| u.trim_end_matches('/').to_owned())
            .collect();
        Ok(Self { index, urls })
    }

    /// `i/N` as `--member` takes it.
    pub fn parse_member(text: &str) -> Result<(u32, u32)> {
        let parsed = text
            .split_once('/')
            .and_then(|(i, n)| Some((i.trim().parse().ok()?, n.trim().parse().ok()?)));
        parsed.ok_or_else(|| {
            Error::new(
                ErrorKind::Config,
                format!("--member {text:?}: expected INDEX/COUNT, e.g. 0/4"),
            )
        })
    }

    /// This member's index.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// How many members there are.
    pub fn count(&self) -> u32 {
        // `new` checked it fits: it came from a u32.
        u32::try_from(self.urls.len()).unwrap_or(u32::MAX)
    }

    /// Member `member`'s URL (without a trailing slash), if there is such a member.
    pub fn url(&self, member: u32) -> Option<&str> {
        self.urls.get(member as usize).map(String::as_str)
    }

    /// Every member's URL, in member order.
    pub fn urls(&self) -> &[String] {
        &self.urls
    }

    /// The member that owns `partition`.
    pub fn owner(&self, partition: u32) -> u32 {
        partition % self.count()
    }

    /// The member that stands in for `member` when it does not answer.
    pub fn successor(&self, member: u32) -> u32 {
        (member + 1) % self.count()
    }

    /// Whether this member owns `partition`.
    pub fn owns(&self, partition: u32) -> bool {
        self.owner(partition) == self.index
    }

    /// The partitions of a topic of `partitions` that `member` owns, ascending.
    pub fn owned_by(&self, member: u32, partitions: u32) -> Vec<u32> {
        (0..partitions)
            .filter(|p| self.owner(*p) == member)
            .collect()
    }

    /// This static map over a topic of `partitions`, as the forwarder reads ownership.
    pub fn owner_map(&self, partitions: u32) -> Result<OwnerMap> {
        let owners: Vec<u32> = (0..partitions).map(|p| self.owner(p)).collect();
        let successors = owners.iter().map(|o| self.successor(*o)).collect();
        OwnerMap::new(self.index, self.urls.clone(), owners, successors)
    }
}

/// The key the peers share, to mark the requests they forward to each other.
#[derive(Clone, PartialEq, Eq)]
pub struct PeerKey(Vec<u8>);

impl std::fmt::Debug for PeerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PeerKey(..)")
    }
}

impl PeerKey {
    /// A key of `bytes` (surrounding whitespace trimmed): at least 32 bytes.
    pub fn new(bytes: &[u8]) -> Result<Self> {
        let key = bytes.trim_ascii();
        if key.len() < MIN_KEY_BYTES {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "a peer key must hold at least {MIN_KEY_BYTES} bytes (it has {}); e.g. `head -c 32 /dev/urandom | base64 > peer.key`",
                    key.len()
                ),
            ));
        }
        Ok(Self(key.to_vec()))
    }

    /// The key in the file at `path` (`--peer-key FILE`).
    pub fn from_file(path: &std::path::Path) -> Result<Self> {
        let bytes = std::fs::read(path).map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("cannot read the peer key {}", path.display()),
            )
            .with_source(e)
        })?;
        Self::new(&bytes)
    }

    /// The mark member `from` puts on a request (`method`, `path` with its query, `body`)
    /// it forwards at `now_ms`: the value of [`FORWARDED_BY`].
    pub fn mark(&self, from: u32, method: &str, path: &str, body: &[u8], now_ms: u64) -> String {
        let mac = self.mac(from, method, path, body, now_ms);
        format!("v1;{from};{now_ms};{}", hex(&mac))
    }

    /// The member that marked this request, if `mark` verifies under this key and is within
    /// [`MARK_SKEW`] of `now_ms`; `None` for anything else (a client's forgery, a stale or
    /// malformed mark, another key).
    pub fn verify(
        &self,
        mark: &str,
        method: &str,
        path: &str,
        body: &[u8],
        now_ms: u64,
    ) -> Option<u32> {
        let mut fields = mark.split(';');
        let (Some("v1"), Some(from), Some(at), Some(mac), None) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            return None;
        };
        let from: u32 = from.parse().ok()?;
        let at: u64 = at.parse().ok()?;
        if at.abs_diff(now_ms) > MARK_SKEW {
            return None;
        }
        let expected = hex(&self.mac(from, method, path, body, at));
        // Compared in full whatever differs first.
        let same = expected.len() == mac.len()
            && expected
                .bytes()
                .zip(mac.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0;
        same.then_some(from)
    }

    fn mac(&self, from: u32, method: &str, path: &str, body: &[u8], at: u64) -> [u8; 32] {
        let digest = Sha256::digest(body);
        let mut message = Vec::with_capacity(method.len() + path.len() + 64);
        for part in [method.as_bytes(), path.as_bytes()] {
            message.extend_from_slice(&(part.len() as u64).to_le_bytes());
            message.extend_from_slice(part);
        }
        message.extend_from_slice(&digest);
        message.extend_from_slice(&from.to_le_bytes());
        message.extend_from_slice(&at.to_le_bytes());
        hmac_sha256(&self.0, &message)
    }
}

/// HMAC-SHA256 (RFC 2104).
fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.map(|k| k ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn urls(n: u32) -> Vec<String> {
        (0..n).map(|i| format!("http://b{i}:8080/")).collect()
    }

    #[test]
    fn owners_successors_and_shares_are_the_same_on_every_member() {
        let maps: Vec<Members> = (0..4)
            .map(|i| Members::new(i, 4, urls(4)).unwrap())
            .collect();
        for members in &maps {
            assert_eq!(members.count(), 4);
            assert_eq!(members.url(2), Some("http://b2:8080"));
            for p in 0..16 {
                assert_eq!(members.owner(p), p % 4);
                assert_eq!(members.owns(p), p % 4 == members.index());
            }
            assert_eq!(members.successor(3), 0);
            assert_eq!(members.successor(1), 2);
            assert_eq!(members.owned_by(1, 16), vec![1, 5, 9, 13]);
        }
        // Every partition has exactly one owner.
        let mut owned: Vec<u32> = (0..4).flat_map(|m| maps[0].owned_by(m, 16)).collect();
        owned.sort_unstable();
        assert_eq!(owned, (0..16).collect::<Vec<_>>());
        let map = maps[1].owner_map(16).unwrap();
        assert_eq!(map.owned_by(1), maps[1].owned_by(1, 16));
        assert_eq!(map.owner(7).unwrap().url.as_ref(), "http://b3:8080");
        assert_eq!(map.successor(7).unwrap().index, 0);
        let one = Members::new(0, 1, urls(1)).unwrap();
        assert_eq!((one.owner(7), one.successor(0)), (0, 0));
    }

    #[test]
    fn a_membership_that_cannot_hold_is_refused_by_name() {
        let refused = |index, count, urls: Vec<String>| {
            let error = Members::new(index, count, urls).unwrap_err();
            assert_eq!(error.kind(), ErrorKind::Config);
            error.to_string()
        };
        assert!(refused(4, 4, urls(4)).contains("below"));
        assert!(refused(0, 4, urls(3)).contains("--peers 3"));
        let mut twice = urls(3);
        twice[2] = twice[0].clone();
        assert!(refused(0, 3, twice).contains("twice"));
        assert!(refused(0, 1, vec!["b0:8080".into()]).contains("http"));
        assert_eq!(Members::parse_member("2/4").unwrap(), (2, 4));
        for bad in ["2", "a/4", "2/", "-1/4"] {
            assert_eq!(
                Members::parse_member(bad).unwrap_err().kind(),
                ErrorKind::Config
            );
        }
    }

    #[test]
    fn hmac_is_rfc_4231() {
        // RFC 4231 test cases 1 and 6 (a key longer than the block).
        let mac = hmac_sha256(&[0x0b; 20], b"Hi There");
        assert_eq!(
            hex(&mac),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        let mac = hmac_sha256(
            &[0xaa; 131],
            b"Test Using Larger Than Block-Size Key - Hash Key First",
        );
        assert_eq!(
            hex(&mac),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn a_mark_verifies_only_for_its_request_key_and_time() {
        let key = PeerKey::new(b"0123456789abcdef0123456789abcdef\n").unwrap();
        let now = 1_800_000_000_000;
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}"#;
        let mark = key.mark(2, "POST", "/a2a", body, now);
        assert_eq!(key.verify(&mark, "POST", "/a2a", body, now), Some(2));
        assert_eq!(
            key.verify(&mark, "POST", "/a2a", body, now + MARK_SKEW),
            Some(2)
        );
        // Another request, another time, another key, or a forged or damaged mark: ignored.
        assert_eq!(key.verify(&mark, "GET", "/a2a", body, now), None);
        assert_eq!(key.verify(&mark, "POST", "/a2a/", body, now), None);
        assert_eq!(key.verify(&mark, "POST", "/a2a", b"{}", now), None);
        assert_eq!(
            key.verify(&mark, "POST", "/a2a", body, now + MARK_SKEW + 1),
            None
        );
        let other = PeerKey::new(&[7; 32]).unwrap();
        assert_eq!(other.verify(&mark, "POST", "/a2a", body, now), None);
        let claimed = mark.replacen("v1;2;", "v1;3;", 1);
        assert_eq!(key.verify(&claimed, "POST", "/a2a", body, now), None);
        for forged in ["", "v1", "v1;2;1;00", "v2;2;1;00", &format!("{mark};x")] {
            assert_eq!(
                key.verify(forged, "POST", "/a2a", body, now),
                None,
                "{forged}"
            );
        }
        let mut flipped = mark.clone().into_bytes();
        let last = flipped.len() - 1;
        flipped[last] = if flipped[last] == b'0' { b'1' } else { b'0' };
        let flipped = String::from_utf8(flipped).unwrap();
        assert_eq!(key.verify(&flipped, "POST", "/a2a", body, now), None);
        assert_eq!(
            PeerKey::new(b"short").unwrap_err().kind(),
            ErrorKind::Config
        );
    }
}
