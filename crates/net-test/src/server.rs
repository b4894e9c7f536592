//! [`TlsServer`]: a loopback TLS server with a [`TestCa`] certificate, echoing requests or
//! terminating TLS in front of a plain server.

use crate::ca::TestCa;
use crate::io_error;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

/// The protocols the server offers over ALPN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alpn {
    /// `http/1.1` only.
    Http1,
    /// `h2`, then `http/1.1`.
    Http2,
}

/// What answers behind TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Every request is answered 200 with lines `version=...`, `method=...`, `uri=...`,
    /// `proxy-authorization=yes|no`.
    Echo,
    /// The decrypted bytes go to this plain server (use [`Alpn::Http1`] unless it speaks HTTP/2).
    Forward(SocketAddr),
}

/// A loopback server; it stops when dropped.
#[derive(Debug)]
pub struct TlsServer {
    addr: SocketAddr,
    scheme: &'static str,
    task: JoinHandle<()>,
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TlsServer {
    /// TLS on 127.0.0.1 with a certificate of `ca` for `localhost` and `127.0.0.1`.
    pub async fn start(ca: &TestCa, backend: Backend, alpn: Alpn) -> io::Result<TlsServer> {
        let (chain, key) = ca.server_cert()?;
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(io_error)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(io_error)?;
        config.alpn_protocols = match alpn {
            Alpn::Http1 => vec![b"http/1.1".to_vec()],
            Alpn::Http2 => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        };
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    // A client that refuses the certificate ends the handshake: not an error here.
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    match backend {
                        Backend::Echo => serve_echo(tls).await,
                        Backend::Forward(to) => {
                            if let Ok(mut plain) = TcpStream::connect(to).await {
                                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                            }
                        }
                    }
                });
            }
        });
        Ok(TlsServer {
            addr,
            scheme: "https",
            task,
        })
    }

    /// A plain-HTTP echo server (HTTP/1.1, and HTTP/2 with prior knowledge).
    pub async fn plain_echo() -> io::Result<TlsServer> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(serve_echo(tcp));
            }
        });
        Ok(TlsServer {
            addr,
            scheme: "http",
            task,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https://127.0.0.1:PORT` (`http://` for [`TlsServer::plain_echo`]).
    pub fn url(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    /// `https://localhost:PORT`: the same server by name.
    pub fn localhost_url(&self) -> String {
        format!("{}://localhost:{}", self.scheme, self.addr.port())
    }
}

async fn serve_echo<S>(io: S)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(|request: Request<Incoming>| async move {
        let text = format!(
            "version={:?}\nmethod={}\nuri={}\nproxy-authorization={}\n",
            request.version(),
            request.method(),
            request.uri(),
            if request.headers().contains_key("proxy-authorization") {
                "yes"
            } else {
                "no"
            }
        );
        Ok::<_, std::convert::Infallible>(Response::new(Full::new(Bytes::from(text))))
    });
    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(io), service)
        .await;
}
