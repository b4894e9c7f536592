//! The outbound client against real loopback parts: an HTTP proxy written for the tests (CONNECT
//! tunnels, absolute-form forwarding, basic credentials) and TLS servers whose certificates a
//! private CA made in the test signed. No test sets a process-wide variable: each passes its own
//! [`ProxyEnv`].
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod server;

use compact_net::http::{Request, Version};
use compact_net::{BlockingClient, Body, Client, NetError, NetSettings, ProxyEnv};
use compact_net_test::{Alpn, Backend, TestCa, TestProxy, TlsServer};
use http_body_util::BodyExt as _;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(20);

fn trusting(ca: &TestCa) -> NetSettings {
    NetSettings {
        ca_file: Some(ca.pem_file().to_path_buf()),
        ..NetSettings::default()
    }
}

fn env(vars: &[(&str, &str)]) -> ProxyEnv {
    ProxyEnv::from_vars(vars.iter().copied())
}

async fn get(client: &Client, url: &str) -> Result<(Version, String), NetError> {
    let request = Request::get(url).body(Body::default()).unwrap();
    let response = client.send(request, TIMEOUT).await?;
    let version = response.version();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Ok((version, String::from_utf8_lossy(&body).into_owned()))
}

#[tokio::test]
async fn https_goes_through_the_connect_proxy_trusting_the_configured_ca() {
    let ca = TestCa::new("Compact test CA").unwrap();
    let server = TlsServer::start(&ca, Backend::Echo, Alpn::Http1)
        .await
        .unwrap();
    let proxy = TestProxy::start(None).await.unwrap();
    let client = Client::new(&trusting(&ca), &env(&[("HTTPS_PROXY", &proxy.url())])).unwrap();
    for path in ["/v1/a", "/v1/b"] {
        let (_, body) = get(&client, &format!("{}{path}", server.localhost_url()))
            .await
            .unwrap();
        assert!(body.contains(&format!("uri={path}")), "{body}");
        // The credentials of a tunnel go to the proxy only.
        assert!(body.contains("proxy-authorization=no"), "{body}");
    }
    // One tunnel: the pooled connection inside it served both requests.
    assert_eq!(proxy.tunnels(), 1);
    assert_eq!(
        proxy.targets(),
        vec![format!("localhost:{}", server.addr().port())]
    );
}

#[tokio::test]
async fn ssl_cert_file_is_trusted_like_the_configured_ca() {
    let ca = TestCa::new("Compact test CA").unwrap();
    let server = TlsServer::start(&ca, Backend::Echo, Alpn::Http1)
        .await
        .unwrap();
    let file = ca.pem_file().to_str().unwrap().to_owned();
    let client = Client::new(&NetSettings::default(), &env(&[("SSL_CERT_FILE", &file)])).unwrap();
    get(&client, &server.url()).await.unwrap();
}

#[tokio::test]
async fn a_proxy_demanding_credentials_gets_those_of_its_url() {
    let ca = TestCa::new("Compact test CA").unwrap();
    let server = TlsServer::start(&ca, Backend::Echo, Alpn::Http1)
        .await
        .unwrap();
    let proxy = TestProxy::start(Some(("alice", "p@ss word")))
        .await
        .unwrap();

    let with = Client::new(
        &NetSettings {
            proxy: Some(proxy.url_with("alice", "p%40ss%20word")),
            ..trusting(&ca)
        },
        &ProxyEnv::default(),
    )
    .unwrap();
    get(&with, &server.url()).await.unwrap();
    assert_eq!(proxy.tunnels(), 1);

    let wrong = Client::new(
        &trusting(&ca),
        &env(&[("https_proxy", &proxy.url_with("alice", "hunter2"))]),
    )
    .unwrap();
    let err = get(&wrong, &server.url()).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, NetError::Proxy { .. }), "{err:?}");
    assert!(text.contains("407"), "{text}");
    assert!(text.contains(&server.addr().to_string()), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    assert!(!format!("{wrong:?}").contains("hunter2"));

    let without = Client::new(&trusting(&ca), &env(&[("HTTPS_PROXY", &proxy.url())])).unwrap();
    let text = get(&without, &server.url()).await.unwrap_err().to_string();
    assert!(
        text.contains("407") && text.contains("user:password@"),
        "{text}"
    );
    assert_eq!(proxy.refused(), 2);
    assert_eq!(proxy.tunnels(), 1);
}

#[tokio::test]
async fn plain_http_goes_to_the_proxy_in_absolute_form_with_its_credentials() {
    let server = TlsServer::plain_echo().await.unwrap();
    let proxy = TestProxy::start(Some(("bob", "secret"))).await.unwrap();
    let client = Client::new(
        &NetSettings::default(),
        &env(&[("ALL_PROXY", &proxy.url_with("bob", "secret"))]),
    )
    .unwrap();
    let url = format!("{}/v1/chat/completions?x=1", server.url());
    let (_, body) = get(&client, &url).await.unwrap();
    // The proxy got the absolute URL with its credentials (it refuses requests without them), and
    // passed the request on in origin form without them.
    assert_eq!(proxy.request_lines(), vec![format!("GET {url} HTTP/1.1")]);
    assert_eq!(
        (proxy.forwards(), proxy.tunnels(), proxy.refused()),
        (1, 0, 0)
    );
    assert!(body.contains("uri=/v1/chat/completions?x=1"), "{body}");
    assert!(body.contains("proxy-authorization=no"), "{body}");
}

#[tokio::test]
async fn no_proxy_bypasses_the_proxy_by_host_address_port_or_star() {
    let ca = TestCa::new("Compact test CA").unwrap();
    let server = TlsServer::start(&ca, Backend::Echo, Alpn::Http1)
        .await
        .unwrap();
    let proxy = TestProxy::start(None).await.unwrap();
    let port = server.addr().port();
    for no_proxy in [
        "localhost".to_owned(),
        ".localhost".to_owned(),
        format!("example.com, localhost:{port}"),
        "*".to_owned(),
    ] {
        let client = Client::new(
            &trusting(&ca),
            &env(&[("HTTPS_PROXY", &proxy.url()), ("no_proxy", &no_proxy)]),
        )
        .unwrap();
        get(&client, &server.localhost_url()).await.unwrap();
    }
    for no_proxy in ["127.0.0.1", "127.0.0.0/8"] {
        let client = Client::new(
            &NetSettings {
                no_proxy: Some(no_proxy.to_owned()),
                ..trusting(&ca)
            },
            &env(&[("HTTPS_PROXY", &proxy.url())]),
        )
        .unwrap();
        get(&client, &server.url()).await.unwrap();
    }
    assert_eq!(proxy.tunnels(), 0);
    // Another port of the same host still goes through the proxy.
    let client = Client::new(
        &trusting(&ca),
        &env(&[
            ("HTTPS_PROXY", &proxy.url()),
            ("NO_PROXY", &format!("localhost:{}", port.wrapping_add(1))),
        ]),
    )
    .unwrap();
    get(&client, &server.localhost_url()).await.unwrap();
    assert_eq!(proxy.tunnels(), 1);
}

#[tokio::test]
async fn an_untrusted_certificate_fails_naming_the_host_and_the_remedy() {
    let ca = TestCa::new("Compact test CA").unwrap();
    let other = TestCa::new("Some other CA").unwrap();
    let server = TlsServer::start(&ca, Backend::Echo, Alpn::Http1)
        .await
        .unwrap();
    let proxy = TestProxy::start(None).await.unwrap();
    for (settings, proxy_env) in [
        (NetSettings::default(), ProxyEnv::default()),
        (trusting(&other), env(&[("HTTPS_PROXY", &proxy.url())])),
    ] {
        let client = Client::new(&settings, &proxy_env).unwrap();
        let err = get(&client, &server.localhost_url()).await.unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, NetError::Tls { .. }), "{err:?}");
        assert!(
            text.contains(&format!("localhost:{}", server.addr().port())),
            "{text}"
        );
        assert!(text.contains("network.ca_file"), "{text}");
    }
}

#[tokio::test]
async fn a_bad_ca_file_is_an_error_naming_it() {
    let missing = std::env::temp_dir().join("compact-no-such-ca.pem");
    let err = Client::new(
        &NetSettings {
            ca_file: Some(missing.clone()),
            ..NetSettings::default()
        },
        &ProxyEnv::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("network.ca_file") && err.contains("compact-no-such-ca.pem"),
        "{err}"
    );
    let err = Client::new(
        &NetSettings::default(),
        &env(&[("SSL_CERT_FILE", "/dev/null")]),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("SSL_CERT_FILE") && err.contains("no PEM certificate"),
        "{err}"
    );
}

#[tokio::test]
async fn http2_is_negotiated_when_offered_also_through_a_tunnel() {
    let ca = TestCa::new("Compact test CA").unwrap();
    let h2 = TlsServer::start(&ca, Backend::Echo, Alpn::Http2)
        .await
        .unwrap();
    let h1 = TlsServer::start(&ca, Backend::Echo, Alpn::Http1)
        .await
        .unwrap();
    let direct = Client::new(&trusting(&ca), &ProxyEnv::default()).unwrap();
    let (version, body) = get(&direct, &format!("{}/x", h2.url())).await.unwrap();
    assert_eq!(version, Version::HTTP_2);
    assert!(body.contains("version=HTTP/2.0"), "{body}");
    let (version, _) = get(&direct, &h1.url()).await.unwrap();
    assert_eq!(version, Version::HTTP_11);

    let proxy = TestProxy::start(None).await.unwrap();
    let proxied = Client::new(&trusting(&ca), &env(&[("HTTPS_PROXY", &proxy.url())])).unwrap();
    let (version, _) = get(&proxied, &h2.url()).await.unwrap();
    assert_eq!(version, Version::HTTP_2);
    assert_eq!(proxy.tunnels(), 1);
}

#[test]
fn the_blocking_client_goes_through_the_same_proxy() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let ca = TestCa::new("Compact test CA").unwrap();
    let (server, proxy) = runtime.block_on(async {
        (
            TlsServer::start(&ca, Backend::Echo, Alpn::Http2)
                .await
                .unwrap(),
            TestProxy::start(None).await.unwrap(),
        )
    });
    let client = Client::new(&trusting(&ca), &env(&[("HTTPS_PROXY", &proxy.url())])).unwrap();
    let blocking = BlockingClient::new(client).unwrap();
    let request = Request::put(format!("{}/bucket/key", server.url()))
        .body(Body::from("object"))
        .unwrap();
    let answer = blocking.send(request, TIMEOUT, 1024).unwrap();
    assert_eq!(answer.status, 200);
    let body = String::from_utf8_lossy(&answer.body).into_owned();
    assert!(
        body.contains("method=PUT") && body.contains("version=HTTP/2.0"),
        "{body}"
    );
    // An answer past the bound is an error, not a truncated body.
    let request = Request::get(server.url()).body(Body::default()).unwrap();
    let err = blocking.send(request, TIMEOUT, 8).unwrap_err().to_string();
    assert!(err.contains("at most 8 bytes"), "{err}");
    assert_eq!(proxy.tunnels(), 1);
}
