"""`python -m gradlab` is the same as the `gradlab` command."""

from gradlab.cli import main

if __name__ == "__main__":
    main()
