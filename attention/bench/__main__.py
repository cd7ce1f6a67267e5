"""``python -m attention.bench``: see :mod:`attention.bench.cli`."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
