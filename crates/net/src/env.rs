//! [`ProxyEnv`]: the proxy and CA variables of the environment, read once.

/// The variables a [`Client`](crate::Client) honours, as read once at start-up: the binary calls
/// [`ProxyEnv::from_process`], tests build one with [`ProxyEnv::from_vars`] (so parallel tests never
/// set process-wide variables).
///
/// Each field holds the first non-empty of its variable's upper- and lowercase forms (uppercase
/// first, as hyper and Go read them).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ProxyEnv {
    /// `HTTP_PROXY` / `http_proxy`: the proxy of `http://` destinations.
    pub http_proxy: Option<String>,
    /// `HTTPS_PROXY` / `https_proxy`: the proxy of `https://` destinations.
    pub https_proxy: Option<String>,
    /// `ALL_PROXY` / `all_proxy`: the proxy of either, when its own is not set.
    pub all_proxy: Option<String>,
    /// `NO_PROXY` / `no_proxy`: destinations reached directly.
    pub no_proxy: Option<String>,
    /// `SSL_CERT_FILE`: a PEM bundle of extra trusted roots.
    pub ssl_cert_file: Option<String>,
}

/// Every variable read.
const NAMES: [&str; 9] = [
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "SSL_CERT_FILE",
];

impl std::fmt::Debug for ProxyEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Proxy URLs may carry a password: only whether each is set.
        f.debug_struct("ProxyEnv")
            .field("http_proxy", &self.http_proxy.is_some())
            .field("https_proxy", &self.https_proxy.is_some())
            .field("all_proxy", &self.all_proxy.is_some())
            .field("no_proxy", &self.no_proxy)
            .field("ssl_cert_file", &self.ssl_cert_file)
            .finish()
    }
}

impl ProxyEnv {
    /// The variables of this process (call once, at start-up).
    pub fn from_process() -> ProxyEnv {
        ProxyEnv::from_vars(
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
        )
    }

    /// The variables `lookup` finds by name (a host's own view of the environment).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> ProxyEnv {
        ProxyEnv::from_vars(
            NAMES
                .iter()
                .filter_map(|name| lookup(name).map(|value| (*name, value))),
        )
    }

    /// The variables among `vars` (name, value); others are ignored.
    pub fn from_vars<I, K, V>(vars: I) -> ProxyEnv
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let vars: Vec<(String, String)> = vars
            .into_iter()
            .map(|(k, v)| (k.as_ref().to_owned(), v.as_ref().trim().to_owned()))
            .filter(|(_, v)| !v.is_empty())
            .collect();
        let first = |names: &[&str]| {
            names
                .iter()
                .find_map(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
        };
        ProxyEnv {
            http_proxy: first(&["HTTP_PROXY", "http_proxy"]),
            https_proxy: first(&["HTTPS_PROXY", "https_proxy"]),
            all_proxy: first(&["ALL_PROXY", "all_proxy"]),
            no_proxy: first(&["NO_PROXY", "no_proxy"]),
            ssl_cert_file: first(&["SSL_CERT_FILE"]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_cases_uppercase_first_and_skips_empty_values() {
        let env = ProxyEnv::from_vars([
            ("https_proxy", "http://lower:1"),
            ("HTTPS_PROXY", "http://upper:1"),
            ("http_proxy", "http://lower:2"),
            ("NO_PROXY", " "),
            ("no_proxy", "localhost"),
            ("PATH", "/bin"),
        ]);
        assert_eq!(env.https_proxy.as_deref(), Some("http://upper:1"));
        assert_eq!(env.http_proxy.as_deref(), Some("http://lower:2"));
        assert_eq!(env.no_proxy.as_deref(), Some("localhost"));
        assert_eq!(env.all_proxy, None);
    }

    #[test]
    fn debug_hides_proxy_urls() {
        let env = ProxyEnv::from_vars([("HTTPS_PROXY", "http://u:secret@p:1")]);
        assert!(!format!("{env:?}").contains("secret"));
    }
}
