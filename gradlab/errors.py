"""The one exception type for bad input: the CLI prints its message as one line and exits with code 2."""


class GradlabError(Exception):
    """Bad input (a number, a name, a file, a device): the message says what is wrong and how to fix it."""


def check(condition: bool, message: str) -> None:
    """Raise GradlabError(message) unless condition holds: validation at the edge, with the fix in the text."""
    if not condition:
        raise GradlabError(message)


FLOAT32_MAX = 3.4028234663852886e38  # the lessons compute in float32: a larger number cannot even be stored


def check_positive(name: str, value, example: str) -> None:
    """VALUE must be a positive number that float32 can hold (so no inf, NaN or 1e39); EXAMPLE is a sensible one."""
    check(isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= FLOAT32_MAX,
          f"{name} must be a positive finite number, got {value!r} (float32 holds at most {FLOAT32_MAX:.3g}); "
          f"try {name} {example}")
