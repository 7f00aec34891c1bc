"""The sandbox under `gradlab check`, attacked for real (issue #27): each attack a student could try is a submission in
one class folder that gradlab grades as root, as a course would (--junit, --json); each test reads what
came back, what gradlab wrote and what is left on the machine afterwards. Every attack file is otherwise a right
answer, so an attack that worked would pass. The folder runs once (two sandboxes at a time), so the suite pays about
twenty sandbox start-ups for all of it. Without bubblewrap and root these tests skip, saying why; under CI
(GRADLAB_REQUIRE_SANDBOX=1, set by .ci/run) they fail instead."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import re
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import REPO, assert_one_line_error, check_file, invoke, once, require_sandbox

import gradlab
from gradlab.kit.text import one_line, sanitize
from gradlab.practice import all_exercises, checks_of
from gradlab.practice.classroom.starter import starter
from gradlab.practice.inside import wire
from gradlab.practice.sandbox import box, bwrap, files, modes, returned, slots
from gradlab.practice.sandbox.limits import Limits, Outcome, package_dir

CLIP = "clip.clip_by_global_norm"
HEAD = '''# gradlab-exercise: clip.clip_by_global_norm
import json
import os
import sys

import torch


def report(**found):
    print("ATTACK " + json.dumps(found), flush=True)


def clip_by_global_norm(grads, clip_norm):  # a right answer: an attack that works passes with it
    norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads))
    scale = clip_norm / torch.clamp(norm, min=clip_norm)
    return [g * scale.to(g.dtype) for g in grads]


'''
# Attacks: what each tries is in its report; @NAMES@ are filled in by the test (paths it knows on the host, as if
# leaked to the student)
ATTACKS = {
    "copy.py": '''
import glob
import importlib

found = {"frames": [], "imports": [], "files": [], "modules": []}
right = clip_by_global_norm


def clip_by_global_norm(grads, clip_norm):  # walks every frame above it for gradlab's references
    f = sys._getframe()
    while f is not None:
        for k in [*f.f_globals, *f.f_locals]:
            if any(w in str(k).lower() for w in ("reference", "mistake", "answer", "checks")):
                found["frames"].append(f"{f.f_code.co_filename}:{k}")
        f = f.f_back
    for name in ("gradlab.practice.judging.check", "gradlab.kit.exercise", "gradlab.lessons.clip.exercises.checks",
                 "gradlab.lessons.clip.exercises.answers", "gradlab.lessons.clip.lesson",
                 "gradlab.practice.sandbox.box"):
        try:
            importlib.import_module(name)
            found["imports"].append(name)
        except Exception:
            pass
    paths = @PATHS@ + [p for d in sys.path for name in ("checks.py", "answers.py")
                       for p in glob.glob(d + "/gradlab/lessons/*/exercises/" + name)]
    for path in paths:
        try:
            with open(path, "rb") as f:
                f.read(1)
            found["files"].append(path)
        except OSError:
            pass
    found["modules"] = sorted(m for m in sys.modules if m.startswith("gradlab"))
    report(**found)
    return right(grads, clip_norm)
''',
    "forge.py": '''
import signal

seen = {}
for pid in [os.getppid()] + [int(p) for p in os.listdir("/proc") if p.isdigit()]:
    try:
        argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")
    except OSError:
        continue
    if b"--json" in argv:
        seen[pid] = argv[argv.index(b"--json") + 1].decode()
wrote, killed = [], []
for path in [*seen.values(), "@RESULTS@"]:  # the grader's output, found or leaked
    try:
        with open(path, "w") as f:
            f.write('{"score": 999, "tests": []}')
        wrote.append(path)
    except OSError as e:
        pass
for pid in {os.getppid(), *seen} - {os.getpid()}:  # the grader, as far as it can be found
    try:
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)
    except OSError:
        pass
paused = []
for p in [p for p in os.listdir("/proc") if p.isdigit()]:  # another submission's sandbox: pause it, as a rival would
    try:
        if @UID_LO@ <= os.stat(f"/proc/{p}").st_uid < @UID_HI@ and os.stat(f"/proc/{p}").st_uid != os.getuid():
            os.kill(int(p), signal.SIGSTOP)
            os.kill(int(p), signal.SIGCONT)
            paused.append(int(p))
    except OSError:
        pass
report(grader_found=bool(seen), wrote=wrote, killed=killed, paused=paused,
       pids=sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
''',
    "daemon.py": '''
import ctypes
import time

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        ctypes.CDLL(None).prctl(15, b"gl-daemon", 0, 0, 0)  # its name, for the test to look for
        time.sleep(1)
        for target in ("@MARKER@", "@RESULTS@"):
            try:
                with open(target, "w") as f:
                    f.write('{"score": 999, "written_by": "daemon"}')
            except OSError:
                pass
        time.sleep(60)
        os._exit(0)
    os._exit(0)
os.wait()
report(daemon="started")
''',
    "site.py": '''
import glob

site = os.path.dirname(os.path.dirname(torch.__file__))
tried = {}
for label, path, flags in (("scratch file", "@SCRATCH@", os.O_WRONLY | os.O_APPEND),
                           ("torch/serialization.py", os.path.join(site, "torch", "serialization.py"),
                            os.O_WRONLY | os.O_APPEND),
                           ("new file in site-packages", os.path.join(site, "gl-attack-new.py"),
                            os.O_WRONLY | os.O_CREAT | os.O_EXCL),
                           ("new .pyc", os.path.join(site, "torch", "__pycache__", "gl-attack.pyc"),
                            os.O_WRONLY | os.O_CREAT | os.O_EXCL),
                           ("gradlab's child", "@CHILD@", os.O_WRONLY | os.O_APPEND)):
    try:
        os.close(os.open(path, flags, 0o644))  # opened, nothing written: nothing changes even if it worked
        tried[label] = "opened"
    except OSError as e:
        tried[label] = e.strerror
report(**tried)
''',
    "net.py": '''
import socket
import time

found = {}
try:
    with socket.create_connection(("127.0.0.1", @PORT@), timeout=2) as s:
        found["host loopback"] = s.recv(64).decode()
except OSError as e:
    found["host loopback"] = f"refused: {e}"
t = time.monotonic()
try:
    socket.getaddrinfo("pypi.org", 443)
    found["dns"] = "resolved"
except OSError as e:
    found["dns"] = f"failed: {e}"
found["dns_s"] = time.monotonic() - t
try:  # a UDP connect sends nothing: it asks the kernel for a route to a public address (TEST-NET-1)
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.connect(("192.0.2.1", 9))
    found["route"] = "exists"
except OSError as e:
    found["route"] = f"none: {e}"
report(**found)
''',
    "flood.py": '''
import time

children = 0
for _ in range(500):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    children += 1
report(children=children)
''',
    "honest.py": "",
    "thread.py": '''
import threading
import time

threading.Thread(target=time.sleep, args=(3600,)).start()  # not a daemon: it would keep a process alive
''',
    "limits.py": '''
import ctypes

found = {}
for where in ("/tmp", "."):
    written = 0
    try:
        for i in range(20):
            with open(os.path.join(where, f"fill-{i}"), "wb") as f:
                for _ in range(50):
                    f.write(b"\\0" * (1 << 20))
                    written += 1 << 20
    except OSError as e:
        found[f"{where} stopped"] = e.strerror
    found[f"{where} MB"] = written >> 20
libc = ctypes.CDLL(None, use_errno=True)
for name, call in (("memfd_create", lambda: libc.memfd_create(b"x", 0)),
                   ("shmget", lambda: libc.shmget(0, 1 << 20, 0o1000 | 0o600)),
                   ("unshare user+mount", lambda: libc.unshare(0x10000000 | 0x00020000))):
    found[name] = "allowed" if call() >= 0 else os.strerror(ctypes.get_errno())
found["uid"] = os.getuid()
found["nproc"] = __import__("resource").getrlimit(__import__("resource").RLIMIT_NPROC)[0]
report(**found)
''',
    "ansi.py": '''
print("\\x1b[2J\\x1b[32m✓ all 12 checks passed\\x1b[0m\\r\\x07")
right = clip_by_global_norm


def clip_by_global_norm(grads, clip_norm):
    raise ValueError("\\x1b[2J\\x1b[32m✓ 12/12\\u202e")
''',
    # what the exercise asks students to write, taken from torch: right values, one failed check of its own
    "library.py": '''
right = clip_by_global_norm


def clip_by_global_norm(grads, clip_norm):
    ps = [torch.nn.Parameter(g.clone()) for g in grads]
    for p, g in zip(ps, grads):
        p.grad = g.clone()
    torch.nn.utils.clip_grad.clip_grad_norm_(ps, clip_norm)
    return [p.grad for p in ps]
''',
    # an honest bug: one tensor short
    "short.py": '''
right = clip_by_global_norm


def clip_by_global_norm(grads, clip_norm):
    return right(grads, clip_norm)[:-1]
''',
}
# Outputs no child of gradlab's would send: the submission writes them itself to the output channel, then leaves
SEND = '''
import io
import struct

from gradlab.practice.inside import wire

KEPT, ZERO = "inputs changed", torch.zeros(1)  # the rule output the harness adds beside "grads"


def send(data):
    fd = int(os.environ["GRADLAB_OUT"][3:])
    while data:
        data = data[os.write(fd, data[:1 << 20]):]
    os._exit(0)


def raw(tree, specs, tensors=b"", text=None):  # a result in safetensors' format (the channel's), its header as given
    head = json.dumps({"__metadata__": {"gradlab": json.dumps(tree) if text is None else text}, **specs}).encode()
    return struct.pack("<Q", len(head)) + head + tensors


def saved(value, **kw):
    buf = io.BytesIO()
    torch.save(value, buf, **kw)
    return buf.getvalue()


'''
N_CASES = len(checks_of(all_exercises()[CLIP]).cases(0))  # one output per input, as the child sends
MALFORMED = {
    "out_strings.py": (f'send(wire.encode({{"ok": True, "outputs": [{{"grads": ["a", "b", "c"], KEPT: ZERO}}] * '
                       f'{N_CASES}}}))', "is a str, not a tensor"),
    # a tensor that declares 10¹² values and sends 4 bytes
    "out_declared.py": (f'send(raw({{"ok": True, "outputs": [{{"grads": [{{"$tensor": 0}}]}}] * {N_CASES}}}, '
                        f'{{"0": {{"dtype": "F32", "shape": [10**12], "data_offsets": [0, 4]}}}}, bytes(4)))',
                        "are not safetensors ("),  # its reader's words follow
    # two tensors over the same bytes
    "out_overlap.py": (f'send(raw({{"ok": True, "outputs": [{{"grads": [{{"$tensor": 0}}, {{"$tensor": 1}}]}}] * '
                       f'{N_CASES}}}, {{"0": {{"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, '
                       f'"1": {{"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}}}, bytes(12)))',
                       "are not safetensors ("),
    "out_cases.py": ('send(wire.encode({"ok": True, "outputs": [{"grads": []}] * 2}))',
                     f"are 2 where {N_CASES} (one per input) are expected"),
    "out_notdict.py": ("send(wire.encode([1, 2, 3]))", "not the result gradlab's child sends"),
    "out_garbage.py": ("send(os.urandom(5000))", "are not a gradlab result"),
    # a pickle is never read: this one (torch.save's format) would run code in a torch without weights_only
    "out_pickle.py": ('send(saved({"ok": True, "outputs": [{"grads": [ZERO] * 3, KEPT: ZERO}] * 5}))',
                      "are not a gradlab result"),
    "out_huge.py": ('send(b"PK" * (33 << 20))', "sent back more than 64 MB"),
    "out_header.py": ('send(struct.pack("<Q", 1 << 63) + bytes(100))', "declare a header of 9,223,372,036,854,775,808"),
    "out_deep.py": ('send(struct.pack("<Q", 200_000) + b"[" * 100_000 + b"]" * 100_000)',
                    "header that is not JSON (RecursionError)"),
    "out_deeptree.py": ('send(raw(None, {}, text="[" * 100_000 + "]" * 100_000))',
                        "tree that is not JSON (RecursionError)"),
    # one tensor named by every output: the tree would share it (a few KB standing for 64³ references)
    "out_shared.py": (f'send(raw({{"ok": True, "outputs": [{{"grads": [{{"$tensor": 0}}] * 3}}] * {N_CASES}}}, '
                      f'{{"0": {{"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}}}, bytes(4)))',
                      "was used already"),
    # 64³ numbers in a few hundred KB: walking them is bounded
    "out_many.py": ('nested = [0] * 64\nfor _ in range(2):\n    nested = [nested] * 64\n'
                    f'send(wire.encode({{"ok": True, "outputs": [{{"bomb": nested, "grads": [ZERO], KEPT: ZERO}}] * '
                    f'{N_CASES}}}))',
                    "hold more than 100,000"),
}
# Sent from a real sandbox in the attack batch: the channel's own bound (64 MB, stopped while it reads) and a
# pickle. The others are bytes the same reader decodes: each is made here, from the same code, and handed to
# returned.received as the sandbox's outcome (a sandbox start each was 11 starts of the batch, ~10 s of the suite).
THROUGH_SANDBOX = ("out_huge.py", "out_pickle.py")


def malformed_bytes(name: str) -> bytes:
    """What MALFORMED[NAME]'s submission sends down the channel, made in this process by the same code."""
    sent: list[bytes] = []
    scope: dict = {}
    exec(compile("import json\nimport os\n\nimport torch\n" + SEND, "<send>", "exec"), scope)
    scope["send"] = sent.append
    exec(compile(MALFORMED[name][0], name, "exec"), scope)
    return sent[0]


def _processes(match) -> list[int]:
    found = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if match(p):
                    found.append(int(p))
            except OSError:
                pass
    return found


# The attack batches run their checks on sandbox uids of their own (GRADLAB_SANDBOX_UID_BASE), so that a process
# left behind is theirs and not a check another test runs at the same time (pytest-xdist runs tests side by side).
PRIVATE_BASE = 1_700_000 + (os.getpid() % 10_000) * slots.SLOTS
PRIVATE_ENV = {"GRADLAB_SANDBOX_UID_BASE": str(PRIVATE_BASE)}


def _on_our_uids(pid: str) -> bool:
    """Whether PID runs on one of this batch's sandbox uids."""
    return PRIVATE_BASE <= os.stat(f"/proc/{pid}").st_uid < PRIVATE_BASE + slots.SLOTS


def _sandbox_processes() -> list[str]:
    """The processes on this batch's sandbox uids, each said as the kernel shows it (pid, uid, state, parent, pending
    signals, command line), so that a failure says what was left."""
    said = []
    for pid in _processes(_on_our_uids):
        try:
            status = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                          if ":\t" in line)
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:200]
        except OSError:  # gone meanwhile
            continue
        said.append(" ".join(f"{k}={status.get(k, '?').strip()}" for k in ("Pid", "Uid", "State", "PPid", "SigPnd",
                                                                         "ShdPnd", "SigBlk", "Name")) + f" {argv!r}")
    return said


def _named(comm: str) -> list[int]:
    """The processes named COMM on this batch's sandbox uids. Not every such process on the machine: the other attack
    batch (bwrap's and the uid fallback's are made by different test workers, maybe at the same time) starts a
    daemon of the same name, alive while its own check runs; seeing it failed this batch's test, and killing it
    tampered with the other's."""
    return _processes(lambda p: _on_our_uids(p) and Path(f"/proc/{p}/comm").read_text().strip() == comm)


class Listener:
    """A service of gradlab's side on the host's loopback, outside any sandbox."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port, self.accepted = self.server.getsockname()[1], 0
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.accepted += 1
            with conn:
                conn.sendall(b"GRADLAB-SIDE-SECRET")


def shared(tmp_path_factory, name: str, make):
    """MAKE(tmp_path_factory)'s result, made once for the whole session however many pytest-xdist processes ask
    (conftest.once; the others wait for it and read it back): a class folder graded twice side by side would cost
    its CPU twice. (pytest-xdist's loadgroup would keep this module on one process, but with pytest 9.2 it no longer
    groups: pytest-dev/pytest-xdist#1386.)"""
    folder = once(tmp_path_factory, name, lambda f: (f / "result.pickle").write_bytes(
        pickle.dumps(make(tmp_path_factory))))
    return pickle.loads((folder / "result.pickle").read_bytes())


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """One class folder of attacks, malformed outputs and hostile entries, graded once as a course grades it."""
    return shared(tmp_path_factory, "sandbox-attack-batch", _batch)


def _batch(tmp_path_factory):
    require_sandbox("bwrap")
    root = tmp_path_factory.mktemp("attack")
    folder, out = root / "class", root / "out"
    folder.mkdir()
    out.mkdir()
    os.chmod(root, 0o755)
    drop = root / "drop"  # where a daemon could write on the host, were it able to: writable by anyone
    drop.mkdir()
    os.chmod(drop, 0o1777)
    site = Path(os.path.dirname(os.path.dirname(__import__("torch").__file__)))
    scratch = site / f"gl-scratch-{os.getpid()}.txt"  # world-writable, in a folder the sandbox binds read-only
    scratch.write_text("unchanged\n")
    os.chmod(scratch, 0o666)
    listener = Listener()
    package = Path(gradlab.__file__).parent
    known = [str(package / "lessons/clip/exercises/checks.py"), str(package / "practice/judging/check.py"),
             str(REPO / "gradlab/lessons/clip/exercises/answers.py"),
             *(str(p) for d in bwrap.masked_dirs() for p in Path(d).rglob("*") if p.is_file())][:50]
    fills = {"@PATHS@": repr(known), "@UID_LO@": str(PRIVATE_BASE), "@UID_HI@": str(PRIVATE_BASE + slots.SLOTS),
             "@RESULTS@": str(out / "all.json"), "@MARKER@": str(drop / "daemon-was-here"),
             "@SCRATCH@": str(scratch), "@CHILD@": str(package / "practice/inside/child.py"),
             "@PORT@": str(listener.port)}
    for name, body in ATTACKS.items():
        for key, value in fills.items():
            body = body.replace(key, value)
        (folder / name).write_text(HEAD + body)
    for name in THROUGH_SANDBOX:
        (folder / name).write_text(HEAD + SEND + MALFORMED[name][0] + "\n")
    right = HEAD.replace("# gradlab-exercise: clip.clip_by_global_norm\n", "")
    os.symlink("/etc/shadow", folder / "link.py")  # a link out of the folder, to a file only root may read
    (folder / os.fsdecode(b"caf\xe9.py")).write_text(right)  # a name that is not UTF-8, and no marker line
    (folder / "\x1b[2Jred.py").write_text(HEAD)  # an escape sequence in the name
    (folder / "other.py").write_text(starter(all_exercises()["mnist.sgd_step"]))  # names another exercise
    (folder / "dir.py").mkdir()
    os.mkfifo(folder / "fifo.py")  # opening it to read would block
    (folder / "big.py").write_text(HEAD + "#" * (2 << 20))
    files = {k: out / f for k, f in (("json", "all.json"), ("junit", "junit.xml"))}
    cmd = [sys.executable, "-m", "gradlab", "check", str(folder), "--exercise", CLIP, "--json", str(files["json"]),
           "--junit", str(files["junit"])]
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=600, cwd=root,
                              env={**os.environ, "COLUMNS": "160", **PRIVATE_ENV})
        wall = time.monotonic() - started
        assert files["json"].is_file(), proc.stderr.decode()[-3000:]
        time.sleep(2)  # the daemon would write 1 s after its check
        after = {"sandbox_processes": _sandbox_processes(), "daemons": _named("gl-daemon"),
                 "marker": (drop / "daemon-was-here").exists(), "scratch": scratch.read_text(),
                 "site_new": sorted(p.name for p in site.glob("gl-attack*")),
                 "pyc_new": sorted(p.name for p in (site / "torch" / "__pycache__").glob("gl-attack*")),
                 "accepted": listener.accepted, "written": files["json"].read_text()}
    finally:
        scratch.unlink()
        listener.server.close()
        for pid in _named("gl-daemon"):  # were any left, they are the attack's: gone after the evidence is taken
            os.kill(pid, 9)
    data = json.loads(files["json"].read_text())
    by_file = {d["config"]["file"]: d for d in data}
    reports = {}
    for name, d in by_file.items():
        for line in d["metrics"].get("printed", "").splitlines():
            if line.startswith("ATTACK {"):
                reports[name] = json.loads(line[7:])
    return {"proc": proc, "wall": wall, "after": after, "files": files, "by_file": by_file, "reports": reports,
            "uid_base": PRIVATE_BASE}  # the process that graded the folder chose it


def passed(entry: dict) -> bool:
    return entry["points"]["score"] == entry["points"]["max_score"] and not entry["stopped"]


def test_the_batch_ran_as_a_course_grades(batch):
    proc = batch["proc"]
    assert proc.returncode == 1, proc.stderr.decode()[-2000:]  # some failed, none crashed gradlab
    assert b"\x1b" not in proc.stdout and b"\x1b" not in proc.stderr  # nothing of theirs reaches the terminal raw
    assert all(d["metrics"].get("sandbox") == "bwrap" for d in batch["by_file"].values() if "sandbox" in d["metrics"])
    assert passed(batch["by_file"]["honest.py"])


def test_copying_finds_no_reference(batch):
    found = batch["reports"]["copy.py"]
    assert found["frames"] == [] and found["imports"] == [] and found["files"] == [], found
    assert set(found["modules"]) <= {"gradlab", "gradlab.practice", "gradlab.practice.inside",
                                     "gradlab.practice.inside.child", "gradlab.kit",
                                     "gradlab.kit.harness", "gradlab.kit.shared", "gradlab.practice.inside.wire",
                                     "gradlab.practice.inside.backward",
                                     "gradlab.lessons",
                                     "gradlab.lessons.clip",
                                     "gradlab.lessons.clip.exercises", "gradlab.lessons.clip.exercises.harness"}, \
        found["modules"]
    assert passed(batch["by_file"]["copy.py"])  # a right answer: only the copying was in vain


def test_forging_and_killing_the_grader_fail(batch):
    found = batch["reports"]["forge.py"]
    assert not found["grader_found"] and found["wrote"] == [] and found["killed"] == [] and found["paused"] == [], found
    assert found["pids"] == [1, 2]  # bwrap's init and itself: gradlab and the other submissions are not there
    assert isinstance(json.loads(batch["after"]["written"]), list)  # gradlab's, not the forged {"score": 999}


def test_a_daemon_does_not_outlive_its_check(batch):
    after = batch["after"]
    assert batch["reports"]["daemon.py"] == {"daemon": "started"}
    assert after["daemons"] == [] and not after["marker"] and after["sandbox_processes"] == []
    assert "written_by" not in after["written"]


def test_site_packages_and_gradlab_are_read_only(batch):
    found, after = batch["reports"]["site.py"], batch["after"]
    assert all(v != "opened" for v in found.values()), found
    assert after["scratch"] == "unchanged\n" and after["site_new"] == [] and after["pyc_new"] == []


def test_no_network_but_a_private_loopback(batch):
    found = batch["reports"]["net.py"]
    assert found["host loopback"].startswith("refused") and batch["after"]["accepted"] == 0, found
    assert found["dns"].startswith("failed") and found["dns_s"] < 1 and found["route"].startswith("none"), found


def test_a_process_flood_is_bounded_and_spares_its_neighbour(batch):
    assert 0 < batch["reports"]["flood.py"]["children"] < Limits().nproc
    assert passed(batch["by_file"]["flood.py"]) and passed(batch["by_file"]["honest.py"])
    assert batch["after"]["sandbox_processes"] == []


def test_disk_memory_and_the_kernel_are_bounded(batch):
    found = batch["reports"]["limits.py"]
    limits = Limits()
    assert found["/tmp MB"] <= limits.tmp_bytes >> 20 and found[". MB"] <= limits.box_bytes >> 20, found
    assert found["memfd_create"] == found["shmget"] == found["unshare user+mount"] == "Operation not permitted"
    assert batch["uid_base"] <= found["uid"] < batch["uid_base"] + slots.SLOTS and found["nproc"] == limits.nproc


def test_what_a_submission_prints_or_raises_comes_back_escaped(batch):
    entry = batch["by_file"]["ansi.py"]
    printed, stopped = entry["metrics"]["printed"], entry["stopped"]
    assert "\x1b" not in printed and "\\x1b[2J" in printed and "\\r" in printed and "\\x07" in printed
    assert "\x1b" not in stopped and "\\x1b[2J" in stopped and "\\u202e" in stopped and "\u202e" not in stopped


def test_a_thread_left_running_does_not_fail_a_right_answer(batch):
    assert passed(batch["by_file"]["thread.py"])


@pytest.mark.parametrize("name", [*THROUGH_SANDBOX, "short.py"])
def test_each_malformed_output_is_one_failed_check(batch, name):
    entry = batch["by_file"][name]
    fragment = MALFORMED[name][1] if name in MALFORMED else "has 2 tensors where 3 are expected"
    assert entry["points"]["score"] == 0 and fragment in entry["stopped"] and "\n" not in entry["stopped"], \
        entry["stopped"]


@pytest.mark.parametrize("name", [n for n in MALFORMED if n not in THROUGH_SANDBOX])
def test_each_malformed_output_is_one_line_of_what_came_back(name):
    """The bytes such a submission sends, read as the sandbox's outcome: a failed result, said in one line."""
    from inprocess import reference

    outcome = Outcome(mode="bwrap", returncode=0, output=malformed_bytes(name))
    got = returned.received(outcome, reference(CLIP).outputs, 20)
    assert not got.ok and got.kind == "output" and MALFORMED[name][1] in got.error and "\n" not in got.error, \
        got.error


@pytest.mark.parametrize(("name", "fragment"), [
    ("link.py", "it is a symbolic link"), ("dir.py", "not a regular file"), ("fifo.py", "not a regular file"),
    ("big.py", "larger than 1 MB"), ("other.py", "says it is mnist.sgd_step"),
])
def test_each_hostile_folder_entry_is_one_failed_check(batch, name, fragment):
    entry = batch["by_file"][name]
    assert entry["points"]["score"] == 0 and fragment in entry["stopped"] and "root:" not in json.dumps(entry)


def test_odd_names_are_graded_and_shown_escaped(batch):
    assert passed(batch["by_file"]["caf\\xe9.py"])  # no marker: the teacher's --exercise says what it is
    assert passed(batch["by_file"]["\\x1b[2Jred.py"])


def test_the_course_files_are_valid_and_cover_every_file(batch):
    files, by_file = batch["files"], batch["by_file"]
    suites = ET.parse(files["junit"]).getroot().findall("testsuite")
    assert len(suites) == len(by_file) == len(ATTACKS) + len(THROUGH_SANDBOX) + 7
    assert sum(int(s.get("tests")) for s in suites) == sum(d["points"]["max_score"] for d in by_file.values())
    assert {s.get("name") for s in suites} == set(by_file)


def test_course_files_need_isolation(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADLAB_SANDBOX", "plain")
    (tmp_path / "a.py").write_text(HEAD)
    out = invoke("check", str(tmp_path), "--exercise", CLIP, "--junit", str(tmp_path / "r.json"))
    assert_one_line_error(out, "runs other people's code", "apt-get install bubblewrap", "nothing was written")
    assert not (tmp_path / "r.json").exists()
    one = invoke("check", str(tmp_path / "a.py"), "--exercise", CLIP, "--junit", str(tmp_path / "j.xml"))
    assert_one_line_error(one, "apt-get install bubblewrap")
    assert_one_line_error(invoke("check", str(tmp_path), "--gradescope", str(tmp_path / "r.json")),
                          "add --exercise NAME")


def test_a_students_own_check_runs_unisolated_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADLAB_SANDBOX", "plain")
    (tmp_path / "mine.py").write_text(HEAD)
    out = invoke("check", str(tmp_path / "mine.py"))
    assert out.exit_code == 0 and "not isolated" in out.output, out.output


def test_a_crash_on_one_file_does_not_stop_the_others(tmp_path, monkeypatch):
    require_sandbox()
    from gradlab.practice.judging import check as check_module

    real = check_module.run_check

    def flaky(submission, seed=0):
        if submission.shown == "a.py":
            raise MemoryError("gradlab ran out of memory on this one")
        return real(submission, seed)

    monkeypatch.setattr(check_module, "run_check", flaky)
    (tmp_path / "a.py").write_text(HEAD)
    (tmp_path / "b.py").write_text(HEAD)
    out = invoke("check", str(tmp_path), "--exercise", CLIP, "--junit", str(tmp_path / "j.xml"))
    assert out.exit_code == 1, out.output
    suites = {s.get("name"): s for s in ET.parse(tmp_path / "j.xml").getroot().findall("testsuite")}
    assert suites["a.py"].get("failures") == suites["a.py"].get("tests") and suites["b.py"].get("failures") == "0"
    assert "gradlab could not check this file: MemoryError" in (tmp_path / "j.xml").read_text()


def _sandboxes_of(pid: int) -> set[int]:
    """PID's children that are a submission's bwrap (not detect()'s probe: only a sandbox reads its options from
    --args)."""
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:  # a thread that ended since the listing (a check's threads come and go)
            continue
        for child in children:
            with contextlib.suppress(OSError):
                if Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")[:2] == [b"bwrap", b"--args"]:
                    found.add(int(child))
    return found


def test_sigterm_ends_a_folder_at_once_and_writes_what_was_graded(tmp_path):
    """a.py (right) is graded, b.py and c.py sleep through their time limit: SIGTERM once c.py's sandbox has started
    ends gradlab within seconds (exit 143), its course files written: a.py graded, b.py and c.py said not graded.
    (Before: the first SIGTERM waited for every queued check, and nothing was written.)"""
    require_sandbox("bwrap")
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "a.py").write_text(HEAD)
    for name in ("b.py", "c.py"):
        (folder / name).write_text(HEAD + "\nimport time\n\n\ndef clip_by_global_norm(grads, clip_norm):\n"
                                   "    time.sleep(60)\n")
    files = {"json": tmp_path / "all.json", "junit": tmp_path / "junit.xml"}
    proc = subprocess.Popen([sys.executable, "-m", "gradlab", "check", str(folder), "--exercise", CLIP, "--json",
                             str(files["json"]), "--junit", str(files["junit"])], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **PRIVATE_ENV})
    try:
        seen: set[int] = set()
        deadline = time.monotonic() + 120
        while len(seen) < 3 and proc.poll() is None and time.monotonic() < deadline:  # the third sandbox: c.py's
            seen |= _sandboxes_of(proc.pid)
            time.sleep(0.1)
        assert len(seen) == 3, f"saw {len(seen)} sandboxes start"
        time.sleep(1)
        proc.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM and took < 10, (proc.returncode, took, err.decode()[-2000:])
    by_file = {d["config"]["file"]: d for d in json.loads(files["json"].read_text())}
    assert passed(by_file["a.py"]), by_file["a.py"]["stopped"]
    for name in ("b.py", "c.py"):
        assert "not graded: gradlab was stopped" in by_file[name]["stopped"]
    assert files["junit"].read_text().count("<testcase") >= 3


BARE = {f"gradlab/{n}.py": str(Path(gradlab.__file__).parent / f"{n}.py")
        for n in ("practice/inside/stage1", "kit/seccomp")}  # what box.run needs for a non-child command
STARTED = 'import os\nos.write(int(os.environ["GRADLAB_OUT"][3:]), b"S")\n'  # the time limit starts now


def test_a_sandbox_is_bounded_as_a_whole_and_first_for_the_oom_killer():
    """Six processes of 150 MB, each within RLIMIT_AS, in a sandbox of 512 MB: the sandbox's cgroup kills some (before:
    900 MB together, 80 such processes made the kernel kill gradlab); its processes are the OOM killer's first choice
    and cannot make themselves gradlab's equal."""
    require_sandbox()
    code = STARTED + '''import time
kids = []
for _ in range(6):
    pid = os.fork()
    if pid == 0:
        block = bytearray(150 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(2)
        os._exit(0)
    kids.append(pid)
print("killed", sum(os.waitpid(k, 0)[1] == 9 for k in kids))
print("oom", open("/proc/self/oom_score_adj").read().strip())
try:
    with open("/proc/self/oom_score_adj", "w") as f:
        f.write("0")
    print("lowered")
except OSError:
    print("refused")
'''
    limits = Limits(timeout_s=30, group_memory=512 << 20)
    o = box.run([sys.executable, "-c", code], package=BARE, inputs=b"", limits=limits)
    printed = o.printed.decode()
    assert o.cgroup in ("v1", "v2") and o.memory_peak <= 512 << 20 and o.leftovers == [], (o, printed)
    assert "killed 0" not in printed and "killed" in printed and "oom 1000" in printed, printed
    assert "refused" in printed or o.mode == "uid", printed
    effective = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("CapEff"))
    if int(effective.split()[1], 16) >> 24 & 1:  # CAP_SYS_RESOURCE (a container may lack it): gradlab lowered its own
        assert int(Path("/proc/self/oom_score_adj").read_text()) < 0  # gradlab's own: the OOM killer's last choice


def test_a_cpu_flood_leaves_its_neighbour_the_cpu_it_needs():
    """On one CPU, a sandbox of 89 busy processes (each its own session) beside one that needs 1 s of CPU: with a
    cgroup each, the flood gets one sandbox's share, and the neighbour finishes within its 15 s while the flood still
    runs (before: about 1/90th of the CPU, stopped at 15 s, as a right answer got 0 beside such a flood in 3 of 3
    runs). The flood is stopped at 8 s (its own limit), not 15: the neighbour must have finished before that."""
    require_sandbox()
    flood = STARTED + ("for _ in range(88):\n    if os.fork() == 0:\n        break\nif os.getpid() != os.getsid(0):\n"
                       "    os.setsid()\nwhile True:\n    pass\n")
    honest = STARTED + ("import time\nt = time.monotonic()\ntime.sleep(1)\nwhile time.process_time() < 1:\n"
                        "    pass\nprint(f'done in {time.monotonic() - t:.1f} s')\n")
    script = f'''import json, os, sys, threading
os.sched_setaffinity(0, {{min(os.sched_getaffinity(0))}})
from gradlab.practice.sandbox import box
from gradlab.practice.sandbox.limits import Limits
import time
found = {{}}
def run(name, code, limits):
    o = box.run([sys.executable, "-c", code], package={BARE!r}, inputs=b"", limits=limits)
    found[name] = {{"stopped": o.stopped, "printed": o.printed.decode()[-300:], "cgroup": o.cgroup,
                   "ended": time.monotonic()}}
threads = [threading.Thread(target=run, args=a) for a in (("flood", {flood!r}, Limits(timeout_s=8)),
                                                            ("honest", {honest!r}, Limits(timeout_s=15)))]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(found))
'''
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                       env={**os.environ, **PRIVATE_ENV, "PYTHONPATH": str(REPO)})
    found = json.loads(r.stdout.splitlines()[-1]) if r.returncode == 0 else pytest.fail(r.stderr[-2000:])
    assert found["flood"]["stopped"] == "timeout" and found["honest"]["cgroup"], found
    assert found["honest"]["stopped"] is None and "done in" in found["honest"]["printed"], found
    assert found["honest"]["ended"] < found["flood"]["ended"], found  # it finished beside the flood, not after it


def test_a_sandbox_without_a_cgroup_is_said_in_the_line_that_names_the_mode(tmp_path, monkeypatch):
    require_sandbox()
    from gradlab.practice.sandbox import cgroups

    monkeypatch.setattr(cgroups, "available", lambda: ("", "no cgroupfs (test)"))
    (tmp_path / "a.py").write_text(HEAD)
    out = invoke("check", str(tmp_path / "a.py"), "--exercise", CLIP, "--junit", str(tmp_path / "j.xml"))
    said = " ".join(out.output.split())
    assert out.exit_code == 0 and "gradlab: note: submissions run" in said, out.output
    assert "no cgroup here (no cgroupfs (test)): a sandbox's processes together are bounded in neither" in said


def test_a_posix_message_queue_is_refused():
    """A queue outlives its process (the uid fallback has no ipc namespace to drop it with): mq_open is refused."""
    require_sandbox()
    code = STARTED + ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                      "fd = libc.syscall(240 if os.uname().machine == 'x86_64' else 180, b'gl-q', 0o102, 0o600, None)\n"
                      "print('mq_open', fd, os.strerror(ctypes.get_errno()) if fd < 0 else 'opened')\n")
    o = box.run([sys.executable, "-c", code], package=BARE, inputs=b"", limits=Limits(timeout_s=20))
    assert "mq_open -1 Operation not permitted" in o.printed.decode(), o.printed


def _as_uid(uid: int, code: str) -> None:
    subprocess.run(["/usr/bin/python3", "-I", "-S", "-c", code], user=uid, group=uid, extra_groups=[], cwd="/",
                   check=True, timeout=60)


def test_the_uid_cleanup_runs_as_the_uid_walks_any_depth_and_covers_run_lock(tmp_path):
    """What a sandbox uid left is removed by a process of that uid (a race can make it remove only what the uid could
    remove itself: root deleted a classmate's file that way), through a 1,500-deep chain (RecursionError before),
    in /run/lock too."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    uid = PRIVATE_BASE + slots.SLOTS - 1
    tag = f"gl-clean-{os.getpid()}"
    _as_uid(uid, f'''import os
os.makedirs("/tmp/{tag}", exist_ok=True)
os.chdir("/tmp/{tag}")
for _ in range(1500):
    os.mkdir("d")
    os.chdir("d")
open("deep", "w").close()
for folder in ("/run/lock", "/dev/shm", "/var/tmp"):
    if os.path.isdir(folder):
        open(f"{{folder}}/{tag}", "w").close()
''')
    assert slots.clean_as_uid(uid)
    assert not os.path.lexists(f"/tmp/{tag}") and not any(os.path.lexists(f"{d}/{tag}") for d in
                                                           ("/run/lock", "/dev/shm", "/var/tmp"))
    guarded = Path(tempfile.mkdtemp(prefix="gl-guarded-"))  # a folder the uid cannot write in, holding a file of
    try:  # the uid's: root would remove it, the uid cannot
        os.chmod(guarded, 0o755)
        (guarded / "victim").write_text("kept")
        os.chown(guarded / "victim", uid, uid)
        assert not slots.clean_as_uid(uid, (str(guarded),)) and (guarded / "victim").read_text() == "kept"
    finally:
        shutil.rmtree(guarded)


def test_a_uid_whose_cleanup_failed_is_not_used_again(tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    monkeypatch.setattr(slots, "LOCK_DIR", tmp_path)
    monkeypatch.setattr(slots, "UID_BASE", PRIVATE_BASE)
    monkeypatch.setattr(slots, "recover", lambda uid: uid != PRIVATE_BASE)  # slot 0's leftovers stay
    (tmp_path / "slot-0.used").write_text("a gradlab that died mid-check\n")
    slot = slots.Slot("uid")
    assert slot.uid == PRIVATE_BASE + 1 and (tmp_path / "slot-1.used").exists()
    slot.release(cleaned=True)
    assert not (tmp_path / "slot-1.used").exists() and (tmp_path / "slot-0.used").exists()


def test_two_slots_planting_in_each_others_tmp_cannot_retire_each_other(tmp_path, monkeypatch):
    """One student's two files graded at once under two uids: each makes a folder in /tmp that others may write in but
    not list, and plants a closed, non-empty folder and a file in the other's. The cleanup of the second ends with
    nothing of its own left (the first's plant in its folder emptied as the first uid): a sandbox cannot make another
    slot's cleanup fail. The first, retired while its own plant stood in a folder it may not list, is taken again
    once that is gone (before: both cleanups failed on every try, and both slots were retired for good)."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    a, b = PRIVATE_BASE + slots.SLOTS - 3, PRIVATE_BASE + slots.SLOTS - 2
    monkeypatch.setattr(slots, "LOCK_DIR", tmp_path)
    monkeypatch.setattr(slots, "UID_BASE", a)  # slot 0 is a, slot 1 is b
    tag = f"gl-plant-{os.getpid()}"
    plant = '''import os
mine, theirs = "/tmp/{tag}-{me}", "/tmp/{tag}-{other}"
os.makedirs(mine, exist_ok=True)
os.chmod(mine, 0o733)  # others may make entries in it, but not list it
if os.path.isdir(theirs):
    os.makedirs(theirs + "/planted/deeper")
    open(theirs + "/planted/deeper/f", "w").close()
    open(theirs + "/loose", "w").close()
    os.chmod(theirs + "/planted", 0o700)
'''
    for me, other, uid in (("a", "b", a), ("b", "a", b), ("a", "b", a)):
        _as_uid(uid, plant.format(tag=tag, me=me, other=other))
    try:
        assert not slots.clean_as_uid(a)  # its own plant in b's folder, which a may not list, is left
        (tmp_path / "slot-0.used").write_text("retired\n")
        assert slots.clean_as_uid(b)  # a's plant in b's folder does not stop it
        assert not os.path.lexists(f"/tmp/{tag}-a") and not os.path.lexists(f"/tmp/{tag}-b")
        slot = slots.Slot("uid")  # slot 0 (a), retired, is recovered now that its files are gone
        assert slot.uid == a
        slot.release(cleaned=True)
        assert not (tmp_path / "slot-0.used").exists()
    finally:
        for me in "ab":
            subprocess.run(["rm", "-rf", f"/tmp/{tag}-{me}"], check=False)


def test_every_harness_imports_in_the_sandbox_with_only_its_own_files():
    """The contract of gradlab/kit/harness.py, run for real: in the sandbox, each exercise's harness imports with
    only the files gradlab binds for it (an import hook refuses any other module of gradlab), and nothing of gradlab
    but those files exists there."""
    require_sandbox()
    from gradlab.practice import harness_module

    harnesses = sorted({harness_module(e) for e in all_exercises().values()})
    allowed = {h: sorted(files.gradlab_imports(h)) for h in harnesses}
    package: dict[str, str] = {}
    for h in harnesses:
        package |= files.sandbox_files(h)
    code = r'''
import importlib, json, os, sys
root = sys.argv[1]
sys.path.insert(0, root)
allowed = json.loads(sys.argv[2])

class Gate:
    only = None
    def find_spec(self, name, path=None, target=None):
        if name.startswith("gradlab") and Gate.only is not None and not any(
                m == name or m.startswith(name + ".") for m in Gate.only):
            raise ImportError(f"{name} is not bound for this harness")

sys.meta_path.insert(0, Gate())
out = {"files": sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)}
for harness, modules in allowed.items():
    for m in [m for m in sys.modules if m.startswith("gradlab")]:
        del sys.modules[m]
    Gate.only = modules
    try:
        out[harness] = sorted(importlib.import_module(harness).HARNESSES)
    except Exception as e:
        out[harness] = f"{type(e).__name__}: {e}"
Gate.only = None
for name in ("gradlab.practice.judging.check", "gradlab.kit.exercise", "gradlab.lessons.clip.exercises.checks"):
    try:
        out[name] = importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # its package is not there either
        out[name] = False
print("RESULT " + json.dumps(out))
'''
    outcome = box.run([sys.executable, "-I", "-c", code, "{pkg}", json.dumps(allowed)], package=package,
                          inputs=b"")
    text = outcome.printed.decode()
    line = next((line for line in text.splitlines() if line.startswith("RESULT ")), None)
    assert line, text[-3000:]
    got = json.loads(line[7:])
    for h in harnesses:
        names = {e.function for e in all_exercises().values() if harness_module(e) == h}
        assert isinstance(got[h], list) and names <= set(got[h]), (h, got[h])
    assert not any(got[n] for n in ("gradlab.practice.judging.check", "gradlab.kit.exercise",
                                    "gradlab.lessons.clip.exercises.checks"))
    assert set(got["files"]) == set(package) | set(bwrap.init_stubs(package))
    assert not any(f.endswith(("checks.py", "answers.py")) for f in got["files"])


def test_the_harness_contract_is_stated_where_harnesses_are_described():
    from gradlab.kit import harness
    from gradlab.lessons import info

    for doc in (info.__doc__, harness.__doc__):
        assert "imports torch, the standard library and" in " ".join(doc.split()) and "SHARED" in doc


# ---------------------------------------------------------------------------------------------------------------
# gradlab.check in a notebook: the function goes by value, with what it uses from other cells
# ---------------------------------------------------------------------------------------------------------------

NOTEBOOK = r'''
import json, linecache, sys, types
import __main__
import cloudpickle
import gradlab

# cloudpickle as released: 3.1.2 and before kept each code object's file name, 3.1.3 writes "<dynamic-code>"
FILENAME = sys.argv[1]
_reduce = cloudpickle.cloudpickle.Pickler._dispatch_table[types.CodeType]


def _code_reduce(code):
    make, args = _reduce(code)
    kept = code.co_filename if FILENAME == "kept" else "<dynamic-code>"
    return make, tuple(kept if a in (code.co_filename, "<dynamic-code>") and isinstance(a, str) else a for a in args)


cloudpickle.cloudpickle.Pickler._dispatch_table[types.CodeType] = _code_reduce

cells = [
    "import torch\nimport torch.nn.functional as Fn\nfrom math import sqrt as root",
    "def _norm(grads):\n    return root(sum(float((g.double() ** 2).sum()) for g in grads))",
    # a cell with a line magic, as IPython runs it (its text is never read again)
    "get_ipython().run_line_magic('time', 'x = 1')\n"
    "def clip_by_global_norm(grads, clip_norm):\n"
    "    return [g * (clip_norm / max(_norm(grads), clip_norm)) for g in grads]",
    "clip = lambda grads, clip_norm: [g * (clip_norm / max(_norm(grads), clip_norm)) for g in grads]",
    "def _half(x):\n    return x * (1 // 0)\n\ndef broken(grads, clip_norm):\n    return [_half(g) for g in grads]",
]
ns = __main__.__dict__
ns["get_ipython"] = lambda: types.SimpleNamespace(run_line_magic=lambda *a: None)
for i, cell in enumerate(cells):
    name = f"/tmp/ipykernel_0/cell{i}.py"  # IPython's cell files: in linecache only, never on disk
    linecache.cache[name] = (len(cell), None, cell.splitlines(True), name)
    exec(compile(cell, name, "exec"), ns)
out = {}
for label, fn in (("def", ns["clip_by_global_norm"]), ("lambda", ns["clip"]), ("broken", ns["broken"])):
    r = gradlab.check(fn, "clip.clip_by_global_norm")
    out[label] = [r.exit_code, r.stopped, r.metrics.get("trace", "")]
print("RESULT " + json.dumps(out))
'''


@pytest.mark.parametrize("filename", ["kept", "dynamic-code"])  # cloudpickle ≤ 3.1.2, 3.1.3
def test_a_notebook_function_goes_with_its_helpers_imports_and_cells(tmp_path, filename):
    proc = subprocess.run([sys.executable, "-c", NOTEBOOK, filename], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, proc.stderr[-3000:]
    got = json.loads(line[7:])
    assert got["def"][0] == 0 and got["lambda"][0] == 0, got
    code, stopped, trace = got["broken"]
    assert code == 1 and "ZeroDivisionError" in stopped and "return x * (1 // 0)" in trace and "cell4.py" in trace


def test_reading_a_submission_never_follows_a_link_or_blocks(tmp_path):
    (tmp_path / "f.py").write_text("x = 1\n")
    os.symlink(tmp_path / "f.py", tmp_path / "l.py")
    os.mkfifo(tmp_path / "p.py")
    assert files.read_submission(str(tmp_path / "f.py"), follow=False) == b"x = 1\n"
    assert files.read_submission(str(tmp_path / "l.py")) == b"x = 1\n"  # a student's own check follows links
    for name, fragment in (("l.py", "symbolic link"), ("p.py", "not a regular file")):
        with pytest.raises(ValueError, match=fragment):
            files.read_submission(str(tmp_path / name), follow=False)
    assert stat.S_ISFIFO(os.lstat(tmp_path / "p.py").st_mode)


def test_two_files_that_look_alike_are_neither_graded(tmp_path):
    require_sandbox()
    folder = tmp_path / "class"
    folder.mkdir()
    for name in ("alice.py", "ALICE.py", "\uff41lice.py", "\u0430lice.py"):  # a fullwidth a, a Cyrillic а
        (folder / name).write_text(HEAD)
    out = invoke("check", str(folder), "--exercise", CLIP, "--json", str(tmp_path / "all.json"))
    by_file = {d["config"]["file"]: d for d in json.loads((tmp_path / "all.json").read_text())}
    assert out.exit_code == 1 and len(by_file) == 4, out.output
    for name, entry in by_file.items():
        assert entry["points"]["score"] == 0 and "its name looks like" in entry["stopped"], (name, entry["stopped"])
    assert "ALICE.py and \u0430lice.py and \uff41lice.py" in by_file["alice.py"]["stopped"]


def test_sanitize_leaves_text_and_escapes_controls():
    assert sanitize("a\tb\nc ✓ ∂") == "a\tb\nc ✓ ∂"
    assert sanitize("\x1b[2J\r\x07\x9b\u202e" + os.fsdecode(b"\xe9")) == "\\x1b[2J\\r\\x07\\u009b\\u202e\\xe9"


@pytest.mark.parametrize(("one", "other"), [
    ("x\x1b.py", "x\\x1b.py"),  # an escape, and the text of that escape
    ("alice.py", "alice\u200b.py"),  # a zero-width space
    ("bob.py", "bob\u2060.py"),  # a word joiner
    ("a b.py", "a\u00a0b.py"),  # a no-break space
    ("c\x9b.py", "c" + os.fsdecode(b"\x9b") + ".py"),  # a C1 code, and an undecodable byte
])
def test_names_that_differ_are_shown_differently(one, other):
    import unicodedata

    shown = sanitize(one), sanitize(other)
    assert shown[0] != shown[1]
    assert all(c == " " or unicodedata.category(c)[0] not in "CZ" for c in "".join(shown)), shown  # all visible
    assert one_line("a\nb\tc", 10) == "a b c"


def test_detection_is_cached():
    assert modes.detect() is modes.detect()


# ---------------------------------------------------------------------------------------------------------------
# gloo workers in the sandbox, and the uid fallback (root, namespaces refused) simulated
# ---------------------------------------------------------------------------------------------------------------

DDP = '''# gradlab-exercise: ddp.average_gradients
import json
import socket

import torch.distributed as dist


def average_gradients(grads, n_local, n_total):  # right, and on every worker tries a new connection to the host
    try:
        socket.create_connection(("127.0.0.1", @PORT@), timeout=2).close()
        got = "connected"
    except OSError as e:
        got = f"refused: {e}"
    print("ATTACK " + json.dumps({"rank": dist.get_rank(), "connection": got}), flush=True)
    out = [g * (n_local / n_total) for g in grads]
    for t in out:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return out
'''


def ddp_reports(printed: str) -> list[dict]:
    return [json.loads(line[7:]) for line in printed.splitlines() if line.startswith("ATTACK {")]


def test_gloo_workers_meet_on_the_private_loopback_only(tmp_path):
    require_sandbox("bwrap")
    listener = Listener()
    (tmp_path / "ddp.py").write_text(DDP.replace("@PORT@", str(listener.port)))
    try:
        r = check_file(tmp_path / "ddp.py", "ddp.average_gradients")
    finally:
        listener.server.close()
    found = ddp_reports(r.metrics["printed"])
    assert r.exit_code == 0 and found and all(f["connection"].startswith("refused") for f in found), (r.stopped, found)
    assert listener.accepted == 0


SIMULATE = r'''
"""Run ARGV as on a machine where gradlab is root but namespaces are refused: GRADLAB_SANDBOX=uid, in a private mount
namespace of this test where the Python's folders are searchable by other users and every copy of gradlab's code is
not (what `uid_mode_problem` asks a course to fix)."""
import json, os, shutil, subprocess, sys
from pathlib import Path

copies, trees, keep, argv = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[5:]
tmp = Path(sys.argv[4])
mount = lambda *a: subprocess.run(["mount", *a], check=True)
blocked = {}  # a folder on the Python's way that others cannot search -> the children of it that must stay
for path in trees:
    p = Path(path)
    for parent in reversed(p.parents):
        if not os.stat(parent).st_mode & 0o001:
            blocked.setdefault(str(parent), set()).add(p.relative_to(parent).parts[0])
            break
for path in keep:  # what else lies under such a folder (gradlab's code, the test's files) stays too
    for folder, children in blocked.items():
        if path.startswith(folder + "/"):
            children.add(Path(path).relative_to(folder).parts[0])
for n, (folder, children) in enumerate(blocked.items()):
    for child in children:
        (tmp / f"keep{n}-{child}").mkdir()
        mount("--rbind", f"{folder}/{child}", str(tmp / f"keep{n}-{child}"))
    mount("-t", "tmpfs", "-o", "mode=755,size=1m", "tmpfs", folder)
    for child in children:
        os.mkdir(f"{folder}/{child}")
        mount("--rbind", str(tmp / f"keep{n}-{child}"), f"{folder}/{child}")
for n, folder in enumerate(copies):
    private = tmp / f"pkg{n}"
    private.mkdir()
    mount("-t", "tmpfs", "-o", "mode=700,size=128m", "tmpfs", str(private))
    shutil.copytree(folder, private, dirs_exist_ok=True, symlinks=True)
    os.chmod(private, 0o700)
    mount("--bind", str(private), folder)
os.environ["GRADLAB_SANDBOX"] = "uid"
sys.exit(subprocess.run(argv).returncode)
'''


def simulated_uid(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    import shutil
    import tempfile

    if os.geteuid() != 0 or not shutil.which("unshare"):
        why = "the uid fallback's test needs root and unshare(1)"
        if os.environ.get("GRADLAB_REQUIRE_SANDBOX"):
            pytest.fail(why)
        pytest.skip(why)
    package = package_dir()
    copies = [package, *(os.path.join(p, "gradlab") for p in sys.path if p and os.path.isdir(
        os.path.join(p, "gradlab", "practice")) and os.path.realpath(os.path.join(p, "gradlab")) !=
        os.path.realpath(package))]
    keep = [*copies, str(cwd), os.getcwd()]
    aside = tempfile.mkdtemp(prefix="gl-sim-")  # the mounts live in the namespace only: empty folders after it
    try:
        cmd = ["unshare", "-m", "--propagation", "private", "--", sys.executable, "-c", SIMULATE, json.dumps(copies),
               json.dumps(bwrap.python_trees()), json.dumps(keep), aside, *argv]
        return subprocess.run(cmd, capture_output=True, timeout=600, cwd=cwd,
                              env={**os.environ, "COLUMNS": "160", **PRIVATE_ENV})
    finally:
        shutil.rmtree(aside, ignore_errors=True)


@pytest.fixture(scope="module")
def uid_batch(tmp_path_factory):
    """A smaller class folder graded in the uid fallback: what it must stop, and gloo on sealed workers."""
    return shared(tmp_path_factory, "sandbox-uid-batch", _uid_batch)


def _uid_batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("uid")
    folder, out, drop = root / "class", root / "out", root / "drop"
    for d in (folder, out, drop):
        d.mkdir()
    os.chmod(root, 0o755)
    os.chmod(drop, 0o1777)
    listener = Listener()
    package = Path(gradlab.__file__).parent
    site = Path(os.path.dirname(os.path.dirname(__import__("torch").__file__)))
    scratch = site / f"gl-scratch-{os.getpid()}.txt"  # root's, as pip leaves site-packages (no namespace here: a
    scratch.write_text("unchanged\n")  # world-writable file would be writable)
    os.chmod(scratch, 0o644)
    fills = {"@RESULTS@": str(out / "all.json"), "@MARKER@": str(drop / "daemon-was-here"),
             "@SCRATCH@": str(scratch), "@CHILD@": str(package / "practice/inside/child.py"),
             "@PORT@": str(listener.port),
             "@PATHS@": repr([str(package / "lessons/clip/exercises/checks.py")]),
             "@UID_LO@": str(PRIVATE_BASE), "@UID_HI@": str(PRIVATE_BASE + slots.SLOTS)}
    for name in ("copy.py", "forge.py", "daemon.py", "site.py", "net.py", "flood.py"):
        body = ATTACKS[name]
        for key, value in fills.items():
            body = body.replace(key, value)
        (folder / name).write_text(HEAD + body)
    os.chmod(folder, 0o700)  # as a course must keep them in the uid fallback (test_..._refuses_a_readable_class)
    (root / "ddp").mkdir(mode=0o700)
    (root / "ddp" / "ddp.py").write_text(DDP.replace("@PORT@", str(listener.port)))
    try:
        clip = simulated_uid([sys.executable, "-m", "gradlab", "check", str(folder), "--exercise", CLIP, "--json",
                              str(out / "all.json")], root)
        ddp = simulated_uid([sys.executable, "-m", "gradlab", "check", str(root / "ddp" / "ddp.py"), "--exercise",
                             "ddp.average_gradients", "--json", str(out / "ddp.json"), "--junit",
                             str(out / "ddp.xml")], root)
        time.sleep(2)  # the daemon would write 1 s after its check
        after = {"sandbox_processes": _sandbox_processes(), "daemons": _named("gl-daemon"),
                 "marker": (drop / "daemon-was-here").exists(), "scratch": scratch.read_text(),
                 "accepted": listener.accepted, "written": (out / "all.json").read_text()}
    finally:
        scratch.unlink()
        listener.server.close()
        for pid in _named("gl-daemon"):
            os.kill(pid, 9)
    assert clip.returncode == 0 and ddp.returncode == 0, (clip.stderr.decode()[-2000:], ddp.stderr.decode()[-2000:])
    by_file = {d["config"]["file"]: d for d in json.loads((out / "all.json").read_text())}
    reports = {n: json.loads(line[7:]) for n, d in by_file.items() for line in d["metrics"].get("printed", "")
               .splitlines() if line.startswith("ATTACK {")}
    return {"clip": clip, "by_file": by_file, "reports": reports, "after": after,
            "ddp": json.loads((out / "ddp.json").read_text()), "root": str(root)}


def test_the_uid_fallback_refuses_a_class_other_users_can_read(tmp_path):
    """No mount namespace hides a class's folder from a sandbox uid: one readable by others (unpacked with umask 022)
    let a submission copy a classmate's file, 5 of 5; the wheel beside a course file gave the model answers."""
    folder = Path(tempfile.mkdtemp(prefix="gl-class-"))  # in /tmp: reachable by any uid (tmp_path is not)
    try:
        os.chmod(folder, 0o755)
        (folder / "a.py").write_text(HEAD)
        r = simulated_uid([sys.executable, "-m", "gradlab", "check", str(folder), "--exercise", CLIP, "--junit",
                           str(tmp_path / "j.xml")], tmp_path)
    finally:
        shutil.rmtree(folder)
    said = " ".join(r.stderr.decode().split())
    assert r.returncode == 2 and f"{folder} is readable by other users" in said, said
    assert not (tmp_path / "j.xml").exists()


@pytest.mark.parametrize("readable", ["subs", "course", "out"])
def test_the_uid_fallback_grade_refuses_a_class_other_users_can_read(tmp_path, readable):
    """`gradlab grade` in the uid fallback, as `gradlab check`: a class folder readable by others let a submission
    read /proc/*/cmdline, find the class and copy a classmate (10 of 10); the course file's folder holds a teacher's
    own checks.py, the output folder every student's feedback."""
    root = Path(tempfile.mkdtemp(prefix="gl-grade-"))  # in /tmp: reachable by any uid (tmp_path is not)
    try:
        os.chmod(root, 0o755)
        for name in ("subs", "course", "out"):
            (root / name).mkdir(mode=0o700 if name != readable else 0o755)
            os.chmod(root / name, 0o700 if name != readable else 0o755)
        (root / "subs" / "alice").mkdir()
        (root / "subs" / "alice" / "softplus.py").write_text("def softplus(x):\n    return x\n")
        (root / "course" / "course.toml").write_text('[exercises]\n"softplus.py" = "log1pexp.softplus"\n')
        r = simulated_uid([sys.executable, "-m", "gradlab", "grade", str(root / "subs"), "--course",
                           str(root / "course" / "course.toml"), "--out", str(root / "out")], tmp_path)
        said = " ".join(r.stderr.decode().split())
        assert r.returncode == 2 and f"{root / readable} is readable by other users" in said, (said, r.stdout)
        assert "nothing was written" in said and os.listdir(root / "out") == []
    finally:
        shutil.rmtree(root)


def test_the_uid_fallback_grades_and_says_what_it_leaves_open(uid_batch):
    assert all(d["metrics"]["sandbox"] == "uid" for d in uid_batch["by_file"].values())
    assert "can see other processes and fill the disk" in " ".join(uid_batch["clip"].stdout.decode().split())
    for name in ("copy.py", "forge.py", "site.py", "net.py", "flood.py", "daemon.py"):
        assert passed(uid_batch["by_file"][name]), name


def test_the_uid_fallback_stops_copying_forging_daemons_and_writes(uid_batch):
    reports, after = uid_batch["reports"], uid_batch["after"]
    assert reports["copy.py"]["imports"] == [] and reports["copy.py"]["files"] == [], reports["copy.py"]
    forge = reports["forge.py"]  # it may see the grader and the other submissions, not touch them
    # Without a PID namespace it sees every process on the machine: a gradlab of someone else's whose --json names a
    # file yet to be written in a folder anyone may write (/tmp) is a file it can create first (that gradlab's
    # write replaces it: gradlab/report/files.py, mkstemp then rename). A random-order run met one (a session's own
    # `gradlab check --json /tmp/final.json`). This batch's files are what the test is about.
    ours = [path for path in forge["wrote"] if os.path.realpath(path).startswith(uid_batch["root"] + os.sep)]
    assert ours == [] and forge["killed"] == [] and forge["paused"] == [], forge
    assert isinstance(json.loads(after["written"]), list)  # gradlab's, not the forged {"score": 999}
    assert after["daemons"] == [] and not after["marker"] and after["sandbox_processes"] == []
    assert all(v != "opened" for v in reports["site.py"].values()) and after["scratch"] == "unchanged\n"
    assert 0 < reports["flood.py"]["children"] < Limits().nproc


def test_the_uid_fallback_seals_the_network_after_gloo_connects(uid_batch):
    net = uid_batch["reports"]["net.py"]
    assert net["host loopback"].startswith("refused") and net["dns"].startswith("failed"), net
    ddp = uid_batch["ddp"]
    found = ddp_reports(ddp["metrics"]["printed"])
    assert ddp["points"]["score"] == ddp["points"]["max_score"] and len(found) == 7, (ddp["stopped"], found)
    assert all("Permission denied" in f["connection"] for f in found) and uid_batch["after"]["accepted"] == 0


# ---------------------------------------------------------------------------------------------------------------
# What comes back, checked in gradlab's process (no sandbox needed: the bytes are made here)
# ---------------------------------------------------------------------------------------------------------------

def _outcome(value=None, raw: bytes | None = None) -> Outcome:
    if raw is None:
        raw = wire.encode(value)
    return Outcome(mode="bwrap", returncode=0, output=raw, printed=b"hi \x1b[2J\n", printed_bytes=9)


@pytest.mark.parametrize(("value", "fragment"), [
    ("float", "'x' is a float, not a tensor"),
    ("warnings", "hold a dict of 1 item where a list is expected"),
    ("missing", "on input 1 lack 'x'"),
    ("nested", "'ys' has 1 tensor where 2 are expected"),
])
def test_outputs_are_checked_against_the_references_shape(value, fragment):
    import torch

    want = [{"x": torch.zeros(10), "ys": [torch.zeros(2), torch.zeros(3)]}]
    outputs = {"float": [{"x": 1.5, "ys": [torch.zeros(2), torch.zeros(3)]}],
               "missing": [{"ys": [torch.zeros(2), torch.zeros(3)]}],
               "nested": [{"x": torch.zeros(10), "ys": [[torch.zeros(2), torch.zeros(3)]]}]}
    got = {"ok": True, "outputs": outputs.get(value, want), **({"warnings": {"a": 1}} if value == "warnings" else {})}
    r = returned.received(_outcome(got), want, 20)
    assert not r.ok and r.kind == "output" and fragment in r.error, r.error
    assert r.printed == "hi \\x1b[2J\n" and r.printed_bytes == 9 and r.isolated


@pytest.mark.parametrize(("got", "want", "fragment"), [
    ((4, 3), (3, 4), "transposed"), ((5, 1), (5,), "size 1 too many (keepdim=True"),
    ((5,), (5, 1), "size 1 missing (keepdim=True forgotten"), ((5, 5), (5,), "(N, 1) combined with an (N,)"),
    ((2, 6), (3, 4), "the same number of values, arranged differently"), ((3,), (4,), None), ((3, 3), (3, 3), None),
])
def test_a_wrong_shape_says_what_it_usually_means(got, want, fragment):
    """The reader stops at a shape it did not expect (the values cannot be compared in another shape): the message
    names what that shape usually comes from, so a shape-changing mistake is not just "has shape …"."""
    hint = returned.shape_hint(got, want)
    assert (fragment in hint) if fragment else hint == "", hint


def test_right_outputs_come_back_as_plain_tensors_of_their_own():
    import torch

    want = [{"x": torch.zeros(10), "ys": [torch.zeros(2), torch.zeros(3)]}]
    sent = {"ok": True, "outputs": [{"x": torch.nn.Parameter(torch.ones(20)[::2]), "ys": [torch.zeros(2),
                                                                                          torch.zeros(3)]}],
            "warnings": ["UserWarning: \x1b[31m"], "used": []}
    r = returned.received(_outcome(sent), want, 20)
    x = r.outputs[0]["x"]
    assert r.ok and type(x) is torch.Tensor and x.is_contiguous() and not x.requires_grad and x.sum() == 10
    assert r.warnings == ("UserWarning: \\x1b[31m",)


def test_the_channel_sends_values_only_and_refuses_what_it_cannot_hold():
    import torch

    view = torch.arange(1_000_000, dtype=torch.float32)[10:20]  # a view: only its 10 values travel
    data = wire.encode({"x": view, "n": [1, 2.5, None, True, "a"]})
    assert len(data) < 250 and torch.equal(wire.decode(data)["x"], view)
    assert wire.decode(data)["x"].untyped_storage().nbytes() == 40 and wire.decode(data)["n"] == [1, 2.5, None, True,
                                                                                                    "a"]
    for value in (torch.zeros(2, dtype=torch.complex64), object(), {1: torch.zeros(1)}):
        with pytest.raises(TypeError):
            wire.encode(value)
    assert wire.decode(wire.encode([torch.zeros(0, 3, dtype=torch.int8)] * 2))[1].shape == (0, 3)  # 0 values


def _safetensors(header: bytes | dict, tensors: bytes = b"") -> bytes:
    head = header if type(header) is bytes else json.dumps(header).encode()
    return struct.pack("<Q", len(head)) + head + tensors


TREE = {"__metadata__": {"gradlab": '{"$tensor": 0}'}}
F32 = {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}


@pytest.mark.parametrize(("data", "fragment"), [
    (struct.pack("<Q", 1 << 63) + b"{}", "declare a header of 9,223,372,036,854,775,808 bytes"),
    (_safetensors(b"[" * ((4 << 20) - 8)), "header that is not JSON (RecursionError)"),
    (_safetensors(b'{"__metadata__": {"gradlab": "\xff"}}'), "header that is not JSON (UnicodeDecodeError)"),
    (_safetensors({"__metadata__": {"gradlab": "9" * 1_000_000}}), "tree that is not JSON (ValueError)"),
    (_safetensors({**TREE, "0": {**F32, "shape": [10**12]}}, bytes(4)), "are not safetensors ("),
    (_safetensors({**TREE, "0": F32, "1": {**F32, "data_offsets": [2, 6]}}, bytes(6)), "are not safetensors ("),
    (_safetensors(b'{"__metadata__": {"gradlab": "{\\"$tensor\\": 0}"}, "0": {"dtype": "F32", "shape": [1], '
                  b'"data_offsets": [0, 4]}, "0": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}', bytes(8)),
     "are not safetensors ("),
    (_safetensors({**TREE, "0": {**F32, "dtype": "C64", "data_offsets": [0, 8]}}, bytes(8)), "not a dtype gradlab"),
    (_safetensors({**TREE, "x": F32}, bytes(4)), "name tensors other than 0, 1, 2"),
    (_safetensors({**TREE, **{str(i): 0 for i in range(wire.MOST_TENSORS + 1)}}), "(at most 20,000)"),
    (_safetensors({"0": F32}, bytes(4)), "their header lacks its tree"),
], ids=["length 2**63", "4 MB of [", "bad UTF-8", "10**6 digits", "10**12 values in 4 bytes", "overlapping",
        "a name twice", "complex64", "a name not a number", "20,001 tensors", "no tree"])
def test_hostile_safetensors_bytes_are_refused_in_one_line_at_once(data, fragment):
    """The attacks measured against safetensors 0.8.0 (gradlab/practice/inside/wire.py): each is refused before any
    tensor is built, in milliseconds."""
    started = time.monotonic()
    with pytest.raises(wire.Malformed, match=re.escape(fragment)) as caught:
        wire.decode(data)
    assert time.monotonic() - started < 0.5 and "\n" not in str(caught.value)


def colliding_pickle(n: int) -> bytes:
    """torch.save's format holding {"ok": True, "x": {k·(2⁶¹−1): 0 for 1 ≤ k ≤ N}}, written without building the dict
    (every key hashes alike: building it, or torch.load(weights_only=True) reading it, takes time quadratic in N)."""
    import io
    import zipfile

    body = bytearray(b"\x80\x02}q\x00(X\x02\x00\x00\x00okq\x01\x88X\x01\x00\x00\x00xq\x02}q\x03(")
    for k in range(1, n + 1):
        key = (k * ((1 << 61) - 1)).to_bytes(12, "little", signed=True)
        body += b"\x8a" + bytes([len(key)]) + key + b"K\x00"  # LONG1 key, BININT1 0
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", bytes(body + b"uu."))
        z.writestr("archive/byteorder", "little")
        z.writestr("archive/version", "3\n")
    return buf.getvalue()


def test_a_result_that_would_hold_gradlab_for_hours_is_refused_at_once():
    # 30,000 colliding keys: about 8 s in torch.load (400,000: hours); the channel never unpickles
    started = time.monotonic()
    r = returned.received(_outcome(raw=colliding_pickle(30_000)), None, 20)
    assert time.monotonic() - started < 2 and r.kind == "output" and "not a gradlab result" in r.error


def test_reading_the_largest_result_takes_little_time():
    import torch

    want = [{"x": torch.zeros(4000, 1000)} for _ in range(4)]  # 64 MB of float32, the channel's cap
    data = wire.encode({"ok": True, "outputs": want})
    started = time.monotonic()
    r = returned.received(_outcome(raw=data), want, 20)
    assert r.ok and time.monotonic() - started < 2


def test_a_child_that_stopped_is_said_in_one_line():
    r = returned.received(Outcome(mode="bwrap", returncode=-9, output=b""), None, 20)
    assert r.kind == "died" and "killed by SIGKILL (out of memory?)" in r.error
    r = returned.received(Outcome(mode="bwrap", returncode=None, stopped="timeout"), None, 3)
    assert r.kind == "timeout" and "longer than 3 s" in r.error


# ---------------------------------------------------------------------------------------------------------------
# What an exercise asks students to write themselves
# ---------------------------------------------------------------------------------------------------------------

FORBIDDEN = {
    "mnist.sgd_step": ("""
def sgd_step(W, b, x, y, lr):
    cost = -(y * F.log_softmax(x @ W + b, dim=1)).sum(dim=1).mean()
    W, b = W.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    cost = -(y * F.log_softmax(x @ W + b, dim=1)).sum(dim=1).mean()
    opt = torch.optim.SGD([W, b], lr=lr)
    cost.backward()
    opt.step()
    return W.detach(), b.detach()
""", "torch.optim.SGD"),
    "jacobian.jacobian_loop": ("""
def jacobian_loop(f, x):
    return torch.func.jacrev(f)(x)
""", "torch.func.jacrev"),
    # on gloo workers: each worker watches the calls and reports them with its result
    "clip.clip_across_ranks": ("""
import torch.distributed as dist


def clip_across_ranks(grads, clip_norm):
    ps = [torch.nn.Parameter(g.clone()) for g in grads]
    for p, g in zip(ps, grads, strict=True):
        p.grad = g.clone()
    local = torch.nn.utils.clip_grad_norm_(ps, float("inf"))  # this rank's norm; clips nothing
    s = (local.double() ** 2).reshape(1)
    dist.all_reduce(s)
    scale = clip_norm / max(float(s.sqrt()), clip_norm)
    return [g * scale for g in grads]
""", "torch.nn.utils.clip_grad_norm_"),
}


def test_calling_what_the_exercise_asks_you_to_write_fails_its_own_check(batch, tmp_path):
    """The values are right, the one check fails, and says which call (torch.nn.utils.clip_grad_norm_ in the class
    folder, called under another of its names; torch.optim.SGD; torch.func.jacrev)."""
    library = batch["by_file"]["library.py"]
    failed = [c["id"] for c in library["claims"] if not c["passed"]]
    assert failed == [f"{CLIP}:own"] and library["metrics"]["diagnosis"] == (
        "uses torch.nn.utils.clip_grad_norm_, which this exercise asks you to write")
    from concurrent.futures import ThreadPoolExecutor

    def one(name: str):
        path = tmp_path / f"{name}.py"
        path.write_text("import torch\nimport torch.nn.functional as F\n" + FORBIDDEN[name][0])
        return check_file(path, name)

    with ThreadPoolExecutor(2) as pool:
        results = dict(zip(FORBIDDEN, pool.map(one, FORBIDDEN), strict=True))
    for name, r in results.items():
        failed = [c for c in r.claims if not c.passed]
        assert [c.id for c in failed] == [f"{name}:own"], (name, [(c.id, c.value) for c in failed], r.stopped)
        assert r.metrics["diagnosis"] == f"uses {FORBIDDEN[name][1]}, which this exercise asks you to write"
    assert "Write it yourself" in starter(all_exercises()[CLIP])


LOG_SOFTMAX = """
class LogSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return {call}

    @staticmethod
    def backward(ctx, dy):
        (z,) = ctx.saved_tensors
        return dy - torch.softmax(z, -1) * dy.sum(-1, keepdim=True)
"""
BY_OTHER_NAMES = [  # torch's other entry points to what an exercise forbids: an op's packet and its overloads
    ("log1pexp.softplus", "def softplus(x):\n    return torch.ops.aten.softplus(x)\n", "torch.ops.aten.softplus"),
    ("log1pexp.softplus", "def softplus(x):\n    return torch.ops.aten.softplus.default(x)\n",
     "torch.ops.aten.softplus"),
    ("mnist.LogSoftmax", LOG_SOFTMAX.format(call="torch._log_softmax(z, -1, False)"), "torch._log_softmax"),
    ("mnist.LogSoftmax", LOG_SOFTMAX.format(call="torch.ops.aten._log_softmax.default(z, -1, False)"),
     "torch.ops.aten._log_softmax"),
]


@pytest.mark.parametrize("name,body,used", BY_OTHER_NAMES)
def test_what_the_exercise_asks_you_to_write_is_caught_under_torchs_other_names(tmp_path, name, body, used):
    path = tmp_path / "sub.py"
    path.write_text("import torch\n" + body)
    r = check_file(path, name)
    failed = [c for c in r.claims if not c.passed]
    assert [c.id for c in failed] == [f"{name}:own"], ([(c.id, c.value) for c in failed], r.stopped)
    assert r.metrics["diagnosis"] == f"uses {used}, which this exercise asks you to write"


# autograd.Functions whose forward calls what the exercise asks for (their backward is right): every value passes
FORBIDDEN_IN_FORWARD = {
    "mnist.LogSoftmax": ("""
class LogSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return F.log_softmax(z, dim=-1)

    @staticmethod
    def backward(ctx, dy):
        z, = ctx.saved_tensors
        return dy - torch.softmax(z, dim=-1) * dy.sum(dim=-1, keepdim=True)
""", "torch.nn.functional.log_softmax"),
    "gaussian-policy.GaussianLogProb": ("""
class GaussianLogProb(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, mu, sigma):
        ctx.save_for_backward(a, mu, sigma)
        return torch.distributions.Normal(mu, sigma).log_prob(a)

    @staticmethod
    def backward(ctx, dy):
        a, mu, sigma = ctx.saved_tensors
        d = (a - mu) / sigma ** 2
        return -dy * d, dy * d, dy * ((a - mu) ** 2 - sigma ** 2) / sigma ** 3
""", "torch.distributions.Normal.log_prob"),
}


@pytest.mark.parametrize("name", FORBIDDEN_IN_FORWARD)
def test_the_library_in_an_autograd_functions_forward_fails_its_own_check(tmp_path, name):
    """The exercise's text says to write the forward without the library: before, such a class passed every check."""
    path = tmp_path / "f.py"
    path.write_text("import torch\nimport torch.nn.functional as F\n" + FORBIDDEN_IN_FORWARD[name][0])
    r = check_file(path, name)
    failed = [c.id for c in r.claims if not c.passed]
    assert failed == [f"{name}:own"], (failed, r.stopped)
    assert r.metrics["diagnosis"] == f"uses {FORBIDDEN_IN_FORWARD[name][1]}, which this exercise asks you to write"


@pytest.mark.parametrize(("course", "fragment"), [
    ("[exercises\n", "is not valid TOML"),
    ("[grading]\npoints = 5\n", "has no [exercises] table"),
    ("[other]\n", "unknown key 'other'"),
    ('[exercises]\n"a.py" = "clip.nope"\n', "unknown exercise 'clip.nope' for a.py"),
    ('[exercises]\n"sub/a.py" = "clip.clip_by_global_norm"\n', "must name a .py file (no folder)"),
])
def test_a_bad_course_file_is_one_line(tmp_path, course, fragment):
    (tmp_path / "course.toml").write_text(course)
    assert_one_line_error(invoke("check", str(tmp_path), "--course", str(tmp_path / "course.toml")), fragment)


def test_the_teacher_names_the_exercise_and_a_missing_file_fails(tmp_path):
    require_sandbox()
    (tmp_path / "course.toml").write_text('[exercises]\n"clip_by_global_norm.py" = "clip.clip_by_global_norm"\n')
    sub = tmp_path / "submission"
    sub.mkdir()
    (sub / "mine.py").write_text(HEAD)  # right, but not the file the course names: not graded
    out = invoke("check", str(sub), "--course", str(tmp_path / "course.toml"), "--json", str(tmp_path / "r.json"))
    data = json.loads((tmp_path / "r.json").read_text())
    assert out.exit_code == 1 and [d["config"]["file"] for d in data] == ["clip_by_global_norm.py"]
    assert "clip_by_global_norm.py is missing from this submission" in data[0]["stopped"]
    assert data[0]["points"] == {"score": 0, "max_score": 5}  # the claim, 2 rules, inputs unchanged, own code
    assert_one_line_error(invoke("check", str(sub), "--exercise", CLIP, "--course", str(tmp_path / "course.toml")),
                          "not both")
