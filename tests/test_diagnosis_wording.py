"""What a diagnosis says is true and said once (#45, an independent judge's notes): a derivative at a kink is the
installed torch's, measured, never assumed."""

import re

import pytest
import torch
from inprocess import judged
from test_diagnosis import fn_of, said

KINKS = {"clamp(x, min=0)": lambda x: torch.clamp(x, min=0), "relu(x)": torch.relu, "|x|": torch.abs,
         "torch.maximum(x, 0)": lambda x: torch.maximum(x, torch.zeros_like(x))}


def repeated_clauses(text: str) -> list[str]:
    """The clauses of TEXT (between '; ', ': ' and '. ') of three words or more that a clause before them contains,
    or that only put a subject of at most three words before one ("(1 − done_t) cuts only the bootstrap" after "it
    cuts only the bootstrap"), compared without case, the brackets after a name (softmax(z) reads softmax) or a
    leading "it"."""
    seen, again = [], []
    for clause in re.split(r"; |: |\. ", text):
        key = re.sub(r"^(it|this|that|they) ", "", " ".join(re.sub(r"(?<=\w)\([^()]*\)", "", clause.lower()).split()))
        words = key.split()
        if len(words) >= 3 and any(f" {key} " in f" {s} " or (len(s.split()) >= 3 and 0 < len(words) - len(s.split())
                                                               <= 3 and key.endswith(" " + s)) for s in seen):
            again.append(clause)
        seen.append(key)
    return again


def test_a_clause_said_twice_is_said_once():
    """A family's words and a hint's, a cause's fix and a relation's hint, often say the same: said once."""
    from gradlab.practice.judging.sentences import said_once

    text = ("right for one step, wrong for several steps: right for one step, wrong for several: each step's target; "
            "(measured: applied to the reference, it gives your values): it cuts only the bootstrap: R_t = r_t; "
            "(1 − done_t) cuts only the bootstrap: R_t = r_t; softmax(z) normalises each row over the classes: "
            "softmax normalises each row: torch.softmax(z, dim=1)")
    assert repeated_clauses(text)
    once = said_once(text)
    assert not repeated_clauses(once), once
    code = "a b c d; your line 3 `x = 1; a b c d; y = 2` departs"  # a student's line is never cut
    assert said_once(code) == code
    assert once == ("right for one step, wrong for several steps: each step's target; (measured: applied to the "
                    "reference, it gives your values): it cuts only the bootstrap: R_t = r_t; softmax(z) normalises "
                    "each row over the classes: torch.softmax(z, dim=1)"), once


def slope_at_0(f) -> float:
    x = torch.zeros((), dtype=torch.float64, requires_grad=True)
    return float(torch.autograd.grad(f(x), x)[0])


@pytest.mark.parametrize("kink", ["torch.clamp(x, min=0)", "torch.relu(x)", "torch.where(x >= 0, x, 0.0)"])
def test_a_softplus_with_a_kink_is_told_its_measured_slope_at_0_and_this_torchs_kink_derivatives(kink):
    """max(x, 0) + log1p(exp(−|x|)) written with clamp, relu or a where whose x = 0 takes the x branch: the slope
    said is the student's, measured, and every kink derivative said is the installed torch's."""
    source = f"def softplus(x):\n    return {kink} + torch.log1p(torch.exp(-x.abs()))\n"
    fn = fn_of("log1pexp.softplus", source)
    text = said(judged("log1pexp.softplus", fn))
    theirs = slope_at_0(fn) + 0.0
    assert f"gradient there is {theirs:g} · dy" in text or "only at x = 0" in text, text
    stated = re.findall(r"d (" + "|".join(map(re.escape, KINKS)) + r")/dx = (-?\d+(?:\.\d+)?)", text)
    assert len(stated) == len(KINKS), text
    for name, value in stated:
        assert float(value) == slope_at_0(KINKS[name]), (name, value, text)


def test_a_family_member_right_only_by_its_input_says_what_the_input_was():
    """actor-critic's all-terminal twin has every target r = 1: a broadcast (N, N) loss is right there whatever the done
    mask does, so "right for terminal ones" alone would send the student to the mask (#45's judge): it says why."""
    from pathlib import Path

    from inprocess import judged_file

    name = "actor-critic.critic_update/wrong_no_squeeze_broadcast.py"
    text = said(judged_file(str(Path(__file__).parent / "practice_corpus_blind" / name), name.split("/")[0]))
    assert "right for terminal ones (there every target is r = 1, one number for all)" in text, text


ACROSS = """
    def clip_across_ranks(grads, clip_norm):
        import torch.distributed as dist
        {total}
        dist.all_reduce(s, op=dist.ReduceOp.SUM)
        scale = clip_norm / max(float(s.sqrt()), clip_norm)
        return [g * scale for g in grads]
    """


@pytest.mark.parametrize(("total", "fix"), [
    ("s = torch.tensor(sum(float((g * g).sum()) for g in grads))", True),  # float64 sum, then a float32 tensor
    ("s = sum((g.float() * g.float()).sum() for g in grads)", False)])  # accumulated in float32
def test_a_factor_a_little_off_says_what_was_measured_and_the_float32_total_only_where_it_gives_the_values(total, fix):
    """#45's judge: "a sum accumulated in float32" was said of a loop that sums Python floats; the float32 came from
    torch.tensor(total). The factor's error is said against one float32 rounding, and the float32 tensor with its fix
    only where that experiment gives the student's factor."""
    name = "clip.clip_across_ranks"
    text = said(judged(name, fn_of(name, ACROSS.format(total=total))))
    assert "one factor on every entry, a little off" in text and "accumulated in float32" not in text, text
    assert ("torch.tensor(total, dtype=torch.float64)" in text) == fix, text
