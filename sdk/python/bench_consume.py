"""The Python consumers' throughput: sends N messages to a new queue, consumes them with a
Consumer of C no-op handlers (threads) and with an AsyncConsumer of C no-op coroutines, and
prints messages/s for each (receive, handler and batched ack) beside `queues bench`'s consume
phase (Go, receive + ack requests) of the same run, against the same server.

    python3 bench_consume.py [-n 20000] [-c 32] [-size 64]

Against $QUEUES_URL/$QUEUES_TOKEN when set (`queues bench` from $QUEUES_BIN, else `queues` on
the PATH); otherwise it starts a `queues serve` as the tests do (built from the repository,
or $QUEUES_BIN)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from queues import AsyncClient, Client, Consumer  # noqa: E402


def fill(c: Client, n: int, size: int) -> str:
    name = "pybench-" + secrets.token_hex(4)
    c.create_queue(name)
    body = "x" * size
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: c.send_batch(name, [body] * 10).raise_for_failed(), range(n // 10)))
    return name


def threaded(c: Client, name: str, total: int, concurrency: int) -> float:
    handled = 0
    lock, done = threading.Lock(), threading.Event()

    def handler(m) -> None:
        nonlocal handled
        with lock:
            handled += 1
            if handled == total:
                done.set()

    consumer = Consumer(c, name, handler, concurrency=concurrency)
    t0 = time.monotonic()
    t = threading.Thread(target=consumer.run)
    t.start()
    done.wait()
    el = time.monotonic() - t0
    consumer.stop.set()
    t.join()
    return el


def asynchronous(url: str, token: str, name: str, total: int, concurrency: int) -> float:
    async def run() -> float:
        handled = 0
        done = asyncio.Event()

        async def handler(m) -> None:
            nonlocal handled
            handled += 1
            if handled == total:
                done.set()

        async with AsyncClient(url, token) as c:
            t0 = time.monotonic()
            async with c.consumer(name, handler, concurrency=concurrency):
                await done.wait()
                el = time.monotonic() - t0
        return el

    return asyncio.run(run())


def go_bench(binary: str | None, env: dict[str, str], n: int, size: int) -> str:
    if not binary:
        return "queues bench: no binary (set QUEUES_BIN)"
    r = subprocess.run([binary, "bench", "-phases", "consume", "-count", str(n), "-size", str(size), "-batch", "10",
                        "-inflight", "16", "-quiet", "-json"], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        return f"queues bench failed: {r.stderr.strip()[-300:]}"
    p = json.loads(r.stdout)["phases"][0]
    return (f"queues bench consume (Go, 16 consumers, receive + ack): {p['msgsPerSec']:.0f} messages/s"
            f" ({p['messages']} messages in {p['seconds']:.2f} s)")


def report(label: str, c: Client, name: str, total: int, el: float) -> None:
    left = c.get_queue(name).counts
    c.delete_queue(name)
    print(f"{label}: {total / el:.0f} messages/s ({total} messages in {el:.2f} s;"
          f" left visible {left.visible}, in flight {left.in_flight})", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=20_000, help="messages")
    ap.add_argument("-c", type=int, default=32, help="concurrent handlers")
    ap.add_argument("-size", type=int, default=64, help="body bytes")
    args = ap.parse_args()
    if os.environ.get("QUEUES_URL") and os.environ.get("QUEUES_TOKEN"):
        c = Client.from_env()
        binary = os.environ.get("QUEUES_BIN") or shutil.which("queues")
        env = dict(os.environ)
    else:
        from tests import server
        s = server.get()
        c, binary, env = s.client(), s.binary, s.env()
    url, token = c.base_url, c._t.token or ""

    name = fill(c, args.n, args.size)
    total = c.get_queue(name).counts.visible
    report(f"python Consumer, {args.c} no-op handlers (threads)", c, name, total,
           threaded(c, name, total, args.c))
    name = fill(c, args.n, args.size)
    total = c.get_queue(name).counts.visible
    report(f"python AsyncConsumer, {args.c} no-op coroutines", c, name, total,
           asynchronous(url, token, name, total, args.c))
    print(go_bench(binary, env, args.n, args.size), flush=True)


if __name__ == "__main__":
    main()
