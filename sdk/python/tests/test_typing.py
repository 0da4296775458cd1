"""What a type checker sees of the installed package's annotations (py.typed): the async
client's calls carry Client's signatures and answers. Runs mypy when this machine has it
(Debian's python3-mypy); skipped otherwise."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SDK = Path(__file__).resolve().parents[1]

APP = '''
from queues import AsyncClient, NotFoundError, Queue

async def main() -> None:
    async with AsyncClient("http://127.0.0.1:8080", "t") as c:
        q: Queue = await c.create_queue("orders", visibility_timeout_seconds=30)
        m = await c.send(q.name, "hello", delay_seconds=1)
        reveal_type(m)
        async for x in c.all_queues(prefix="o"):
            reveal_type(x)
        await c.send(q.name, 42)
        try:
            await c.get_queue("nope")
        except NotFoundError as e:
            reveal_type(e.retry_after)
'''


def mypy() -> str | None:
    for py in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(py) and subprocess.run([py, "-c", "import mypy"], capture_output=True).returncode == 0:
            return py
    return None


class TypingTest(unittest.TestCase):
    def test_async_client_is_typed(self) -> None:
        py = mypy()
        if py is None:
            self.skipTest("no mypy (apt-get install python3-mypy)")
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "app.py").write_text(APP)
            r = subprocess.run([py, "-m", "mypy", "--no-error-summary", "--cache-dir", os.path.join(tmp, "cache"),
                                "app.py"], cwd=tmp, env={**os.environ, "MYPYPATH": str(SDK)},
                               capture_output=True, text=True)
        app = [line for line in r.stdout.splitlines() if line.startswith("app.py:")]
        self.assertEqual(app, [
            'app.py:8: note: Revealed type is "queues.models.SentMessage"',
            'app.py:10: note: Revealed type is "queues.models.Queue"',
            'app.py:11: error: Argument 2 to "send" of "AsyncCalls" has incompatible type "int"; expected "str"  [arg-type]',
            'app.py:15: note: Revealed type is "Union[builtins.float, None]"',
        ], r.stdout + r.stderr)

    def test_package_checks_clean(self) -> None:
        py = mypy()
        if py is None:
            self.skipTest("no mypy (apt-get install python3-mypy)")
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run([py, "-m", "mypy", "--cache-dir", os.path.join(tmp, "cache"), "queues"], cwd=SDK,
                               capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
