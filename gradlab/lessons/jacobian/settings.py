"""The settings of `gradlab jacobian`, each declared once (gradlab.kit.options), and the parsing of its matrix and
state. No torch here: `gradlab jacobian --help` reads this module."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gradlab.errors import OptionError, check_option
from gradlab.kit import options as o

MAX_ENTRIES = 256  # numbers in X: the Hessian check by finite differences costs 4·(rows·columns)² evaluations


def parse_matrix(text: str) -> list[list[float]]:
    """"a,b,c,d;e,f,g,h" -> rows of numbers; ragged rows and non-numbers are errors."""
    rows = [[_number(v, "matrix") for v in row.split(",")] for row in text.strip().split(";")]
    check_option(all(len(r) == len(rows[0]) for r in rows), "matrix",
                 f"{text!r} has rows of different lengths {[len(r) for r in rows]}; give every row as many numbers, "
                 f"rows separated by ';'")
    return rows


def parse_vector(text: str, name: str) -> list[float]:
    """The numbers of option NAME's TEXT, "1.0,0.5"."""
    return [_number(v, name) for v in text.strip().split(",")]


def _number(v: str, name: str) -> float:
    try:
        x = float(v)
    except ValueError:
        raise OptionError(name, lambda say: f"{say(name)}: {v.strip()!r} is not a number; use comma-separated "
                                            f"numbers like '0.2,0.5,-0.3'") from None
    check_option(math.isfinite(x), name, lambda say: f"{say(name)}: {v.strip()!r} is not a finite number")
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
    repeats: int = o.option(5, "Timing repeats (the median is shown).", bounds=o.at_least(1))

    def __post_init__(self) -> None:
        super().__post_init__()  # the declared bounds
        X, y = parse_matrix(self.matrix), parse_vector(self.state, "state")
        check_option(len(X[0]) == len(y), "state",
                     lambda say: f"{say('matrix')} has {len(X[0])} columns but {say('state')} has {len(y)} numbers; "
                                 f"X y needs as many state numbers as X has columns")
        check_option(0 <= self.output < len(X), "output",
                     f"{self.output} is out of range: X has {len(X)} rows, so use 0..{len(X) - 1}")
        check_option(len(X) >= 2, "matrix", f"{self.matrix!r} has {len(X)} row: a policy needs at least 2 actions "
                                            f"(rows), or its softmax is the constant 1; add a row after ';'")
        check_option(len(X) * len(X[0]) <= MAX_ENTRIES, "matrix",
                     f"has {len(X)}×{len(X[0])} = {len(X) * len(X[0])} numbers; at most {MAX_ENTRIES} (the "
                     f"finite-difference Hessian grows with their square)")
        numbers = [_number(s, "sizes") for s in self.sizes.split(",")]
        check_option(all(n.is_integer() for n in numbers), "sizes", f"must be whole numbers, got {self.sizes!r}")
        sizes = [int(n) for n in numbers]
        check_option(all(1 <= n <= 4096 for n in sizes), "sizes", f"must be between 1 and 4096, got {self.sizes!r}")

    def plot_unavailable(self) -> str | None:
        return None if self.scaling else ("gradlab jacobian draws curves only with --scaling; add --scaling or drop "
                                          "--plot")
