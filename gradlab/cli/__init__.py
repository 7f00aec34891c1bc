"""The `gradlab` command: click only. main.py is the group and the lesson commands, options.py turns a lesson's
declared options into click options, and one module per family of commands (classroom, practice, docs); process.py
is what a command-line process does about signals and its environment."""

from gradlab.cli.main import cli, lesson_command, main  # noqa: F401 — the entry point, gradlab.cli:main
