"""The one exception type for bad input: the CLI prints its message as one line and exits with code 2."""


class GradlabError(Exception):
    """Bad input (a number, a name, a file, a device): the message says what is wrong and how to fix it."""


def check(condition: bool, message: str) -> None:
    """Raise GradlabError(message) unless condition holds: validation at the edge, with the fix in the text."""
    if not condition:
        raise GradlabError(message)
