//! Where push notifications may go: the guard against server-side request forgery. A webhook
//! URL is the client's to choose, and the agent POSTs to it from inside its own network, so
//! by default only public addresses over http or https are allowed: no loopback, private,
//! link-local (the cloud metadata services), shared (CGNAT), unique-local, multicast,
//! unspecified or reserved address, nor one of those wrapped in an IPv6 form.
//!
//! The rules are pure functions of an address; the push sender applies them to every address
//! a name resolves to, and connects only to an address that passed (no second lookup a
//! rebinding name could answer differently). The bridge applies them when a config is
//! registered, to refuse a literal address at once.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

use crate::error::{Error, ErrorKind, Result};

/// The destinations push notifications may go to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Destinations {
    allow_private: bool,
    allowed_hosts: Vec<String>,
}

impl Destinations {
    /// Public addresses only, over http or https.
    pub fn new() -> Self {
        Self::default()
    }

    /// Allow every address, private and loopback ones included (`serve --push-allow-private`:
    /// tests and local development, where the receiver runs beside the agent).
    pub fn allow_private(mut self, allow: bool) -> Self {
        self.allow_private = allow;
        self
    }

    /// Allow `host` (a name or an address, as the URL writes it) whatever it resolves to: an
    /// allow-list entry for a receiver inside the agent's network.
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        let host = host.into().trim_matches(['[', ']']).to_ascii_lowercase();
        if !self.allowed_hosts.contains(&host) {
            self.allowed_hosts.push(host);
        }
        self
    }

    /// Whether every address is allowed.
    pub fn allows_private(&self) -> bool {
        self.allow_private
    }

    /// The URL parsed, if it may be sent to as far as its text tells: http or https, a host,
    /// no user name or password in it, and a literal address allowed. A name is checked again
    /// for every address it resolves to ([`check_address`](Self::check_address)).
    pub fn check_url(&self, url: &str) -> Result<Url> {
        let parsed = Url::parse(url).map_err(|e| refused(format!("not a URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(refused(format!(
                "scheme {} (only http and https)",
                parsed.scheme()
            )));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(refused(
                "credentials in the URL (use authentication)".into(),
            ));
        }
        let ip = match parsed.host() {
            None => return Err(refused("no host".into())),
            Some(Host::Domain(_)) => None,
            Some(Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        };
        if let Some(ip) = ip {
            self.check_address(host_of(&parsed), ip)?;
        }
        Ok(parsed)
    }

    /// Whether `host` (as its URL writes it) may be reached at `ip`.
    pub fn check_address(&self, host: &str, ip: IpAddr) -> Result<()> {
        if self.allow_private || is_public(ip) || self.host_allowed(host) {
            return Ok(());
        }
        Err(refused(format!(
            "{host} is at {ip}, not a public address (allow it with --push-allow-private or --push-allow {host})"
        )))
    }

    fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim_matches(['[', ']']);
        self.allowed_hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(host))
    }
}

/// The host of a URL as it writes it (an IPv6 address without its brackets).
pub fn host_of(url: &Url) -> &str {
    url.host_str().unwrap_or_default().trim_matches(['[', ']'])
}

/// Whether `ip` is a public unicast address: none of the special-purpose ranges.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => is_public_v4(ip),
        IpAddr::V6(ip) => is_public_v6(ip),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0
        // shared address space (CGNAT), 100.64.0.0/10
        || (a == 100 && (64..128).contains(&b))
        // IETF protocol assignments, 192.0.0.0/24
        || (a == 192 && b == 0 && c == 0)
        // benchmarking, 198.18.0.0/15
        || (a == 198 && (b == 18 || b == 19))
        // reserved, 240.0.0.0/4
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    // An IPv4 address in an IPv6 form reaches that IPv4 address: judge it as one.
    if let Some(v4) = embedded_v4(ip) {
        return is_public_v4(v4);
    }
    let first = ip.segments()[0];
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || ip.is_unique_local()
        || ip.is_unicast_link_local()
        // site-local (deprecated, still routed inside some networks), fec0::/10
        || (first & 0xffc0) == 0xfec0
        // documentation, 2001:db8::/32
        || (first == 0x2001 && ip.segments()[1] == 0x0db8))
}

/// The IPv4 address an IPv6 one stands for: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible
/// (`::a.b.c.d`) or NAT64 (`64:ff9b::a.b.c.d`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if s[..6] == [0, 0, 0, 0, 0, 0] && !ip.is_unspecified() && !ip.is_loopback() {
        return Some(low);
    }
    (s[..6] == [0x64, 0xff9b, 0, 0, 0, 0]).then_some(low)
}

fn refused(reason: String) -> Error {
    Error::new(
        ErrorKind::InvalidParams,
        format!("the webhook URL is refused: {reason}"),
    )
    .with_detail("field", "url")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn special_purpose_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd00:ec2::254",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
            "::10.0.0.1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn urls_are_checked_by_scheme_credentials_and_literal_address() {
        let guard = Destinations::new();
        assert!(guard.check_url("https://example.com/hook").is_ok());
        assert!(guard.check_url("http://93.184.216.34:8080/h").is_ok());
        for url in [
            "ftp://example.com/x",
            "file:///etc/passwd",
            "https://user:pw@example.com/",
            "http://127.0.0.1:9/hook",
            "http://[::1]/hook",
            "http://169.254.169.254/latest/meta-data",
            "http://[::ffff:10.0.0.1]/",
            "not a url",
        ] {
            let error = guard.check_url(url).unwrap_err();
            assert_eq!(error.kind(), ErrorKind::InvalidParams, "{url}");
        }
        let open = Destinations::new().allow_private(true);
        assert!(open.check_url("http://127.0.0.1:9/hook").is_ok());
        let listed = Destinations::new()
            .allow_host("127.0.0.1")
            .allow_host("[::1]");
        assert!(listed.check_url("http://127.0.0.1:9/hook").is_ok());
        assert!(listed.check_url("http://[::1]:9/hook").is_ok());
        assert!(listed.check_url("http://10.0.0.1/hook").is_err());
        let named = Destinations::new().allow_host("Receiver.Internal");
        assert!(
            named
                .check_address("receiver.internal", "10.0.0.5".parse().unwrap())
                .is_ok()
        );
        assert!(
            named
                .check_address("other.internal", "10.0.0.5".parse().unwrap())
                .is_err()
        );
    }
}
