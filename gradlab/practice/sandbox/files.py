"""Which of gradlab's files a sandbox gets, and a submission's file as gradlab reads it.

The sandbox's process runs gradlab/practice/inside/child.py (the room of gradlab/practice/ that is bound into the
sandbox, and nothing else of the grader's: ALWAYS) with the exercise's harness module and what the harness imports of
gradlab (gradlab.kit.harness and the seccomp filter it installs: SHARED), found by reading its imports; never the
references, the known mistakes or the model answers."""

from __future__ import annotations

import ast
import os
import stat
from pathlib import Path

from gradlab.practice.sandbox.parsing import parse

MAX_SOURCE = 1 << 20  # bytes of a submission's file
GRADLAB = Path(__file__).resolve().parents[2]  # the package's folder
# What a harness may import of gradlab, besides itself: the shared harness module, the names it shares with gradlab's
# side (gradlab.kit.shared: the rule outputs' keys, the loopback's port and interface, which gradlab.kit.distributed
# uses too) and the seccomp filter its seal() installs. Nothing here may hold a reference, a known mistake or a model
# answer: tests/test_sandbox.py checks every harness's imports against it.
SHARED = ("gradlab.kit.harness", "gradlab.kit.shared", "gradlab.kit.seccomp")
ALWAYS = ("gradlab.practice.inside.child", "gradlab.kit.harness", "gradlab.kit.shared",
          "gradlab.practice.inside.stage1",
          "gradlab.kit.seccomp", "gradlab.practice.inside.wire", "gradlab.practice.inside.backward",
          "gradlab.practice.inside.trace")
CHILD = "import sys; sys.path.insert(0, sys.argv[1]); from gradlab.practice.inside.child import main; main()"


def module_file(name: str) -> Path | None:
    """The file of gradlab module NAME (a module or a package's __init__), None when there is none."""
    parts = name.split(".")
    if parts[0] != "gradlab":
        return None
    base = GRADLAB.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def gradlab_imports(name: str) -> set[str]:
    """Every gradlab module NAME imports, at any depth and anywhere in its code (inside functions too), read from the
    source: what the sandbox must provide for it."""
    seen, todo = set(), [name]
    while todo:
        current = todo.pop()
        path = module_file(current)
        if current in seen or path is None:
            continue
        seen.add(current)
        package = current if path.name == "__init__.py" else current.rpartition(".")[0]
        for node in ast.walk(parse(path.read_bytes(), str(path))):
            found = []
            if isinstance(node, ast.Import):
                found = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base
                                                                                                        else []))
                found = [f"{base}.{a.name}" if module_file(f"{base}.{a.name}") else base for a in node.names]
            todo += [f for f in found if f.split(".")[0] == "gradlab" and module_file(f) is not None]
    return seen


def sandbox_files(harness_module: str) -> dict[str, str]:
    """{path under the sandbox's package folder: the file}: the child's files and the harness with what it imports
    of gradlab. A harness that imports anything else of gradlab is refused (a developer's error, not a student's)."""
    modules = gradlab_imports(harness_module)
    extra = sorted(m for m in modules - {harness_module} if m not in SHARED and not m.endswith(".__init__"))
    if extra:
        raise RuntimeError(f"{harness_module} imports {', '.join(extra)}: a harness may import only torch and "
                           f"{', '.join(SHARED)} of gradlab (gradlab/kit/harness.py)")
    files = {}
    for name in {*modules, *ALWAYS}:
        path = module_file(name)
        files[str(path.relative_to(GRADLAB.parent)).replace("\\", "/")] = str(path)
    return files


def read_submission(path: str, *, follow: bool = True) -> bytes:
    """A submission's bytes, as gradlab (often root) must read them: a regular file only (not a FIFO that would block,
    not a device), at most MAX_SOURCE bytes; without FOLLOW never through a symbolic link (a link in a class's folder
    could name a file only root may read). Raises OSError or ValueError with what is wrong."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        if os.path.islink(path):
            raise ValueError("it is a symbolic link: gradlab reads only regular files in a folder")
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("it is not a regular file")
        if st.st_size > MAX_SOURCE:
            raise ValueError(f"it is larger than {MAX_SOURCE >> 20} MB ({st.st_size:,} bytes)")
        data = b""
        while len(data) <= MAX_SOURCE and (chunk := os.read(fd, 1 << 20)):
            data += chunk
        if len(data) > MAX_SOURCE:
            raise ValueError(f"it is larger than {MAX_SOURCE >> 20} MB")
        return data
    finally:
        os.close(fd)
