"""Regenerate the example outputs in README.md by running the commands they show (`make docs`).

A generated block in README.md looks like this (the command is the one a reader would type):

    <!-- run: gradlab log1pexp --dtype float32 -->
    ```
    ...whatever the command printed...
    ```
    <!-- /run -->

Each command runs in a fresh process at a fixed width of 110 columns, without colour, and its output replaces the
block. Nothing in those blocks is typed by hand. `python scripts/readme.py --check` lists the blocks and exits 1
when a command does not parse (unknown lesson or option), without running anything; `--only TEXT` re-runs only
the blocks whose command contains TEXT and keeps the others as they are.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCK = re.compile(r"(<!-- run: (?P<cmd>.+?) -->\n)```\n(?P<out>.*?)```\n(<!-- /run -->)", re.S)
WIDTH = "110"


def blocks(text: str) -> list[re.Match]:
    return list(BLOCK.finditer(text))


def command_args(cmd: str) -> list[str]:
    args = shlex.split(cmd)
    if args[0] != "gradlab":
        raise SystemExit(f"readme: a run block must start with 'gradlab', got {cmd!r}")
    return args[1:]


def run(cmd: str) -> str:
    env = {**os.environ, "COLUMNS": WIDTH, "NO_COLOR": "1", "TERM": "dumb"}
    proc = subprocess.run([sys.executable, "-m", "gradlab", *command_args(cmd)], capture_output=True, text=True,
                          env=env)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"readme: `{cmd}` exited {proc.returncode}: {proc.stderr.strip()}")
    return "\n".join(line.rstrip() for line in proc.stdout.splitlines()) + "\n"


def main() -> None:
    text = README.read_text(encoding="utf-8")
    if "--check" in sys.argv[1:]:
        from gradlab.cli import cli

        for m in blocks(text):
            name, *args = command_args(m["cmd"])
            cli.commands[name].make_context(name, args)  # raises on an unknown lesson, option or value
            print(f"ok: {m['cmd']}")
        return
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv[1:-1] else None
    out, last = [], 0
    for m in blocks(text):
        if only is not None and only not in m["cmd"]:
            out += [text[last:m.end()]]
            last = m.end()
            continue
        start = time.perf_counter()
        printed = run(m["cmd"])
        print(f"{time.perf_counter() - start:6.1f} s  {m['cmd']}", flush=True)
        out += [text[last:m.start()], m.group(1), "```\n", printed, "```\n", m.group(4)]
        last = m.end()
    out.append(text[last:])
    README.write_text("".join(out), encoding="utf-8")
    print(f"rewrote {sum(only is None or only in m['cmd'] for m in blocks(text))} blocks in {README}")


if __name__ == "__main__":
    main()
