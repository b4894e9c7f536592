//! [`serve`]: the pages over HTTP/1.1 on the workspace's one accept loop ([`compact_net::server`],
//! as the proxy's), for `compactctl ui`.
//! GET and HEAD, and POST of a review form (at most [`crate::review::MAX_FORM_BYTES`], from the
//! page's own origin) when the UI has a review desk; each page is rendered on the blocking pool
//! (stores are synchronous). Served on a loopback address, requests must name a loopback host
//! (`Host`), so that a page of another site that rebinds its name to 127.0.0.1 gets nothing.

use crate::{Response as Page, Ui};
use bytes::Bytes;
use compact_net::server::ServeOptions;
use compact_session::Store;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
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
    if let Some(v) = page
        .location
        .as_deref()
        .and_then(|l| hyper::header::HeaderValue::from_str(l).ok())
    {
        h.insert(hyper::header::LOCATION, v);
    }
    r
}

/// The host of a `Host` header or an origin's authority, without the port.
fn host_name(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    authority.rsplit_once(':').map_or(authority, |(h, _)| h)
}

/// True for the names of this machine's loopback interface.
pub fn is_loopback_host(authority: &str) -> bool {
    let host = host_name(authority);
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// True when a state-changing request comes from the page's own origin: its `Origin` header, when
/// the browser sent one, is `http://` or `https://` followed by the request's `Host`.
pub fn same_origin<B>(req: &Request<B>) -> bool {
    let Some(origin) = req.headers().get(hyper::header::ORIGIN) else {
        return true;
    };
    let host = req
        .headers()
        .get(hyper::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let origin = origin.to_str().unwrap_or("");
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    !host.is_empty() && authority.is_some_and(|a| a.eq_ignore_ascii_case(host))
}

/// False when the browser says the request comes from another site (`Sec-Fetch-Site` other than
/// `same-origin` or `none`, the user's own navigation); true when it does not say.
pub fn fetched_from_here<B>(req: &Request<B>) -> bool {
    req.headers()
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_none_or(|site| site == "same-origin" || site == "none")
}

/// A review form's body as text: at most [`crate::review::MAX_FORM_BYTES`] (else 413), UTF-8
/// (else 400). The error is the status and why, for the server to answer in its own shape.
pub async fn read_form<B>(body: B) -> Result<String, (u16, &'static str)>
where
    B: hyper::body::Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let limited = http_body_util::Limited::new(body, crate::review::MAX_FORM_BYTES);
    let body = http_body_util::BodyExt::collect(limited)
        .await
        .map_err(|_| (413, "the form is too large"))?;
    String::from_utf8(body.to_bytes().to_vec()).map_err(|_| (400, "the form is not UTF-8"))
}

fn plain(status: u16, text: &str) -> Page {
    Page {
        status,
        content_type: "text/plain; charset=utf-8",
        body: format!("{text}\n"),
        location: None,
    }
}

async fn answer(
    ui: Arc<Ui>,
    store: Arc<dyn Store>,
    loopback: bool,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let head = req.method() == Method::HEAD;
    let post = req.method() == Method::POST && ui.reviews();
    if req.method() != Method::GET && !head && !post {
        let (allow, text) = if ui.reviews() {
            ("GET, HEAD, POST", "only GET, HEAD and POST")
        } else {
            ("GET, HEAD", "only GET and HEAD")
        };
        let mut r = to_http(plain(405, text), false);
        r.headers_mut().insert(
            hyper::header::ALLOW,
            hyper::header::HeaderValue::from_static(allow),
        );
        return Ok(r);
    }
    if loopback {
        let host = req
            .headers()
            .get(hyper::header::HOST)
            .map(|h| h.to_str().unwrap_or(""));
        if host.is_some_and(|h| !is_loopback_host(h)) {
            return Ok(to_http(
                plain(
                    421,
                    "this server answers only for localhost and loopback addresses",
                ),
                head,
            ));
        }
    }
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or("").to_owned();
    // Planning a compaction may call an LLM summariser: only the UI's own pages lead there (a page
    // of another site that loads or opens the address is refused, where the browser says so).
    if path.ends_with("/review") && !fetched_from_here(&req) {
        return Ok(to_http(
            plain(403, "a review is opened from the session's page"),
            head,
        ));
    }
    let form = if post {
        if !same_origin(&req) {
            return Ok(to_http(plain(403, "a form from another origin"), false));
        }
        let form_type = req
            .headers()
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.split(';').next().is_some_and(|t| {
                    t.trim()
                        .eq_ignore_ascii_case("application/x-www-form-urlencoded")
                })
            });
        if !form_type {
            return Ok(to_http(
                plain(415, "a form is sent as application/x-www-form-urlencoded"),
                false,
            ));
        }
        match read_form(req.into_body()).await {
            Ok(text) => Some(text),
            Err((status, why)) => return Ok(to_http(plain(status, why), false)),
        }
    } else {
        None
    };
    let page = tokio::task::spawn_blocking(move || match form {
        Some(form) => ui.handle_post(store.as_ref(), &path, &form),
        None => ui.handle(store.as_ref(), &path, &query),
    })
    .await
    .unwrap_or_else(|_| plain(500, "the page failed"));
    Ok(to_http(page, head))
}

/// Serves the pages of `ui` (mounted at the root) over `store` on `listener` until `shutdown`
/// completes, then lets open requests finish (for at most
/// [`compact_net::server::DEFAULT_DRAIN_TIMEOUT`]).
pub async fn serve(
    listener: TcpListener,
    ui: Ui,
    store: Arc<dyn Store>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let ui = Arc::new(ui);
    let loopback = listener.local_addr()?.ip().is_loopback();
    let service = hyper::service::service_fn(move |req| {
        answer(Arc::clone(&ui), Arc::clone(&store), loopback, req)
    });
    compact_net::server::serve(listener, service, &ServeOptions::default(), shutdown).await;
    Ok(())
}
