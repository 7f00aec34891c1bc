"""Run a student's file in a separate process with a time limit, a memory limit and a cap on what it prints; only
its outputs come back (torch.load with weights_only: tensors and plain containers, nothing that runs code). The
process cannot write a file beyond 64 MB, its printed output included (Python ignores SIGXFSZ, so a print past the
cap fails with "File too large" in the submission's own code)."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TIMEOUT_S = 20.0
MEMORY = 4 << 30  # bytes of address space: torch itself needs about 1.5 GB of it
MAX_FILE = 64 << 20  # bytes any file of the process may reach, its printed output included
SHOWN = 2000  # characters of printed output shown


def _limits() -> None:  # in the child, before it runs anything
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE, MAX_FILE))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.setsid()  # its own process group: a timeout kills everything it started


class Sandbox:
    """The submission's process, started at once (it imports torch while gradlab computes the references)."""

    def __init__(self, path: str, exercise, seed: int, timeout_s: float | None = None) -> None:
        from gradlab.practice import harness_module

        self.tmp = tempfile.TemporaryDirectory(prefix="gradlab-check-")
        self.out_path, self.log_path = Path(self.tmp.name, "out.pt"), Path(self.tmp.name, "printed.txt")
        self.timeout_s, self.started = timeout_s or TIMEOUT_S, time.monotonic()
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "gradlab.practice.child", os.path.abspath(path),
                                          harness_module(exercise), exercise.function, str(seed),
                                          str(self.out_path)], stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.tmp.name,
                                         preexec_fn=_limits)

    def finish(self) -> dict:
        """{"ok": True, "outputs": [...]} or {"ok": False, "kind", "error" (one line), "trace"}; "printed" either
        way. Waits for the process, at most the time limit from its start."""
        try:
            return self._result()
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            self.tmp.cleanup()

    def _result(self) -> dict:
        import torch

        try:
            self.proc.wait(timeout=max(0.0, self.timeout_s - (time.monotonic() - self.started)))
        except subprocess.TimeoutExpired:
            return {"ok": False, "kind": "timeout", "trace": "", "printed": "", "printed_bytes": 0,
                    "error": f"your code ran longer than {self.timeout_s:g} s and was stopped (an endless loop?)"}
        if self.out_path.is_file():
            try:
                result = torch.load(self.out_path, weights_only=True)
            except Exception:  # anything that is not plain tensors is the submission's fault
                result = {"ok": False, "kind": "output", "trace": "",
                          "error": "your function returned something that is not tensors"}
        else:
            code = self.proc.returncode
            if code is not None and code < 0:
                error = (f"your code was killed by {signal.Signals(-code).name}"
                         + (" (out of memory?)" if -code == signal.SIGKILL else ""))
            else:
                error = f"your code ended the process (exit code {code}) before returning: os._exit or similar"
            result = {"ok": False, "kind": "died", "error": error, "trace": ""}
        result["printed_bytes"] = self.log_path.stat().st_size
        result["printed"] = self.log_path.read_bytes()[:SHOWN].decode(errors="replace")
        return result
