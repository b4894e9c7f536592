//! [`serve`]: the pages over HTTP/1.1 with hyper (the stack the proxy uses), for `compactctl ui`.
//! GET and HEAD only; request bodies are never read; each page is rendered on the blocking pool
//! (stores are synchronous).

use crate::{Response as Page, Ui};
use bytes::Bytes;
use compact_session::Store;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Why serving stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The listening socket failed.
    #[error("cannot accept connections: {0}")]
    Accept(#[from] std::io::Error),
}

/// `page` as an HTTP response with its headers (no body for HEAD).
pub(crate) fn to_http(page: Page, head: bool) -> Response<Full<Bytes>> {
    http_response(page, head, |body| Full::new(Bytes::from(body)))
}

/// `page` as an HTTP response of any body type (`body` makes it from the page's text; empty for
/// HEAD), with its status, content type and every header of [`Page::headers`]: for servers that
/// mount the pages under their own routes (the proxy's `/admin/ui/`).
pub fn http_response<B>(page: Page, head: bool, body: impl FnOnce(String) -> B) -> Response<B> {
    let headers = page.headers();
    let mut r = Response::new(body(if head { String::new() } else { page.body }));
    *r.status_mut() =
        StatusCode::from_u16(page.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let h = r.headers_mut();
    h.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(page.content_type),
    );
    for (name, value) in headers {
        h.insert(name, hyper::header::HeaderValue::from_static(value));
    }
    r
}

async fn answer(
    ui: Arc<Ui>,
    store: Arc<dyn Store>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let head = req.method() == Method::HEAD;
    if req.method() != Method::GET && !head {
        let mut r = to_http(
            Page {
                status: 405,
                content_type: "text/plain; charset=utf-8",
                body: "only GET and HEAD\n".to_owned(),
            },
            false,
        );
        r.headers_mut().insert(
            hyper::header::ALLOW,
            hyper::header::HeaderValue::from_static("GET, HEAD"),
        );
        return Ok(r);
    }
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or("").to_owned();
    let page = tokio::task::spawn_blocking(move || ui.handle(store.as_ref(), &path, &query))
        .await
        .unwrap_or_else(|_| Page {
            status: 500,
            content_type: "text/plain; charset=utf-8",
            body: "the page failed\n".to_owned(),
        });
    Ok(to_http(page, head))
}

/// Serves the pages of `store` at the root of `listener` until `shutdown` completes, then lets
/// open requests finish.
pub async fn serve(
    listener: TcpListener,
    store: Arc<dyn Store>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let ui = Arc::new(Ui::new(""));
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, _) = match accepted {
                    Ok(a) => a,
                    // A connection that failed before it was accepted (reset, too many files).
                    Err(_) => continue,
                };
                let (ui, store) = (Arc::clone(&ui), Arc::clone(&store));
                let service = hyper::service::service_fn(move |req| {
                    answer(Arc::clone(&ui), Arc::clone(&store), req)
                });
                let conn = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service);
                let watched = graceful.watch(conn);
                tokio::spawn(async move {
                    let _ = watched.await;
                });
            }
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}
