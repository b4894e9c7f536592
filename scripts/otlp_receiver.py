#!/usr/bin/env python3
"""A small OTLP receiver for the tests, over HTTP and (with --grpc-port) gRPC: decodes every
request with the official `opentelemetry-proto` classes and appends it to a file as one JSON line.

    otlp_receiver.py --out requests.jsonl [--port 0] [--port-file FILE] [--grpc-port PORT]

Listens on 127.0.0.1 only. Accepts POST /v1/traces, /v1/metrics and /v1/logs in protobuf
(`application/x-protobuf`) or JSON (`application/json`), gzip-encoded or not, answers as a collector
does (200 with an empty Export*ServiceResponse in the request's encoding) and writes

    {"signal": "traces", "content_type": ..., "headers": {...}, "request": {...}}

where `request` is the decoded Export*ServiceRequest in protobuf's JSON mapping with the proto field
names (`resource_spans`, `scope_spans`, `time_unix_nano`, `int_value` as a string, ...). A body that
does not decode is answered 400 and recorded with `"error"`. Over gRPC (grpcio, the official
services of `opentelemetry-proto`) the same line is written with `"transport": "grpc"` and the call's
metadata as `headers`; HTTP lines have `"transport": "http"`. Used because no packaged OpenTelemetry
Collector with a file exporter installs from Debian, PyPI or npm (see docs/design/testing.md).
"""

import argparse
import gzip
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

SIGNALS = {
    "/v1/traces": (
        "traces",
        trace_service_pb2.ExportTraceServiceRequest,
        trace_service_pb2.ExportTraceServiceResponse,
    ),
    "/v1/metrics": (
        "metrics",
        metrics_service_pb2.ExportMetricsServiceRequest,
        metrics_service_pb2.ExportMetricsServiceResponse,
    ),
    "/v1/logs": (
        "logs",
        logs_service_pb2.ExportLogsServiceRequest,
        logs_service_pb2.ExportLogsServiceResponse,
    ),
}


def make_handler(out, lock):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet: the file is the record
            pass

        def record(self, entry):
            with lock:
                out.write(json.dumps(entry, sort_keys=True) + "\n")
                out.flush()

        def answer(self, status, body, content_type):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            path = self.path.split("?", 1)[0]
            content_type = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip()
            headers = {k.lower(): v for k, v in self.headers.items()}
            if path not in SIGNALS:
                self.record({"path": path, "error": "unknown path", "headers": headers})
                self.answer(404, b"unknown path", "text/plain")
                return
            signal, request_type, response_type = SIGNALS[path]
            try:
                if (self.headers.get("Content-Encoding") or "").lower() == "gzip":
                    body = gzip.decompress(body)
                if content_type == "application/json":
                    request = json_format.Parse(body.decode("utf-8"), request_type())
                else:
                    request = request_type.FromString(body)
            except Exception as e:  # a malformed body is what the test must see
                self.record({"signal": signal, "error": repr(e), "headers": headers})
                self.answer(400, repr(e).encode(), "text/plain")
                return
            self.record(
                {
                    "signal": signal,
                    "transport": "http",
                    "content_type": content_type,
                    "headers": headers,
                    "request": json_format.MessageToDict(
                        request, preserving_proto_field_name=True
                    ),
                }
            )
            if content_type == "application/json":
                self.answer(200, json_format.MessageToJson(response_type()).encode(), content_type)
            else:
                self.answer(200, response_type().SerializeToString(), "application/x-protobuf")

    return Handler


def serve_grpc(port, record):
    """Starts the OTLP gRPC services on 127.0.0.1:port; returns the server."""
    from concurrent import futures

    import grpc
    from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    def export(signal, response_type):
        def handler(self, request, context):
            record(
                {
                    "signal": signal,
                    "transport": "grpc",
                    "headers": {k: v for k, v in context.invocation_metadata()},
                    "request": json_format.MessageToDict(
                        request, preserving_proto_field_name=True
                    ),
                }
            )
            return response_type()

        return handler

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    for signal, module, base, response_type in [
        ("traces", trace_service_pb2_grpc, "TraceService", trace_service_pb2.ExportTraceServiceResponse),
        ("metrics", metrics_service_pb2_grpc, "MetricsService", metrics_service_pb2.ExportMetricsServiceResponse),
        ("logs", logs_service_pb2_grpc, "LogsService", logs_service_pb2.ExportLogsServiceResponse),
    ]:
        servicer = type(base, (getattr(module, base + "Servicer"),), {"Export": export(signal, response_type)})
        getattr(module, "add_" + base + "Servicer_to_server")(servicer(), server)
    if server.add_insecure_port(f"127.0.0.1:{port}") == 0:
        raise SystemExit(f"cannot listen on 127.0.0.1:{port} (gRPC)")
    server.start()
    return server


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="JSON lines file the requests are appended to")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free one)")
    parser.add_argument("--port-file", help="file the chosen port is written to once listening")
    parser.add_argument("--grpc-port", type=int, help="also receive OTLP over gRPC on this port")
    args = parser.parse_args()
    out = open(args.out, "a", encoding="utf-8")
    lock = threading.Lock()
    if args.grpc_port is not None:

        def record(entry):
            with lock:
                out.write(json.dumps(entry, sort_keys=True) + "\n")
                out.flush()

        grpc_server = serve_grpc(args.grpc_port, record)  # noqa: F841 (kept alive)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(out, lock))
    server.daemon_threads = True
    port = server.server_address[1]
    if args.port_file:
        with open(args.port_file + ".tmp", "w", encoding="utf-8") as f:
            f.write(f"{port}\n")
        os.replace(args.port_file + ".tmp", args.port_file)
    print(f"otlp receiver on 127.0.0.1:{port}, writing {args.out}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
