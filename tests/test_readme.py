"""README.md's example outputs are generated (`make docs`, scripts/readme.py); these tests fail when they drift.

Every `<!-- run: COMMAND -->` block must hold a command the CLI accepts, and the output pasted under it. The
quick commands are run again here and compared word for word, with every number masked (timings and the last
digits of float32 sums differ between machines) and table borders and line wrapping ignored: a renamed column,
a reworded claim, a new or missing row or note, or a ✓ that became ✗ fails the test.
"""

import importlib.util
import re
from collections import Counter

import pytest
from conftest import REPO

from gradlab.cli import cli
from gradlab.lessons import measured_runtimes

spec = importlib.util.spec_from_file_location("readme", REPO / "scripts" / "readme.py")
readme = importlib.util.module_from_spec(spec)
spec.loader.exec_module(readme)

BLOCKS = readme.blocks(readme.README.read_text(encoding="utf-8"))
NUMBER = re.compile(r"[-+]?(\d[\d,]*\.?\d*(e[-+]?\d+)?|\.\d+|nan|inf)(?![\w])", re.I)
BORDERS = re.compile(r"[─━│┃┏┓┗┛┡┩┠┨┯┷┿╇╈┳┻╋┣┫└┘┌┐├┤┬┴┼╭╮╰╯═║╔╗╚╝…]")


# Lines that differ by machine, not by code: the versions header, and which device `auto` found.
MACHINE = re.compile(r"^(gradlab \S+ · torch .*|note: --device auto: .*)$", re.M)


def words(text: str) -> Counter:
    """The multiset of words of TEXT with numbers masked, table borders and machine-specific lines dropped."""
    return Counter(NUMBER.sub("#", BORDERS.sub(" ", MACHINE.sub("", text))).split())


def test_readme_has_generated_blocks_for_every_lesson_it_shows():
    commands = [m["cmd"] for m in BLOCKS]
    assert len(commands) >= 6 and "gradlab mnist --dataset mnist-sample --offline" in commands
    assert all(m["out"].strip() for m in BLOCKS), "an empty block: run `make docs`"


@pytest.mark.parametrize("block", BLOCKS, ids=[m["cmd"] for m in BLOCKS])
def test_every_readme_command_parses(block):
    name, *args = readme.command_args(block["cmd"])
    assert name in cli.commands, block["cmd"]
    cli.commands[name].make_context(name, args)  # raises on an unknown option or a bad value


def quick(block) -> bool:
    name = readme.command_args(block["cmd"])[0]
    return measured_runtimes()["lessons"].get(name, {}).get("default_s", 99) < 10


@pytest.mark.parametrize("block", [m for m in BLOCKS if quick(m)], ids=[m["cmd"] for m in BLOCKS if quick(m)])
def test_quick_readme_outputs_match_what_the_code_prints(block):
    printed = readme.run(block["cmd"])
    shown = block["out"]
    assert ("claims hold" in printed or "--quiet" in block["cmd"]) and words(printed) == words(shown), (
        f"README block of `{block['cmd']}` drifted: only in README {words(shown) - words(printed)}, "
        f"only printed {words(printed) - words(shown)}; run `make docs`")


def test_masking_keeps_words_and_drops_numbers_and_borders():
    assert words("│ ✓ │ max |ΔW| 4.47e-08 │ ≤ 1e-06 │ 1,858 │ 0.5") == Counter(
        {"✓": 1, "max": 1, "|ΔW|": 1, "#": 4, "≤": 1})
    assert words("gradlab 0.1.0 · torch 2.14.1+cu130 · device cpu\nnote: --device auto: none\nok") == Counter(["ok"])
