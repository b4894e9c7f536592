//! The inbound loop ([`compact_net::server::serve`]) with real sockets and a hyper client: it
//! serves keep-alive requests, a shutdown lets the request in flight finish while new connections
//! are refused, the drain is bounded, and running out of file descriptors does not end it.

use bytes::Bytes;
use compact_net::server::{serve, ServeOptions, Stopped};
use compact_net::Body;
use http_body_util::BodyExt as _;
use hyper::{Request, Response};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::JoinHandle;

/// A running loop: its address, the trigger of its shutdown, and the task that returns how it
/// stopped.
struct Running {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    stopped: JoinHandle<Stopped>,
}

/// Starts the loop on a loopback port with a service that answers `/slow` once `release` is
/// notified (telling `entered` when it starts waiting) and every other path with its own path.
/// `on_stop` is sent when the shutdown future completes, which is when the loop stops accepting.
async fn start(
    options: ServeOptions,
    entered: mpsc::UnboundedSender<()>,
    release: Arc<Notify>,
    on_stop: Option<oneshot::Sender<()>>,
) -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
        let (entered, release) = (entered.clone(), Arc::clone(&release));
        async move {
            let path = req.uri().path().to_owned();
            if path == "/slow" {
                let _ = entered.send(());
                release.notified().await;
            }
            Ok::<_, Infallible>(Response::new(Body::from(Bytes::from(path))))
        }
    });
    let (stop, stop_asked) = oneshot::channel::<()>();
    let stopped = tokio::spawn(async move {
        serve(listener, service, &options, async move {
            let _ = stop_asked.await;
            if let Some(on_stop) = on_stop {
                let _ = on_stop.send(());
            }
        })
        .await
    });
    Running {
        addr,
        stop,
        stopped,
    }
}

/// The loop with the default options, for tests that never ask for `/slow`.
async fn start_plain() -> Running {
    let (entered, _) = mpsc::unbounded_channel();
    start(
        ServeOptions::default(),
        entered,
        Arc::new(Notify::new()),
        None,
    )
    .await
}

/// A client connection to `addr`: its sender, its driver running on a task.
async fn connect(addr: SocketAddr) -> hyper::client::conn::http1::SendRequest<Body> {
    let stream = TcpStream::connect(addr).await.unwrap();
    client_over(stream).await
}

async fn client_over(stream: TcpStream) -> hyper::client::conn::http1::SendRequest<Body> {
    let (sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);
    sender
}

/// GET `path` on `sender`: the status and the body's text.
async fn get(
    sender: &mut hyper::client::conn::http1::SendRequest<Body>,
    path: &str,
) -> (u16, String) {
    sender.ready().await.unwrap();
    let request = Request::get(path)
        .header("host", "127.0.0.1")
        .body(Body::default())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

#[tokio::test]
async fn server_serves_several_requests_on_one_kept_alive_connection() {
    let running = start_plain().await;
    let mut client = connect(running.addr).await;
    assert_eq!(get(&mut client, "/one").await, (200, "/one".to_owned()));
    assert_eq!(get(&mut client, "/two").await, (200, "/two".to_owned()));
    // A second connection at the same time is served too.
    let mut other = connect(running.addr).await;
    assert_eq!(get(&mut other, "/three").await, (200, "/three".to_owned()));
    drop((client, other));
    running.stop.send(()).unwrap();
    let stopped = running.stopped.await.unwrap();
    assert!(stopped.drained);
    assert_eq!(stopped.accept_errors, 0);
}

/// The runtime is single-threaded, so once `on_stop` arrives the loop has also closed its
/// listener (both happen in the one poll that saw the shutdown).
#[tokio::test(flavor = "current_thread")]
async fn server_shutdown_lets_the_request_in_flight_finish_and_refuses_new_connections() {
    let (entered, mut entered_rx) = mpsc::unbounded_channel();
    let release = Arc::new(Notify::new());
    let (on_stop, stop_seen) = oneshot::channel();
    let running = start(
        ServeOptions::default(),
        entered,
        Arc::clone(&release),
        Some(on_stop),
    )
    .await;
    let mut client = connect(running.addr).await;
    let slow = tokio::spawn(async move { get(&mut client, "/slow").await });
    entered_rx.recv().await.unwrap();

    running.stop.send(()).unwrap();
    stop_seen.await.unwrap();
    let refused = TcpStream::connect(running.addr).await;
    assert_eq!(
        refused.map(|_| ()).map_err(|e| e.kind()),
        Err(std::io::ErrorKind::ConnectionRefused),
        "a connection after shutdown is refused"
    );
    assert!(!running.stopped.is_finished(), "the loop waits for /slow");

    release.notify_one();
    assert_eq!(slow.await.unwrap(), (200, "/slow".to_owned()));
    let stopped = running.stopped.await.unwrap();
    assert!(stopped.drained, "the request finished within the drain");
}

#[tokio::test]
async fn server_drain_is_bounded_by_the_drain_timeout() {
    let (entered, mut entered_rx) = mpsc::unbounded_channel();
    let options = ServeOptions {
        drain_timeout: Duration::from_millis(20),
        ..ServeOptions::default()
    };
    // `/slow` is never released: only the drain timeout lets the loop return.
    let running = start(options, entered, Arc::new(Notify::new()), None).await;
    let mut client = connect(running.addr).await;
    let _slow = tokio::spawn(async move { get(&mut client, "/slow").await });
    entered_rx.recv().await.unwrap();
    running.stop.send(()).unwrap();
    let stopped = running.stopped.await.unwrap();
    assert!(!stopped.drained);
}

/// Set in the child process that [`server_keeps_accepting_after_running_out_of_file_descriptors`]
/// starts: the limit on descriptors is the process's, so the test runs alone in a process of its
/// own (under a lower limit, set by the shell's `ulimit`) under either test runner.
#[cfg(target_os = "linux")]
const OUT_OF_FILES_CHILD: &str = "COMPACT_NET_TEST_OUT_OF_FILES_CHILD";

/// How many descriptors the child may hold: enough for the runtime, the listener and the client,
/// few enough to use up at once.
#[cfg(target_os = "linux")]
const CHILD_FILE_LIMIT: &str = "256";

#[cfg(target_os = "linux")]
#[test]
fn server_keeps_accepting_after_running_out_of_file_descriptors() {
    if std::env::var_os(OUT_OF_FILES_CHILD).is_some() {
        out_of_files::run();
        return;
    }
    let name = "server::server_keeps_accepting_after_running_out_of_file_descriptors";
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n {CHILD_FILE_LIMIT} && exec \"$0\" \"$@\""
        ))
        .arg(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(OUT_OF_FILES_CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "the child test failed or did not run:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[cfg(target_os = "linux")]
mod out_of_files {
    use super::*;
    use std::fs::File;
    use tracing::span;

    /// Linux's "too many open files".
    const EMFILE: i32 = 24;

    /// A `tracing` subscriber that notifies `warned` at each warning of this crate: the loop's
    /// sign that an accept failed.
    struct Warnings {
        warned: Arc<Notify>,
    }

    impl tracing::Subscriber for Warnings {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
            span::Id::from_u64(1)
        }
        fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
        fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            let meta = event.metadata();
            if *meta.level() == tracing::Level::WARN && meta.target().starts_with("compact_net") {
                self.warned.notify_one();
            }
        }
        fn enter(&self, _: &span::Id) {}
        fn exit(&self, _: &span::Id) {}
    }

    pub(super) fn run() {
        let warned = Arc::new(Notify::new());
        let _subscriber = tracing::subscriber::set_default(Warnings {
            warned: Arc::clone(&warned),
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let running = start_plain().await;
            // Connected (the kernel completes the handshake) before the descriptors run out.
            let stream = TcpStream::connect(running.addr).await.unwrap();
            let held = use_up_descriptors();
            assert!(!held.is_empty());

            // The loop now fails to accept the pending connection, says so, and keeps going.
            warned.notified().await;
            assert!(!running.stopped.is_finished());
            drop(held);

            let mut client = client_over(stream).await;
            assert_eq!(get(&mut client, "/after").await, (200, "/after".to_owned()));
            drop(client);
            running.stop.send(()).unwrap();
            let stopped = running.stopped.await.unwrap();
            assert!(stopped.accept_errors >= 1, "{stopped:?}");
        });
    }

    /// Opens `/dev/null` until the process has no descriptor left: the files, to close later.
    fn use_up_descriptors() -> Vec<File> {
        let mut held = Vec::new();
        loop {
            match File::open("/dev/null") {
                Ok(file) => held.push(file),
                Err(e) => {
                    assert_eq!(e.raw_os_error(), Some(EMFILE), "{e}");
                    return held;
                }
            }
        }
    }
}
