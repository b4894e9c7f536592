//! [`NoProxy`]: the destinations reached without the proxy (`NO_PROXY`, `network.no_proxy`).

use std::net::IpAddr;

/// A parsed `NO_PROXY` list: comma- or space-separated entries, each matched against a
/// destination's host and port.
///
/// - `*` alone: every destination.
/// - A host name (`example.com`, `.example.com`, `*.example.com`): that host and its subdomains,
///   case-insensitively.
/// - An IP address (`10.1.2.3`, `::1`, `[::1]`) or a CIDR range (`10.0.0.0/8`, `fd00::/8`): hosts
///   written as such an address (names are not resolved).
/// - Any of them with `:port` (`localhost:8080`, `[::1]:443`): only that port.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NoProxy {
    all: bool,
    entries: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    host: HostPattern,
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    /// Lowercase, without leading dots.
    Domain(String),
    Ip(IpAddr),
    Net {
        base: IpAddr,
        prefix: u8,
    },
}

impl NoProxy {
    /// Parses a list; entries that are neither host, address nor range are ignored (as curl does).
    pub fn parse(list: &str) -> NoProxy {
        let mut out = NoProxy::default();
        for item in list
            .split([',', ' ', '\t', '\n'])
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            if item == "*" {
                out.all = true;
            } else if let Some(entry) = parse_entry(item) {
                out.entries.push(entry);
            }
        }
        out
    }

    /// Whether the list says nothing.
    pub fn is_empty(&self) -> bool {
        !self.all && self.entries.is_empty()
    }

    /// Whether `host` (as in a URL: brackets around IPv6 allowed) on `port` is reached directly.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        if self.all {
            return true;
        }
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let ip = host.parse::<IpAddr>().ok();
        self.entries.iter().any(|entry| {
            entry.port.is_none_or(|p| p == port)
                && match (&entry.host, ip) {
                    (HostPattern::Domain(d), None) => {
                        host == *d
                            || host
                                .strip_suffix(d.as_str())
                                .is_some_and(|rest| rest.ends_with('.'))
                    }
                    (HostPattern::Ip(a), Some(ip)) => *a == ip,
                    (HostPattern::Net { base, prefix }, Some(ip)) => in_net(ip, *base, *prefix),
                    _ => false,
                }
        })
    }
}

fn parse_entry(item: &str) -> Option<Entry> {
    // A bare IPv6 address or range holds colons that are not a port's.
    if let Some(host) = parse_host(item) {
        return Some(Entry { host, port: None });
    }
    let (host, port) = match item.strip_prefix('[') {
        Some(rest) => {
            let (host, after) = rest.split_once(']')?;
            (host, after.strip_prefix(':'))
        }
        None => match item.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (item, None),
        },
    };
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok()?),
        None => None,
    };
    Some(Entry {
        host: parse_host(host)?,
        port,
    })
}

fn parse_host(text: &str) -> Option<HostPattern> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(HostPattern::Ip(ip));
    }
    if let Some((base, prefix)) = text.split_once('/') {
        let base = base.parse::<IpAddr>().ok()?;
        let prefix = prefix.parse::<u8>().ok()?;
        let max = if base.is_ipv4() { 32 } else { 128 };
        return (prefix <= max).then_some(HostPattern::Net { base, prefix });
    }
    let domain = text
        .trim_start_matches("*.")
        .trim_start_matches('.')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    let valid = !domain.is_empty()
        && domain
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_');
    valid.then_some(HostPattern::Domain(domain))
}

fn in_net(ip: IpAddr, base: IpAddr, prefix: u8) -> bool {
    let (ip, base, bits) = match (ip, base) {
        (IpAddr::V4(ip), IpAddr::V4(base)) => (
            u128::from(u32::from(ip)),
            u128::from(u32::from(base)),
            32u32,
        ),
        (IpAddr::V6(ip), IpAddr::V6(base)) => (u128::from(ip), u128::from(base), 128u32),
        _ => return false,
    };
    let shift = bits - u32::from(prefix);
    let mask = u128::MAX.checked_shl(shift).unwrap_or(0);
    let width = if bits == 32 {
        u128::from(u32::MAX)
    } else {
        u128::MAX
    };
    (ip & mask & width) == (base & mask & width)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_matches_everything() {
        let n = NoProxy::parse("example.com, *");
        assert!(n.matches("anything.test", 443));
        assert!(NoProxy::parse("").is_empty());
        assert!(!NoProxy::parse("").matches("localhost", 80));
    }

    #[test]
    fn domains_match_themselves_and_subdomains_only() {
        for list in [
            "example.com",
            ".example.com",
            "*.example.com",
            "EXAMPLE.com.",
        ] {
            let n = NoProxy::parse(list);
            assert!(n.matches("example.com", 443), "{list}");
            assert!(n.matches("api.Example.com", 443), "{list}");
            assert!(n.matches("a.b.example.com.", 80), "{list}");
            assert!(!n.matches("notexample.com", 443), "{list}");
            assert!(!n.matches("example.com.evil", 443), "{list}");
        }
    }

    #[test]
    fn addresses_and_ranges_match_literal_hosts() {
        let n = NoProxy::parse("127.0.0.1 10.0.0.0/8,::1, fd00::/8");
        assert!(n.matches("127.0.0.1", 8080));
        assert!(!n.matches("127.0.0.2", 8080));
        assert!(n.matches("10.200.3.4", 443));
        assert!(!n.matches("11.0.0.1", 443));
        assert!(n.matches("[::1]", 443));
        assert!(n.matches("fd12::5", 443));
        assert!(!n.matches("fe80::1", 443));
        // Names are not resolved.
        assert!(!n.matches("localhost", 443));
        let zero = NoProxy::parse("0.0.0.0/0");
        assert!(zero.matches("8.8.8.8", 53));
    }

    #[test]
    fn ports_narrow_an_entry() {
        let n = NoProxy::parse("localhost:8080,[::1]:443,10.0.0.1:80,internal.corp:8443");
        assert!(n.matches("localhost", 8080));
        assert!(!n.matches("localhost", 8081));
        assert!(n.matches("[::1]", 443));
        assert!(!n.matches("[::1]", 80));
        assert!(n.matches("10.0.0.1", 80));
        assert!(!n.matches("10.0.0.1", 443));
        assert!(n.matches("api.internal.corp", 8443));
        assert!(!n.matches("api.internal.corp", 443));
    }

    #[test]
    fn junk_entries_are_ignored() {
        let n = NoProxy::parse("host:notaport, 10.0.0.0/99, ok.test, a b");
        assert!(n.matches("ok.test", 1));
        assert!(!n.matches("host", 1));
    }
}
