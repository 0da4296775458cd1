"""The Python consumer's throughput: sends N messages to a new queue, consumes them with a
Consumer of C no-op handlers and prints messages/s (receive, handler and batched ack).

    python3 bench_consume.py [-n 10000] [-c 32]

Against $QUEUES_URL/$QUEUES_TOKEN when set; otherwise it starts a `queues serve` as the
tests do (built from the repository, or $QUEUES_BIN)."""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from queues import Client, Consumer  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=10_000, help="messages")
    ap.add_argument("-c", type=int, default=32, help="concurrent handlers")
    ap.add_argument("-size", type=int, default=64, help="body bytes")
    args = ap.parse_args()
    if os.environ.get("QUEUES_URL") and os.environ.get("QUEUES_TOKEN"):
        c = Client.from_env()
    else:
        from tests import server
        c = server.get().client()
    name = "pybench-" + secrets.token_hex(4)
    c.create_queue(name)
    body = "x" * args.size
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: c.send_batch(name, [body] * 10).raise_for_failed(), range(args.n // 10)))
    total = c.get_queue(name).counts.visible
    handled = 0
    lock, done = threading.Lock(), threading.Event()

    def handler(m) -> None:
        nonlocal handled
        with lock:
            handled += 1
            if handled == total:
                done.set()

    consumer = Consumer(c, name, handler, concurrency=args.c)
    t0 = time.monotonic()
    t = threading.Thread(target=consumer.run)
    t.start()
    done.wait()
    consumer.stop.set()
    t.join()
    el = time.monotonic() - t0
    left = c.get_queue(name).counts
    c.delete_queue(name)
    print(f"python consumer, {args.c} no-op handlers: {total / el:.0f} messages/s ({total} messages in {el:.2f} s;"
          f" left visible {left.visible}, in flight {left.in_flight})")


if __name__ == "__main__":
    main()
