"""The settings of `gradlab jacobian`, each declared once (gradlab.kit.options), and the parsing of its matrix and
state. No torch here: `gradlab jacobian --help` reads this module."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gradlab.errors import GradlabError, check
from gradlab.kit import options as o

MAX_ENTRIES = 256  # numbers in X: the Hessian check by finite differences costs 4·(rows·columns)² evaluations


def parse_matrix(text: str) -> list[list[float]]:
    """"a,b,c,d;e,f,g,h" -> rows of numbers; ragged rows and non-numbers are errors."""
    rows = [[_number(v, "--matrix") for v in row.split(",")] for row in text.strip().split(";")]
    check(all(len(r) == len(rows[0]) for r in rows),
          f"--matrix {text!r} has rows of different lengths {[len(r) for r in rows]}; give every row as many "
          f"numbers, rows separated by ';'")
    return rows


def parse_vector(text: str, option: str) -> list[float]:
    return [_number(v, option) for v in text.strip().split(",")]


def _number(v: str, option: str) -> float:
    try:
        x = float(v)
    except ValueError:
        raise GradlabError(f"{option}: {v.strip()!r} is not a number; use comma-separated numbers like "
                           f"'0.2,0.5,-0.3'") from None
    check(math.isfinite(x), f"{option}: {v.strip()!r} is not a finite number")
    return x


@dataclass
class Config(o.LessonConfig):
    """Settings of `gradlab jacobian`; the seed draws the random A of --scaling."""

    matrix: str = o.option("0.2,0.5,-0.3,0.1;0.4,-0.2,0.6,-0.5",
                           "The policy matrix X: numbers separated by ',', rows by ';'.", listed=True)
    state: str = o.option("1.0,0.5,-1.0,2.0", "The state y: one number per column of X.", listed=True)
    output: int = o.option(0, "Which output W_i the Hessian is of.", listed=True)  # 0-based
    scaling: bool = o.option(False, "Also time every Jacobian method on tanh(Ax) for growing n.", listed=True)
    sizes: str = o.option("16,64,256,512", "The n for --scaling.")
    repeats: int = o.option(5, "Timing repeats (the median is shown).")

    def __post_init__(self) -> None:
        X, y = parse_matrix(self.matrix), parse_vector(self.state, "--state")
        check(len(X[0]) == len(y), f"--matrix has {len(X[0])} columns but --state has {len(y)} numbers; X y needs "
                                   f"as many state numbers as X has columns")
        check(0 <= self.output < len(X), f"--output {self.output} is out of range: X has {len(X)} rows, so use "
                                         f"0..{len(X) - 1}")
        check(len(X) >= 2, f"--matrix {self.matrix!r} has {len(X)} row: a policy needs at least 2 actions (rows), "
                           f"or its softmax is the constant 1; add a row after ';'")
        check(len(X) * len(X[0]) <= MAX_ENTRIES, f"--matrix has {len(X)}×{len(X[0])} = {len(X) * len(X[0])} "
                                                 f"numbers; at most {MAX_ENTRIES} (the finite-difference Hessian "
                                                 f"grows with their square)")
        check(self.repeats >= 1, f"--repeats must be at least 1, got {self.repeats}")
        numbers = [_number(s, "--sizes") for s in self.sizes.split(",")]
        check(all(n.is_integer() for n in numbers), f"--sizes must be whole numbers, got {self.sizes!r}")
        sizes = [int(n) for n in numbers]
        check(all(1 <= n <= 4096 for n in sizes), f"--sizes must be between 1 and 4096, got {self.sizes!r}")

    def plot_unavailable(self) -> str | None:
        return None if self.scaling else ("gradlab jacobian draws curves only with --scaling; add --scaling or drop "
                                          "--plot")
