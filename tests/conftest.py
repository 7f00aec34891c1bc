import gc
import gzip
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from gradlab.cli.main import cli
from gradlab.kit import data as datasets
from gradlab.kit import heap

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 (make test-py310): tomli, as gradlab reads TOML there
    import tomli as tomllib  # noqa: F401 (the tests import it from here)

REPO = Path(__file__).resolve().parent.parent

# The suite runs as on a machine without a GPU, whatever this one has, in this process and in every process it starts:
# CUDA hidden (torch reads CUDA_VISIBLE_DEVICES when it first uses CUDA, not at import) and --device auto resolved to
# the CPU (GRADLAB_DEVICE, which covers Apple's MPS too). A test that needs the GPU is marked `gpu` and runs its
# commands with gpu_env(): skipped where there is none.
GPU_ENV = {**os.environ}
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ["GRADLAB_DEVICE"] = "cpu"

# One torch thread in every test process, as gradlab computes (gradlab.kit.threads): a test that calls a lesson's run()
# itself bypasses the runner that sets it, and torch's default, a thread per core, in each of pytest-xdist's processes
# (one per core) stalls every operation at its barriers (measured: test_clip_lesson.py 57 CPU-s with two threads on
# a busy 2-core machine, 24 with one; a ddp run in this process 22 s against 2).
torch.set_num_threads(1)

# Python's collector as gradlab sets it in its own processes (gradlab/kit/heap.py): generation 0 every heap.GEN0 new
# containers, and, once the tests are collected, everything alive frozen (torch, gradlab, every test module and item):
# the many lessons a worker runs in its own process would otherwise walk all of it at each full collection.
gc.set_threshold(heap.GEN0, *gc.get_threshold()[1:])


def once(tmp_path_factory, name: str, make: Callable[[Path], None]) -> Path:
    """A folder MAKE(folder) fills once for the whole test session, however many processes pytest-xdist runs: the
    first test to ask makes it while holding a lock, the others wait for it and reuse it. Use it for a costly
    fixture that several tests share (a test that changes the folder must copy it first)."""
    import fcntl

    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the workers' basetemps share a parent
    folder = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (root / f"{name}.done").exists():
            shutil.rmtree(folder, ignore_errors=True)  # what a failed attempt left
            folder.mkdir()
            make(folder)
            (root / f"{name}.done").touch()
    return folder


# headless Chromium as this machine's closed network needs it (no background fetches, no QUIC, a fresh profile each)
HEADLESS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def headless_browser(what: str) -> str:
    """The Chromium to open WHAT in: the test is skipped without one, and fails instead under .ci/run, which sets
    GRADLAB_REQUIRE_BROWSER (a page we ship is always opened there)."""
    browser = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
    if browser is None:
        if os.environ.get("GRADLAB_REQUIRE_BROWSER"):
            pytest.fail("GRADLAB_REQUIRE_BROWSER is set but no chromium is installed")
        pytest.skip(f"no headless browser (apt-get install chromium) to open {what} in")
    return browser


class DevTools:
    """A headless Chromium driven through its DevTools protocol (websocket-client): pages opened in turn, real mouse
    and key events, screenshots. One per test module and worker (the chromium fixture): starting Chromium is most of
    what opening a page costs (measured: test_graph.py's twelve browser tests, one Chromium each or two, 22 CPU-s;
    one for all, 5), and an idle one still takes about 1 % of a CPU, so none outlives its module. Every network name
    is unresolvable in it: a page we ship fetches nothing."""

    def __init__(self, browser: str, profile: Path) -> None:
        import json
        import urllib.request

        websocket = pytest.importorskip("websocket", reason="websocket-client drives the browser")
        self.proc = subprocess.Popen([browser, *HEADLESS, "--host-resolver-rules=MAP * ~NOTFOUND",
                                      f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank"],
                                     stderr=subprocess.PIPE, text=True)
        for line in self.proc.stderr:
            if m := re.search(r"DevTools listening on ws://([\d.:]+)/", line):
                break
        targets = json.loads(urllib.request.urlopen(f"http://{m.group(1)}/json/list", timeout=30).read())
        page = next(t for t in targets if t["type"] == "page")
        self.ws, self.json, self.id = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30), json, 0
        self.window(1200, 900)

    def call(self, method: str, **params):
        self.id += 1
        self.ws.send(self.json.dumps({"id": self.id, "method": method, "params": params}))
        while True:
            reply = self.json.loads(self.ws.recv())
            if reply.get("id") == self.id:
                assert "error" not in reply, reply
                return reply.get("result", {})

    def js(self, expression: str):
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def window(self, width: int, height: int) -> None:
        """The page's viewport: what a window of WIDTH × HEIGHT shows, and what screenshot() captures."""
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    def open(self, url: str, ready: str = "document.body.hasAttribute('data-drawn')") -> None:
        """Load URL as a fresh page and wait until it has loaded and READY (a JavaScript expression) holds: by
        default, until gradlab's graph script has drawn."""
        self.call("Page.navigate", url="about:blank")  # a new document even where URL differs only by its #fragment
        self.call("Page.navigate", url=url)
        for _ in range(300):
            if self.js(f"location.href === {self.json.dumps(url)} && document.readyState === 'complete' && "
                       f"!!document.body && !!({ready})"):
                return
            time.sleep(0.1)
        raise AssertionError(f"{url}: not ready ({ready}) after 30 s")

    def dom(self) -> str:
        return self.js("document.documentElement.outerHTML")

    def screenshot(self) -> bytes:
        import base64

        return base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])

    def click(self, selector: str) -> None:
        r = self.json.loads(self.js(f"JSON.stringify(document.querySelector('{selector}').getBoundingClientRect())"))
        x, y = r["x"] + r["width"] / 2, r["y"] + r["height"] / 2
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def key(self, name: str, code: int) -> None:
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", type=kind, key=name, code=name, windowsVirtualKeyCode=code)

    def close(self) -> None:
        self.ws.close()
        self.proc.kill()
        self.proc.wait()


@pytest.fixture(scope="module")
def chromium(tmp_path_factory):
    """The module's headless Chromium in this test worker (skipped without one, failed under .ci/run), each test
    opening its pages."""
    tools = DevTools(headless_browser("the page"), tmp_path_factory.mktemp("chromium-profile"))
    yield tools
    tools.close()


@pytest.fixture
def browser(chromium):
    """The module's Chromium, its viewport 1200 × 900 as the test starts; left on a blank page after it (a page's
    script stops)."""
    chromium.window(1200, 900)
    yield chromium
    chromium.call("Page.navigate", url="about:blank")


@cache
def cuda_devices() -> int:
    """How many CUDA GPUs this machine has, asked in a process of its own (this one has them hidden)."""
    env = {k: v for k, v in GPU_ENV.items() if k not in ("CUDA_VISIBLE_DEVICES", "GRADLAB_DEVICE")}
    proc = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.device_count())"], env=env,
                          capture_output=True, text=True, timeout=120)
    return int(proc.stdout.strip() or 0) if proc.returncode == 0 else 0


def gpu_env() -> dict[str, str]:
    """The environment gradlab was started in, GPUs visible: for the commands of a test marked `gpu`."""
    return {k: v for k, v in GPU_ENV.items() if k not in ("CUDA_VISIBLE_DEVICES", "GRADLAB_DEVICE")}


# The longest tests, longest first (the notebooks run end to end, tests/test_notebooks.py: on 2026-11-28, one worker
# each, at load average 15–25: ddp 182 s, actor-critic 177, dqn 141, clip 72, jacobian 65, gaussian-policy 56,
# log1pexp 54, mnist 40; quiet, about a fifth of that). They start the suite: pytest-xdist hands out the first quarter
# of the tests in turn before it deals the rest to whichever worker is free, so a long test met late can leave one
# worker running it alone while the other has finished.
LONGEST_FIRST = tuple(f"tests/test_notebooks.py::test_every_notebook_runs_end_to_end_on_a_jupyter_kernel[{n}]" for n in
                      ("08-ddp", "07-actor-critic", "06-dqn", "02-clip", "03-jacobian", "05-gaussian-policy",
                       "04-log1pexp", "01-mnist"))


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pyproject.toml): one worker per CPU, and one more. Measured on 2 CPUs with nothing else running,
    2026-11-28, `vmstat` through the whole run: with 2 workers the CPUs were idle 5.6 % of the time (tests waiting on
    subprocesses' time limits, sleeps, a kernel's start, a fixture another worker is making; 294.7 s), with 3 workers
    1.3 % (287.8 s, 283.8 s, 288.7 s): the suite is as long as its CPU work, and a third worker takes up what idle
    time there was. (Earlier, one run each: 2 workers 305 s, 3 workers 279 s, 4 workers 300 s.)"""
    return (os.cpu_count() or 1) + 1


def pytest_collection_finish(session):
    gc.freeze()  # see gc.set_threshold above


def pytest_collection_modifyitems(config, items):
    """The longest tests first (LONGEST_FIRST; the others keep their order). Tests marked `gpu` are skipped on a
    machine without a CUDA GPU (only then is the GPU asked about)."""
    rank = {nodeid: i for i, nodeid in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid, len(rank)))  # stable: the rest as collected
    marked = [item for item in items if item.get_closest_marker("gpu")]
    if marked and not cuda_devices():
        skip = pytest.mark.skip(reason="needs a CUDA GPU (marked gpu)")
        for item in marked:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _signals_as_a_fresh_python_has_them():
    """Each test starts with Ctrl-C raising KeyboardInterrupt and SIGQUIT, SIGTERM, SIGHUP and SIGSYS at their
    defaults. An earlier test's in-process code may leave one ignored, and every program a later test starts inherits
    the ignore (a Python that starts with SIGINT ignored keeps it so): a Ctrl-C sent to it would then do nothing."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for s in (signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP, signal.SIGSYS):
            signal.signal(s, signal.SIG_DFL)
    yield


@pytest.fixture(autouse=True)
def _the_library_as_torch_made_it():
    """A test that judged a submission in its own process (tests/inprocess.py) wrapped the functions its exercise
    forbids, torch.ops.aten's among them: put them back after it, so a later test in this worker calls torch's own."""
    yield
    if "inprocess" in sys.modules:
        sys.modules["inprocess"].restore_library()


@pytest.fixture(autouse=True)
def _gradlabs_exercises_only():
    """Each test starts with gradlab's own exercises alone in the registry: a course's own exercises, read by an
    earlier test of this worker (course.read adds them to all_exercises()), are taken out after it. Without this, a
    test that lists or runs every exercise passed or failed by which tests the worker ran before it."""
    from gradlab.practice import all_exercises

    before = dict(all_exercises())
    yield
    registry = all_exercises()
    if registry != before:
        registry.clear()
        registry.update(before)


@pytest.fixture(scope="session")
def sample():
    """The bundled MNIST sample, loaded once for the whole session."""
    data, _ = datasets.load("mnist-sample", offline=True)
    return data


def write_idx(path: Path, array: np.ndarray, compress: bool = False) -> None:
    """Write a uint8 array in IDX format (what MNIST ships), optionally gzip-compressed."""
    header = struct.pack(">HBB", 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    payload = header + array.astype(np.uint8).tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    if compress:
        with gzip.open(path, "wb") as f:
            f.write(payload)
    else:
        path.write_bytes(payload)


def make_idx_set(folder: Path, n_train: int = 200, n_test: int = 100, compress: bool = True, seed: int = 0) -> None:
    """Four small IDX files of random 28×28 images and labels 0..9."""
    rng = np.random.default_rng(seed)
    suffix = ".gz" if compress else ""
    for split, n in (("train", n_train), ("t10k", n_test)):
        write_idx(folder / f"{split}-images-idx3-ubyte{suffix}", rng.integers(0, 256, (n, 28, 28)), compress)
        write_idx(folder / f"{split}-labels-idx1-ubyte{suffix}", rng.integers(0, 10, (n,)), compress)


def copy_sample_gz(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for f in (REPO / "data" / "mnist-sample").glob("*.gz"):
        shutil.copy(f, folder / f.name)


def invoke(*args, **kwargs):
    """Run `gradlab ARGS...` through click's CliRunner (stdout and stderr kept apart)."""
    return CliRunner().invoke(cli, list(args), prog_name="gradlab", **kwargs)


def assert_one_line_error(result, *fragments):
    """Bad input: exit code 2, exactly one line on stderr naming the problem, no traceback."""
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("gradlab: error:") and "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def require_sandbox(mode: str | None = None) -> str:
    """Skip unless submissions run isolated here (root with bubblewrap, or the uid fallback) — or, MODE given, in that
    mode; under CI (.ci/run sets GRADLAB_REQUIRE_SANDBOX=1) a missing sandbox is a failure, not a skip."""
    import os

    from gradlab.practice.sandbox import modes

    found = modes.detect()
    if found.isolated and (mode is None or found.mode == mode):
        return found.mode
    wanted = f" in {mode} mode" if mode else ""
    why = f"needs submissions isolated{wanted} (root with bubblewrap): here {found.mode}, {found.why}"
    if os.environ.get("GRADLAB_REQUIRE_SANDBOX"):
        pytest.fail(why)
    pytest.skip(why)


def check_file(path, name: str, seed: int = 0):
    """The Result `gradlab check PATH --exercise NAME` shows, without the command: the file read once and checked in
    the sandbox."""
    from gradlab.practice.judging import submission
    from gradlab.practice.judging.check import run_check

    return run_check(submission.own(str(path), submission.read(str(path), follow=True), name), seed)
