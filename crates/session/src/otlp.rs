//! The OpenTelemetry exporter: the manager's events sent to an OTLP collector as spans and metrics,
//! through the official `opentelemetry`, `opentelemetry_sdk` and `opentelemetry-otlp` crates.
//!
//! - **Spans.** Each manager call that logs events becomes one span: `compact.preflight` for a
//!   preflight (seed 003's `before_model_call` span), `compact.<event>` for the others (a
//!   recovery, a usage record, a manual compaction). The span carries `session_id`, and for a
//!   preflight the decision (`decision`, `reason`, `model`, `t_est`, `max`, ...) and, when it
//!   compacted, `tokens_before`, `tokens_after` and `tokens_saved`. Every event is a span event
//!   named after it (`compact.trigger_decision`, ...) at its own time, its fields flattened into
//!   attributes (`policy.trigger_pct`, `kept.pinned`, ...) beside `session_id` and `event`.
//! - **Metrics.** Counters `compact.compactions`, `compact.tokens_saved`, `compact.failures`,
//!   `compact.events` (by `event`), and the queue's `compact.export.dropped` and
//!   `compact.export.failed`, read by a periodic reader and sent at every flush.
//!
//! The exporter runs on the [`ExportQueue`](crate::ExportQueue)'s worker thread, so it never slows
//! or fails a call: a slow collector fills the queue (new events are dropped and counted), and a
//! failed export is the queue's failure (counted, [`ExportQueue::last_error`](crate::ExportQueue::last_error)).
//! No global provider is set: [`OtlpExporter::open`] builds the tracer and meter providers from
//! the settings, and [`OtlpExporter::with_providers`] takes a host's own. Requests go out over
//! OTLP/HTTP (protobuf) through the workspace's one outbound client (`compact-net`: the host's
//! proxies and trusted roots; [`OtlpExporter::open_with`]) driven by its own runtime thread, so the
//! exporting threads need no async runtime, or, with the cargo feature `otlp-grpc`, over gRPC
//! (tonic) on a current-thread Tokio runtime that each of the two exporters owns and that runs
//! only while it exports. Header values (API keys) are never
//! logged nor shown by `Debug`.

use crate::event::CompactedEvent;
use crate::export::{ExportError, ExportStats, Exporter};
use compact_config::{OtlpProtocol, OtlpSettings};
use opentelemetry::metrics::{Counter, Meter, MeterProvider as _};
use opentelemetry::trace::{Span as _, SpanKind, Status, Tracer as _, TracerProvider as _};
use opentelemetry::{Array, Context, KeyValue, StringValue, Value as OtelValue};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider, SpanData, SpanExporter};
use opentelemetry_sdk::Resource;
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long one export may take, retries included, when the settings do not say.
pub const DEFAULT_OTLP_TIMEOUT: Duration = Duration::from_secs(10);
/// The `service.name` resource attribute when the settings do not say.
pub const DEFAULT_SERVICE_NAME: &str = "compact";
/// The largest collector answer read (an OTLP answer is a few bytes).
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// Why an [`OtlpExporter`] could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtlpError {
    /// The settings ask for something this build does not do.
    #[error("OTLP: {0}")]
    Unsupported(String),
    /// The OTLP crate refused the settings (the endpoint, an `OTEL_EXPORTER_OTLP_*` variable).
    #[error("OTLP {signal} exporter: {message}")]
    Build {
        /// `traces` or `metrics`.
        signal: &'static str,
        /// Why.
        message: String,
    },
}

/// The last failure of the wrapped span exporter, taken by the next [`Exporter::end_call`].
type Failure = Arc<Mutex<Option<String>>>;

/// The Tokio runtime a gRPC exporter runs on (its own, current-thread), none over HTTP.
#[cfg(feature = "otlp-grpc")]
type Runtime = Option<Arc<tokio::runtime::Runtime>>;
/// No runtime: OTLP/HTTP is sent by a blocking client.
#[cfg(not(feature = "otlp-grpc"))]
type Runtime = ();

/// Runs `work` to completion: on the exporter's runtime when it has one (tonic needs Tokio), else
/// in place (the SDK's processors poll exports with a plain executor on their own thread).
async fn on<F: std::future::Future + Send>(runtime: &Runtime, work: F) -> F::Output {
    #[cfg(feature = "otlp-grpc")]
    if let Some(runtime) = runtime {
        return runtime.block_on(work);
    }
    let _ = runtime;
    work.await
}

/// Calls `f` inside the exporter's runtime, if any (a gRPC channel's calls need its context).
fn within<T>(runtime: &Runtime, f: impl FnOnce() -> T) -> T {
    #[cfg(feature = "otlp-grpc")]
    if let Some(runtime) = runtime {
        let _entered = runtime.enter();
        return f();
    }
    let _ = runtime;
    f()
}

/// A span exporter that remembers its last failure, so that the queue can count it.
#[derive(Debug)]
struct Watched<E> {
    inner: E,
    failure: Failure,
    runtime: Runtime,
}

impl<E: SpanExporter> SpanExporter for Watched<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = on(&self.runtime, self.inner.export(batch)).await;
        if let Err(e) = &result {
            if let Ok(mut failure) = self.failure.lock() {
                *failure = Some(e.to_string());
            }
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        within(&self.runtime, || self.inner.shutdown_with_timeout(timeout))
    }

    fn force_flush(&self) -> OTelSdkResult {
        within(&self.runtime, || self.inner.force_flush())
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// A metric exporter run on its runtime, if any.
struct OnRuntime<E> {
    inner: E,
    runtime: Runtime,
}

impl<E: PushMetricExporter> PushMetricExporter for OnRuntime<E> {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        on(&self.runtime, self.inner.export(metrics)).await
    }

    fn force_flush(&self) -> OTelSdkResult {
        within(&self.runtime, || self.inner.force_flush())
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        within(&self.runtime, || self.inner.shutdown_with_timeout(timeout))
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}

/// The OTLP crate's HTTP client trait over the outbound client's blocking facade: the exporting
/// thread (the queue's worker, the metric reader's) awaits an exchange that runs on the client's
/// own runtime thread, each bounded by the export timeout.
#[derive(Debug, Clone)]
struct NetClient {
    client: compact_net::BlockingClient,
    timeout: Duration,
}

impl NetClient {
    fn new(client: Option<compact_net::Client>, timeout: Duration) -> Result<NetClient, OtlpError> {
        let failed = |e: compact_net::NetError| OtlpError::Build {
            signal: "traces",
            message: format!("HTTP client: {e}"),
        };
        let client = match client {
            Some(client) => client,
            None => compact_net::Client::direct().map_err(failed)?,
        };
        Ok(NetClient {
            client: compact_net::BlockingClient::new(client).map_err(failed)?,
            timeout,
        })
    }
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for NetClient {
    async fn send_bytes(
        &self,
        request: opentelemetry_http::Request<opentelemetry_http::Bytes>,
    ) -> Result<
        opentelemetry_http::Response<opentelemetry_http::Bytes>,
        opentelemetry_http::HttpError,
    > {
        let (parts, body) = request.into_parts();
        let request = opentelemetry_http::Request::from_parts(parts, compact_net::Body::new(body));
        let answer = self
            .client
            .send_async(request, self.timeout, MAX_ANSWER_BYTES)
            .await?;
        let mut response = opentelemetry_http::Response::new(answer.body);
        *response.status_mut() = answer.status;
        *response.headers_mut() = answer.headers;
        Ok(response)
    }
}

/// The counters sent as metrics.
struct Instruments {
    compactions: Counter<u64>,
    tokens_saved: Counter<u64>,
    failures: Counter<u64>,
    events: Counter<u64>,
}

/// The queue's counts, once the queue has started (see [`Exporter::attach`]).
type StatsSource = Arc<OnceLock<Arc<dyn Fn() -> ExportStats + Send + Sync>>>;

impl Instruments {
    fn new(meter: &Meter, stats: &StatsSource) -> Instruments {
        let observe =
            |name: &'static str, description: &'static str, pick: fn(ExportStats) -> u64| {
                let stats = Arc::clone(stats);
                meter
                    .u64_observable_counter(name)
                    .with_description(description)
                    .with_callback(move |observer| {
                        if let Some(stats) = stats.get() {
                            observer.observe(pick(stats()), &[]);
                        }
                    })
                    .build()
            };
        // Observable instruments live as long as the meter provider once registered.
        let _ = observe(
            "compact.export.dropped",
            "Events dropped because the export queue was full",
            |s| s.dropped,
        );
        let _ = observe("compact.export.failed", "Exporter calls that failed", |s| {
            s.failed
        });
        Instruments {
            compactions: meter
                .u64_counter("compact.compactions")
                .with_description("Compactions that produced a new view")
                .build(),
            tokens_saved: meter
                .u64_counter("compact.tokens_saved")
                .with_description("Tokens removed from requests by compaction")
                .with_unit("{token}")
                .build(),
            failures: meter
                .u64_counter("compact.failures")
                .with_description("Compactions that were due and failed")
                .build(),
            events: meter
                .u64_counter("compact.events")
                .with_description("Events exported, by name")
                .build(),
        }
    }

    fn record(&self, event: &Value) {
        let name = event.get("event").and_then(Value::as_str).unwrap_or("");
        self.events
            .add(1, &[KeyValue::new("event", name.to_owned())]);
        match name {
            "compact.compacted" => {
                let c = compacted(event).unwrap_or_default();
                let trigger = if c.trigger.is_empty() {
                    "auto".to_owned()
                } else {
                    c.trigger.clone()
                };
                self.compactions
                    .add(1, &[KeyValue::new("trigger", trigger)]);
                self.tokens_saved.add(c.tokens_saved() as u64, &[]);
            }
            "compact.failed" => self.failures.add(1, &[]),
            _ => {}
        }
    }
}

/// The typed fields of an exported `compact.compacted` event (the envelope's keys are ignored).
fn compacted(event: &Value) -> Option<CompactedEvent> {
    CompactedEvent::deserialize(event).ok()
}

/// Spans and metrics to an OTLP collector (see the module docs).
pub struct OtlpExporter {
    name: String,
    tracer: SdkTracer,
    tracer_provider: SdkTracerProvider,
    meter_provider: Option<SdkMeterProvider>,
    instruments: Option<Instruments>,
    stats: StatsSource,
    failure: Failure,
    /// Each session's events of the call being exported (a call's events arrive one by one).
    pending: Mutex<HashMap<String, Vec<Value>>>,
}

impl std::fmt::Debug for OtlpExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpExporter")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl OtlpExporter {
    /// Builds the tracer and meter providers `settings` describe: OTLP/HTTP protobuf to
    /// `endpoint` (`/v1/traces`, `/v1/metrics` under it), or, without one, to what
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` names (else the OTLP default, `http://localhost:4318`).
    /// OTLP/HTTP goes directly, trusting the system's roots: hosts pass their client to
    /// [`OtlpExporter::open_with`].
    pub fn open(settings: &OtlpSettings) -> Result<OtlpExporter, OtlpError> {
        OtlpExporter::open_with(settings, None)
    }

    /// Like [`OtlpExporter::open`], OTLP/HTTP going through `client` (the host's outbound client,
    /// with its proxies and trusted roots; `None`: direct).
    pub fn open_with(
        settings: &OtlpSettings,
        client: Option<compact_net::Client>,
    ) -> Result<OtlpExporter, OtlpError> {
        let timeout = settings
            .timeout_ms
            .map_or(DEFAULT_OTLP_TIMEOUT, Duration::from_millis);
        let ((spans, span_runtime), (metrics, metric_runtime)) = match settings.protocol {
            OtlpProtocol::Http => {
                let http = NetClient::new(client, timeout)?;
                (
                    (http_spans(settings, timeout, http.clone())?, Runtime::default()),
                    (http_metrics(settings, timeout, http)?, Runtime::default()),
                )
            }
            #[cfg(feature = "otlp-grpc")]
            OtlpProtocol::Grpc => (grpc_spans(settings, timeout)?, grpc_metrics(settings, timeout)?),
            #[cfg(not(feature = "otlp-grpc"))]
            OtlpProtocol::Grpc => {
                return Err(OtlpError::Unsupported(
                    "`protocol: grpc` needs Compact built with the cargo feature `otlp-grpc`: use `protocol: http` (collectors receive OTLP over HTTP on port 4318)".to_owned(),
                ))
            }
        };
        let resource = Resource::builder()
            .with_service_name(
                settings
                    .service_name
                    .clone()
                    .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned()),
            )
            .build();
        let failure = Failure::default();
        let tracer_provider = SdkTracerProvider::builder()
            .with_simple_exporter(Watched {
                inner: spans,
                failure: Arc::clone(&failure),
                runtime: span_runtime,
            })
            .with_resource(resource.clone())
            .build();
        let meter_provider = SdkMeterProvider::builder()
            .with_reader(
                PeriodicReader::builder(OnRuntime {
                    inner: metrics,
                    runtime: metric_runtime,
                })
                .build(),
            )
            .with_resource(resource)
            .build();
        let name = match &settings.endpoint {
            Some(url) => format!("otlp:{url}"),
            None => "otlp".to_owned(),
        };
        let mut exporter =
            OtlpExporter::with_providers(name, tracer_provider, Some(meter_provider));
        exporter.failure = failure;
        Ok(exporter)
    }

    /// An exporter over providers the host built (its own exporters, processors, resource). Span
    /// export failures are counted only when the provider's processor reports them on flush.
    pub fn with_providers(
        name: impl Into<String>,
        tracer_provider: SdkTracerProvider,
        meter_provider: Option<SdkMeterProvider>,
    ) -> OtlpExporter {
        let tracer = tracer_provider.tracer("compact");
        let stats = StatsSource::default();
        let instruments = meter_provider
            .as_ref()
            .map(|p| Instruments::new(&p.meter("compact"), &stats));
        OtlpExporter {
            name: name.into(),
            tracer,
            tracer_provider,
            meter_provider,
            instruments,
            stats,
            failure: Failure::default(),
            pending: Mutex::new(HashMap::new()),
        }
    }

    fn failed(&self, message: String) -> ExportError {
        ExportError::Rejected {
            exporter: self.name.clone(),
            message,
        }
    }

    /// Exports one call's events as a span; the span exporter's failure, if any, is returned.
    fn export_call(&self, session: &str, events: &[Value]) -> Result<(), ExportError> {
        let Some(first) = events.first() else {
            return Ok(());
        };
        if let Some(instruments) = &self.instruments {
            for event in events {
                instruments.record(event);
            }
        }
        let name_of = |e: &Value| {
            e.get("event")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let decision = events
            .iter()
            .find(|e| name_of(e) == "compact.trigger_decision");
        let span_name = match decision {
            Some(_) => "compact.preflight".to_owned(),
            None => name_of(first),
        };
        let mut attributes = vec![KeyValue::new("session_id", session.to_owned())];
        if let Some(decision) = decision {
            flatten("", decision, &mut attributes, &|k| {
                is_envelope(k) || k == "event"
            });
        }
        if let Some(compacted) = events.iter().find(|e| name_of(e) == "compact.compacted") {
            for key in ["tokens_before", "tokens_after", "strategy", "trigger"] {
                if let Some(v) = compacted.get(key).and_then(attribute) {
                    attributes.push(KeyValue::new(format!("compaction.{key}"), v));
                }
            }
            if let Some(c) = self::compacted(compacted) {
                attributes.push(KeyValue::new(
                    "compaction.tokens_saved",
                    i64::try_from(c.tokens_saved()).unwrap_or(i64::MAX),
                ));
            }
        }
        let at = |e: &Value| {
            UNIX_EPOCH + Duration::from_millis(e.get("ts_ms").and_then(Value::as_u64).unwrap_or(0))
        };
        let mut span = self
            .tracer
            .span_builder(span_name)
            .with_kind(SpanKind::Internal)
            .with_start_time(at(first))
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &Context::new());
        let mut end: SystemTime = at(first);
        for event in events {
            let mut attributes = Vec::new();
            flatten("", event, &mut attributes, &is_envelope);
            let ts = at(event);
            end = end.max(ts);
            span.add_event_with_timestamp(name_of(event), ts, attributes);
        }
        if let Some(failed) = events.iter().find(|e| name_of(e) == "compact.failed") {
            let why = failed
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("compaction failed");
            span.set_status(Status::error(why.to_owned()));
        }
        span.end_with_timestamp(end);
        drop(span);
        match self.failure.lock().map(|mut f| f.take()) {
            Ok(Some(message)) => Err(self.failed(message)),
            _ => Ok(()),
        }
    }
}

fn build_error(
    signal: &'static str,
) -> impl Fn(opentelemetry_otlp::ExporterBuildError) -> OtlpError {
    move |e| OtlpError::Build {
        signal,
        message: e.to_string(),
    }
}

/// `settings.endpoint` with `path` under it (OTLP/HTTP's per-signal URL).
fn http_url(settings: &OtlpSettings, path: &str) -> Option<String> {
    settings
        .endpoint
        .as_ref()
        .map(|base| format!("{}/{path}", base.trim_end_matches('/')))
}

fn headers(settings: &OtlpSettings) -> HashMap<String, String> {
    settings
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn http_spans(
    settings: &OtlpSettings,
    timeout: Duration,
    client: NetClient,
) -> Result<opentelemetry_otlp::SpanExporter, OtlpError> {
    let mut builder = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_timeout(timeout)
        .with_headers(headers(settings))
        .with_http_client(client);
    if let Some(url) = http_url(settings, "v1/traces") {
        builder = builder.with_endpoint(url);
    }
    builder.build().map_err(build_error("traces"))
}

fn http_metrics(
    settings: &OtlpSettings,
    timeout: Duration,
    client: NetClient,
) -> Result<opentelemetry_otlp::MetricExporter, OtlpError> {
    let mut builder = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_timeout(timeout)
        .with_headers(headers(settings))
        .with_http_client(client);
    if let Some(url) = http_url(settings, "v1/metrics") {
        builder = builder.with_endpoint(url);
    }
    builder.build().map_err(build_error("metrics"))
}

/// A current-thread Tokio runtime of one gRPC exporter, and the header map as gRPC metadata.
#[cfg(feature = "otlp-grpc")]
fn grpc_parts(
    settings: &OtlpSettings,
    signal: &'static str,
) -> Result<
    (
        Arc<tokio::runtime::Runtime>,
        opentelemetry_otlp::tonic_types::metadata::MetadataMap,
    ),
    OtlpError,
> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| OtlpError::Build {
            signal,
            message: format!("cannot start the gRPC exporter's runtime: {e}"),
        })?;
    let mut map = compact_net::http::HeaderMap::new();
    for (name, value) in &settings.headers {
        // The value is a secret: errors name the header only.
        let bad = || OtlpError::Build {
            signal,
            message: format!("header `{name}` is not valid gRPC metadata"),
        };
        let key = compact_net::http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
        let value = compact_net::http::HeaderValue::from_str(value).map_err(|_| bad())?;
        map.insert(key, value);
    }
    Ok((
        Arc::new(runtime),
        opentelemetry_otlp::tonic_types::metadata::MetadataMap::from_headers(map),
    ))
}

#[cfg(feature = "otlp-grpc")]
fn grpc_spans(
    settings: &OtlpSettings,
    timeout: Duration,
) -> Result<(opentelemetry_otlp::SpanExporter, Runtime), OtlpError> {
    use opentelemetry_otlp::WithTonicConfig as _;
    let (runtime, metadata) = grpc_parts(settings, "traces")?;
    // The channel is made inside the runtime it will run on.
    let _entered = runtime.enter();
    let mut builder = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_timeout(timeout)
        .with_metadata(metadata);
    if let Some(url) = &settings.endpoint {
        builder = builder.with_endpoint(url.clone());
    }
    let exporter = builder.build().map_err(build_error("traces"))?;
    drop(_entered);
    Ok((exporter, Some(runtime)))
}

#[cfg(feature = "otlp-grpc")]
fn grpc_metrics(
    settings: &OtlpSettings,
    timeout: Duration,
) -> Result<(opentelemetry_otlp::MetricExporter, Runtime), OtlpError> {
    use opentelemetry_otlp::WithTonicConfig as _;
    let (runtime, metadata) = grpc_parts(settings, "metrics")?;
    let _entered = runtime.enter();
    let mut builder = opentelemetry_otlp::MetricExporter::builder()
        .with_tonic()
        .with_timeout(timeout)
        .with_metadata(metadata);
    if let Some(url) = &settings.endpoint {
        builder = builder.with_endpoint(url.clone());
    }
    let exporter = builder.build().map_err(build_error("metrics"))?;
    drop(_entered);
    Ok((exporter, Some(runtime)))
}

/// Keys of the exported envelope that a span event does not repeat as attributes (its time is the
/// event's timestamp).
fn is_envelope(key: &str) -> bool {
    matches!(key, "ts" | "ts_ms")
}

/// `value`'s fields as attributes named `prefix.key`; objects are flattened, `skip` keys left out.
fn flatten(prefix: &str, value: &Value, out: &mut Vec<KeyValue>, skip: &dyn Fn(&str) -> bool) {
    let Some(obj) = value.as_object() else { return };
    for (k, v) in obj {
        if prefix.is_empty() && skip(k) {
            continue;
        }
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::Object(_) => flatten(&key, v, out, &|_| false),
            other => {
                if let Some(a) = attribute(other) {
                    out.push(KeyValue::new(key, a));
                }
            }
        }
    }
}

/// A JSON value as an attribute value (`None` for null; mixed arrays and objects as JSON text).
fn attribute(value: &Value) -> Option<OtelValue> {
    Some(match value {
        Value::Null => return None,
        Value::Bool(b) => OtelValue::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => OtelValue::I64(i),
            None => OtelValue::F64(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => OtelValue::String(s.clone().into()),
        Value::Array(items) => {
            if items.iter().all(Value::is_string) {
                OtelValue::Array(Array::String(
                    items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|s| StringValue::from(s.to_owned()))
                        .collect(),
                ))
            } else if items.iter().all(Value::is_i64) {
                OtelValue::Array(Array::I64(items.iter().filter_map(Value::as_i64).collect()))
            } else if items.iter().all(Value::is_boolean) {
                OtelValue::Array(Array::Bool(
                    items.iter().filter_map(Value::as_bool).collect(),
                ))
            } else {
                OtelValue::String(value.to_string().into())
            }
        }
        Value::Object(_) => OtelValue::String(value.to_string().into()),
    })
}

impl Exporter for OtlpExporter {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn export(&self, event: &Value) -> Result<(), ExportError> {
        let session = event
            .get("session_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let mut pending = self
            .pending
            .lock()
            .map_err(|_| self.failed("the pending events' lock is poisoned".to_owned()))?;
        pending.entry(session).or_default().push(event.clone());
        Ok(())
    }

    fn end_call(&self, session: &str) -> Result<(), ExportError> {
        let events = match self.pending.lock() {
            Ok(mut pending) => pending.remove(session).unwrap_or_default(),
            Err(_) => return Err(self.failed("the pending events' lock is poisoned".to_owned())),
        };
        self.export_call(session, &events)
    }

    fn flush(&self) -> Result<(), ExportError> {
        let open: Vec<(String, Vec<Value>)> = match self.pending.lock() {
            Ok(mut pending) => pending.drain().collect(),
            Err(_) => Vec::new(),
        };
        let mut result = Ok(());
        for (session, events) in open {
            if let Err(e) = self.export_call(&session, &events) {
                result = Err(e);
            }
        }
        if let Err(e) = self.tracer_provider.force_flush() {
            result = Err(self.failed(format!("traces: {e}")));
        }
        if let Some(meter_provider) = &self.meter_provider {
            if let Err(e) = meter_provider.force_flush() {
                result = Err(self.failed(format!("metrics: {e}")));
            }
        }
        result
    }

    fn attach(&self, stats: Arc<dyn Fn() -> ExportStats + Send + Sync>) {
        let _ = self.stats.set(stats);
    }
}

impl Drop for OtlpExporter {
    fn drop(&mut self) {
        // Spans are exported as they end; the meter provider sends its last counts.
        let _ = self.tracer_provider.shutdown();
        if let Some(meter_provider) = &self.meter_provider {
            let _ = meter_provider.shutdown();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_become_typed_flattened_attributes() {
        let mut out = Vec::new();
        flatten(
            "",
            &json!({"ts": "x", "ts_ms": 1, "t_est": 112_345, "ratio": 1.5, "manual": false,
                    "policy": {"trigger_pct": 0.85, "buffer": 1500}, "tiers": ["a", "b"],
                    "mixed": [1, "a"], "none": null}),
            &mut out,
            &is_envelope,
        );
        let get = |k: &str| {
            out.iter()
                .find(|kv| kv.key.as_str() == k)
                .map(|kv| kv.value.clone())
        };
        assert_eq!(get("ts"), None);
        assert_eq!(get("none"), None);
        assert_eq!(get("t_est"), Some(OtelValue::I64(112_345)));
        assert_eq!(get("ratio"), Some(OtelValue::F64(1.5)));
        assert_eq!(get("manual"), Some(OtelValue::Bool(false)));
        assert_eq!(get("policy.trigger_pct"), Some(OtelValue::F64(0.85)));
        assert_eq!(get("policy.buffer"), Some(OtelValue::I64(1500)));
        assert_eq!(
            get("tiers"),
            Some(OtelValue::Array(Array::String(vec![
                "a".into(),
                "b".into()
            ])))
        );
        assert_eq!(get("mixed"), Some(OtelValue::String("[1,\"a\"]".into())));
    }

    #[cfg(not(feature = "otlp-grpc"))]
    #[test]
    fn grpc_without_the_feature_is_refused_naming_it() {
        let settings = OtlpSettings {
            protocol: OtlpProtocol::Grpc,
            ..OtlpSettings::default()
        };
        let err = OtlpExporter::open(&settings).err().map(|e| e.to_string());
        assert!(
            err.as_deref().is_some_and(|e| e.contains("otlp-grpc")),
            "{err:?}"
        );
    }
}
