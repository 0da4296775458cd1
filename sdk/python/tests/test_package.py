"""The package as a user installs it: a wheel built offline (``python3 -m build --wheel
--no-isolation``, Debian's python3-build), installed into a fresh virtual environment and
imported from a directory with no checkout on the path."""

from __future__ import annotations

import email.parser
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile
from pathlib import Path

SDK = Path(__file__).resolve().parents[1]


def builder() -> str | None:
    """A Python that has the ``build`` frontend and setuptools: this one, else Debian's."""
    for py in (sys.executable, "/usr/bin/python3"):
        if not os.path.exists(py):
            continue
        r = subprocess.run([py, "-c", "import build, setuptools"], capture_output=True)
        if r.returncode == 0:
            return py
    return None


class TestPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        py = builder()
        if py is None:
            if os.environ.get("QUEUES_REQUIRE_WHEEL"):
                raise RuntimeError("no Python with the build frontend (apt-get install python3-build)")
            raise unittest.SkipTest("no Python with the build frontend (apt-get install python3-build)")
        cls.tmp = tempfile.mkdtemp(prefix="queues-wheel-")
        # Built from a copy, so the checkout gets no build/ or egg-info.
        src = os.path.join(cls.tmp, "src")
        shutil.copytree(SDK, src, ignore=shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info", "dist"))
        out = os.path.join(cls.tmp, "dist")
        r = subprocess.run([py, "-m", "build", "--wheel", "--no-isolation", "--outdir", out, src],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError(f"the wheel did not build:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        wheels = [f for f in os.listdir(out) if f.endswith(".whl")]
        assert len(wheels) == 1, wheels
        cls.wheel = os.path.join(out, wheels[0])

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_wheel_contents_and_metadata(self) -> None:
        with zipfile.ZipFile(self.wheel) as z:
            names = z.namelist()
            meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
            meta = email.parser.Parser().parsestr(z.read(meta_name).decode())
        self.assertIn("queues/py.typed", names)
        self.assertIn("queues/aio.py", names)
        self.assertFalse([n for n in names if n.startswith("tests/")], "the tests are not part of the wheel")
        self.assertTrue([n for n in names if n.endswith(".dist-info/LICENSE")], names)
        from queues import __version__
        self.assertEqual(meta["Name"], "queueshq-queues")
        self.assertEqual(meta["Version"], __version__)
        self.assertEqual(meta["Requires-Python"], ">=3.11")
        self.assertTrue(meta["Summary"])
        self.assertIn("Typing :: Typed", meta.get_all("Classifier"))
        self.assertIn("License :: OSI Approved :: Apache Software License", meta.get_all("Classifier"))
        self.assertIn("otel", meta.get_all("Provides-Extra"))
        self.assertTrue(any(r.startswith("opentelemetry-api") and "extra ==" in r and "otel" in r
                            for r in meta.get_all("Requires-Dist")), meta.get_all("Requires-Dist"))
        self.assertIn("text/markdown", meta["Description-Content-Type"])

    def test_installs_and_imports_from_a_clean_dir(self) -> None:
        venv = os.path.join(self.tmp, "venv")
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], check=True)
        vpy = os.path.join(venv, "bin", "python")
        r = subprocess.run([vpy, "-m", "pip", "install", "--no-index", "--no-deps", "--quiet", self.wheel],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        clean = os.path.join(self.tmp, "app")
        os.mkdir(clean)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        code = ("import queues, queues.aio, os; "
                "print(queues.__version__, queues.USER_AGENT, "
                "os.path.exists(os.path.join(os.path.dirname(queues.__file__), 'py.typed')), queues.__file__)")
        r = subprocess.run([vpy, "-c", code], cwd=clean, env=env, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        version, ua, typed, where = r.stdout.split()
        from queues import __version__
        self.assertEqual((version, ua, typed), (__version__, "queues-python/" + __version__, "True"))
        self.assertTrue(where.startswith(venv), f"imported {where}, not the installed wheel")


if __name__ == "__main__":
    unittest.main()
