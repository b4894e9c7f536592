//! The summariser behind a corporate network: its calls go through an HTTP proxy's CONNECT tunnel
//! to an HTTPS endpoint (a TLS front with a private CA before the simulator) trusted through the
//! configured CA file, with the client built from settings and a `ProxyEnv` passed in.

use crate::summarize::{config, request, session};
use compact_llm::{build, ProviderKind};
use compact_net::{Client, NetSettings, ProxyEnv};
use compact_net_test::{Alpn, Backend, TestCa, TestProxy, TlsServer};
use compact_sim::{ScriptedReply, SimConfig, Simulator};

#[tokio::test]
async fn the_summariser_goes_through_the_connect_proxy_to_a_private_ca_endpoint() {
    let ca = TestCa::new("Compact summariser test CA").unwrap();
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    sim.push_reply(ScriptedReply::text("## Goal and user requests\n- ship it"));
    let front = TlsServer::start(&ca, Backend::Forward(sim.addr()), Alpn::Http1)
        .await
        .unwrap();
    let corporate = TestProxy::start(Some(("summariser", "pw"))).await.unwrap();
    let env = ProxyEnv::from_vars([("https_proxy", corporate.url_with("summariser", "pw"))]);
    let settings = NetSettings {
        ca_file: Some(ca.pem_file().to_path_buf()),
        ..NetSettings::default()
    };
    let mut c = config(ProviderKind::OpenAi, &sim);
    c.base_url = format!("{}/v1", front.localhost_url());
    c.client = Some(Client::new(&settings, &env).unwrap());
    let conv = session();
    let summary = build(c)
        .unwrap()
        .summarize(request(&conv.items, 500))
        .await
        .unwrap();
    assert!(summary.text.contains("ship it"), "{}", summary.text);
    assert_eq!(sim.requests().len(), 1);
    assert_eq!(corporate.tunnels(), 1);
    assert_eq!(
        corporate.targets(),
        vec![format!("localhost:{}", front.addr().port())]
    );
}
