//! The outbound network's settings ([`NetworkSettings`], the `network:` section): proxies and
//! trusted CAs for everything Compact sends, handed as plain data to the host, which builds the one
//! outbound client (`compact-net`) from them and the proxy variables of its environment.

use std::path::PathBuf;

/// The value of `network.proxy` that turns proxies off whatever the environment says.
pub const PROXY_OFF: &str = "off";

/// The `network:` section. Each setting, when set, replaces what the environment says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkSettings {
    /// `network.proxy`: the HTTP proxy of every request (`http://[user:password@]host:port`), or
    /// `off`; unset: `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` (and lowercase forms).
    pub proxy: Option<String>,
    /// `network.no_proxy`: hosts reached directly (`*`, names with their subdomains, IP
    /// addresses, CIDR ranges, each optionally with `:port`); unset: `NO_PROXY`.
    pub no_proxy: Option<String>,
    /// `network.ca_file`: a PEM bundle of CA certificates trusted besides the system's roots (and
    /// besides `SSL_CERT_FILE`'s); read when the client is built.
    pub ca_file: Option<PathBuf>,
}

/// Why `network.proxy`'s value is unusable. The message never repeats the value: a proxy URL may
/// hold a password.
pub(crate) fn check_proxy(value: &str) -> Result<(), String> {
    let value = value.trim();
    if value.eq_ignore_ascii_case(PROXY_OFF) {
        return Ok(());
    }
    let Some(rest) = value.strip_prefix("http://") else {
        return Err(
            "`network.proxy` must be an http:// URL (http://[user:password@]host:port; https destinations are tunnelled through it with CONNECT) or `off`".to_owned(),
        );
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    let (host, port) = match host_port.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((host, after)) => (host, after.strip_prefix(':')),
            None => ("", None),
        },
        None => match host_port.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        },
    };
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err("`network.proxy` has no host".to_owned());
    }
    if port.is_some_and(|p| p.parse::<u16>().is_err()) {
        return Err("`network.proxy` has a bad port".to_owned());
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn proxy_values() {
        for good in [
            "off",
            "OFF",
            "http://proxy.corp:3128",
            "http://u:p@proxy.corp:3128/",
            "http://[::1]:8080",
            "http://proxy",
        ] {
            assert_eq!(check_proxy(good), Ok(()), "{good}");
        }
        for bad in [
            "https://u:hunter2@proxy:443",
            "socks5://proxy:1080",
            "proxy.corp:3128",
            "http://u:hunter2@",
            "http://u:hunter2@proxy:http",
        ] {
            let e = check_proxy(bad).unwrap_err();
            assert!(!e.contains("hunter2"), "{e}");
        }
    }
}
