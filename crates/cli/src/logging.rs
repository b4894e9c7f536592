//! The one `tracing` subscriber of `compactctl`, installed at start-up: the libraries (the proxy,
//! the session runtime, rmcp, rustls, tokio-postgres through the `log` bridge) only emit events.
//!
//! Which events: `RUST_LOG` when set (`tracing_subscriber`'s `EnvFilter` syntax), else
//! [`DEFAULT_FILTER`]; whatever it says, the dependencies of `compact_proxy::log::LEAKY_TARGETS`
//! stay at or below the level that prints no header value or query parameter. Where: standard
//! error, one line per event, JSON (`--log-format json`, the default: the lines the proxy always
//! wrote, `compact_proxy::log::json_line`) or text (`--log-format text`).

use compact_proxy::log::{allowed, json_line};
use std::fmt;
use tracing::{Event, Subscriber};
use tracing_subscriber::filter::{filter_fn, EnvFilter};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// Without `RUST_LOG`: Compact's own events from `info`, its dependencies' from `warn` (the
/// `compact` prefix covers every `compact_*` crate and `compactctl`).
pub const DEFAULT_FILTER: &str = "warn,compact=info";

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One JSON object per line.
    Json,
    /// Human-readable text.
    Text,
}

/// Installs the subscriber for this process (once; a second call changes nothing).
pub fn init(format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let guard = filter_fn(|meta| allowed(meta.target(), meta.level()));
    let output = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let output = match format {
        LogFormat::Json => output.event_format(JsonLines).boxed(),
        LogFormat::Text => output.with_ansi(false).boxed(),
    };
    // `try_init` also routes the `log` crate's records (tokio-postgres, rustls) here.
    let _ = tracing_subscriber::registry()
        .with(output.with_filter(guard).with_filter(filter))
        .try_init();
}

/// The JSON line format.
struct JsonLines;

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        writeln!(writer, "{}", json_line(event))
    }
}
