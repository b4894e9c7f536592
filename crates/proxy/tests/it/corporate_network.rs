//! Behind a corporate network: the proxy's upstream calls go through an HTTP proxy's CONNECT
//! tunnel to an HTTPS upstream (a TLS front with a private CA before the simulator), trusted
//! because the configured CA file says so; the client is built from settings and a `ProxyEnv`
//! passed in, never from this process's environment.

use crate::support::{Harness, Options, Wire};
use bytes::Bytes;
use compact_net::{Client, NetSettings, ProxyEnv};
use compact_net_test::{Alpn, Backend, TestCa, TestProxy, TlsServer};
use compact_sim::{SimConfig, Simulator};
use std::sync::Arc;

/// A harness whose upstream is `base_url`, reached through `client`.
async fn harness(base_url: String, client: Client) -> Harness {
    Harness::with(Options {
        upstream: Some(base_url),
        adjust: Some(Arc::new(move |config| {
            config.client = Some(client.clone());
        })),
        ..Options::default()
    })
    .await
}

#[tokio::test]
async fn upstream_calls_go_through_the_connect_proxy_to_an_upstream_trusted_by_the_ca_file() {
    let ca = TestCa::new("Compact proxy test CA").unwrap();
    let sim = Simulator::spawn(SimConfig::with_window(100_000))
        .await
        .unwrap();
    let front = TlsServer::start(&ca, Backend::Forward(sim.addr()), Alpn::Http1)
        .await
        .unwrap();
    let corporate = TestProxy::start(Some(("agent", "s3cret"))).await.unwrap();
    let settings = NetSettings {
        ca_file: Some(ca.pem_file().to_path_buf()),
        ..NetSettings::default()
    };
    let env = ProxyEnv::from_vars([("HTTPS_PROXY", corporate.url_with("agent", "s3cret"))]);
    let h = harness(front.localhost_url(), Client::new(&settings, &env).unwrap()).await;

    for (wire, stream) in [
        (Wire::Chat, false),
        (Wire::Chat, true),
        (Wire::Anthropic, false),
        (Wire::Responses, true),
    ] {
        let body = wire.first_request("sim-model", &format!("hello {wire:?} {stream}"), stream);
        let reply = h
            .send("POST", wire.path(), &[], Bytes::from(body.to_string()))
            .await;
        assert_eq!(reply.status, 200, "{wire:?} {stream}: {}", reply.text());
    }
    // Every call reached the simulator behind TLS, and only through the corporate proxy.
    assert_eq!(sim.requests().len(), 4);
    assert!(h.sim.requests().is_empty());
    assert!(corporate.tunnels() >= 1);
    let target = format!("localhost:{}", front.addr().port());
    assert!(
        corporate.targets().iter().all(|t| *t == target),
        "{:?}",
        corporate.targets()
    );
    assert_eq!(corporate.refused(), 0);
    // The password is in no log line.
    assert!(h.log.lines().iter().all(|l| !l.contains("s3cret")));
}

#[tokio::test]
async fn an_upstream_signed_by_an_unknown_ca_is_a_502_naming_the_host() {
    let ca = TestCa::new("Compact proxy test CA").unwrap();
    let sim = Simulator::spawn(SimConfig::with_window(100_000))
        .await
        .unwrap();
    let front = TlsServer::start(&ca, Backend::Forward(sim.addr()), Alpn::Http1)
        .await
        .unwrap();
    let corporate = TestProxy::start(None).await.unwrap();
    let env = ProxyEnv::from_vars([("HTTPS_PROXY", corporate.url())]);
    let h = harness(
        front.localhost_url(),
        Client::new(&NetSettings::default(), &env).unwrap(),
    )
    .await;
    let body = Wire::Chat.first_request("sim-model", "hello", false);
    let reply = h
        .send(
            "POST",
            Wire::Chat.path(),
            &[],
            Bytes::from(body.to_string()),
        )
        .await;
    assert_eq!(reply.status, 502, "{}", reply.text());
    let host = format!("localhost:{}", front.addr().port());
    let logged = h.log.lines().join("\n");
    assert!(
        logged.contains(&host) && logged.contains("network.ca_file"),
        "{logged}"
    );
    assert!(sim.requests().is_empty());
    assert_eq!(corporate.tunnels(), 1);
}

#[tokio::test]
async fn no_proxy_sends_the_upstream_call_directly() {
    let corporate = TestProxy::start(None).await.unwrap();
    let env = ProxyEnv::from_vars([
        ("HTTP_PROXY", corporate.url()),
        ("HTTPS_PROXY", corporate.url()),
        ("NO_PROXY", "127.0.0.1".to_owned()),
    ]);
    let client = Client::new(&NetSettings::default(), &env).unwrap();
    let h = Harness::with(Options {
        adjust: Some(Arc::new(move |config| {
            config.client = Some(client.clone());
        })),
        ..Options::default()
    })
    .await;
    let body = Wire::Chat.first_request("sim-model", "hello", false);
    let reply = h
        .send(
            "POST",
            Wire::Chat.path(),
            &[],
            Bytes::from(body.to_string()),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(h.sim.requests().len(), 1);
    assert_eq!((corporate.tunnels(), corporate.forwards()), (0, 0));
}
