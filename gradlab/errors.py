"""The one exception type for bad input: the CLI prints its message as one line and exits with code 2."""


class GradlabError(Exception):
    """Bad input (a number, a name, a file, a device): the message says what is wrong and how to fix it."""


def shorten(text: str, most: int = 80, count: bool = False) -> str:
    """TEXT as a one-line message shows it: cut after MOST characters (COUNT: saying how many there were)."""
    if len(text) <= most:
        return text
    return text[:most] + "…" + (f" ({len(text)} characters)" if count else "")


def check(condition: bool, message: str) -> None:
    """Raise GradlabError(message) unless condition holds: validation at the edge, with the fix in the text."""
    if not condition:
        raise GradlabError(message)


FLOAT32_MAX = 3.4028234663852886e38  # the lessons compute in float32: a larger number cannot even be stored


def check_positive(name: str, value, example: str, largest: float = FLOAT32_MAX) -> None:
    """VALUE must be a positive number no larger than LARGEST, by default the largest float32 (so no inf, NaN or
    1e39); EXAMPLE is a sensible one."""
    check(isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= largest,
          f"{name} must be a positive finite number, got {value!r} (at most {largest:.3g} here); try {name} {example}")


MAX_ENV_STEPS = 100_000_000  # environment steps an RL run may ask for: about half a day on 2 cores

# Adam's first step is lr / (1 − β1) = 10·lr: a larger lr overflows float32 inside the optimizer.
ADAM_MAX_LR = FLOAT32_MAX * (1 - 0.9)


class RunFailed(Exception):
    """A run that could not finish for a reason other than bad input (a worker process died or stopped answering):
    the CLI prints the message as one line and exits with code 1."""
