"""Concurrent requests against the proxy (bench/shed.sh): every connection is opened first, then
the requests are written all at once, or `--rate` per second (one asyncio thread, HTTP/1.1 by
hand), the simulator holding each admitted one for `--delay-ms`. Prints one JSON line: the counts, the latency percentiles of the 503s and of the
admitted requests (from the request's write to its whole reply), and whether every 503 arrived
before the first admitted reply."""

import argparse
import asyncio
import json
import time


async def one(port: int, i: int, delay_ms: int, go: asyncio.Event, at: float = 0.0):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = json.dumps(
        {
            "model": "sim-model",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": f"Hold on, request {i}."}],
        }
    ).encode()
    head = (
        "POST /v1/messages HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/json\r\n"
        f"x-compact-session: burst-{i}\r\nx-sim-fault: slow;ms={delay_ms}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    await go.wait()
    if at:
        await asyncio.sleep(max(0.0, at - time.perf_counter()))
    sent = time.perf_counter()
    writer.write(head + body)
    await writer.drain()
    status_line = await reader.readline()
    headers = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    reply = await reader.readexactly(int(headers.get("content-length", "0")))
    done = time.perf_counter()
    writer.close()
    status = int(status_line.split()[1])
    # A shed request that waited its queue timeout, or one shed at once (queue full).
    waited = b"no request slot freed" in reply
    return status, headers.get("retry-after"), (done - sent) * 1000.0, done, waited


def pct(values, q):
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(q * len(values)))], 1)


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("--requests", type=int, default=200)
    p.add_argument("--delay-ms", type=int, default=2000)
    p.add_argument("--rate", type=float, default=0.0, help="requests per second (0: all at once)")
    p.add_argument("--label", default="")
    a = p.parse_args()
    # One request first, so that the proxy and the simulator have loaded their tokenizers (a
    # proxy that has been serving), then the burst.
    warm = asyncio.Event()
    warm.set()
    await one(a.port, -1, 0, warm)
    go = asyncio.Event()
    start = time.perf_counter() + 0.5 + a.requests / 2000  # every connection open by then
    tasks = [
        asyncio.create_task(
            one(a.port, i, a.delay_ms, go, start + i / a.rate if a.rate else 0.0)
        )
        for i in range(a.requests)
    ]
    await asyncio.sleep(max(0.0, start - time.perf_counter()))
    go.set()
    results = await asyncio.gather(*tasks)
    shed = [r for r in results if r[0] == 503]
    full = [r[2] for r in shed if not r[4]]
    timed_out = [r[2] for r in shed if r[4]]
    ok = [r for r in results if r[0] == 200]
    print(
        json.dumps(
            {
                "label": a.label,
                "requests": a.requests,
                "upstream_delay_ms": a.delay_ms,
                "rate": a.rate or "burst",
                "ok": len(ok),
                "shed": len(shed),
                "other": len(results) - len(ok) - len(shed),
                "retry_after": sorted({r[1] for r in shed}),
                "shed_queue_full": len(full),
                "queue_full_ms_p50": pct(full, 0.5),
                "queue_full_ms_p99": pct(full, 0.99),
                "queue_full_ms_max": pct(full, 1.0),
                "shed_queue_timeout": len(timed_out),
                "queue_timeout_ms_p50": pct(timed_out, 0.5),
                "queue_timeout_ms_max": pct(timed_out, 1.0),
                "ok_ms_p50": pct([r[2] for r in ok], 0.5),
                "ok_ms_p99": pct([r[2] for r in ok], 0.99),
                "ok_ms_max": pct([r[2] for r in ok], 1.0),
                "every_503_before_the_first_200": bool(shed)
                and bool(ok)
                and max(r[3] for r in shed) < min(r[3] for r in ok),
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
