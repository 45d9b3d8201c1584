"""Run the load benchmark: ``python bench/run.py --help`` (bench/README.md)."""

import sys
from pathlib import Path

if not __package__:
    # Run as a script: import ``bench`` from the project root, and do not let
    # bench/'s own modules shadow anything as top-level names.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    sys.path.insert(0, str(here.parent))

from bench.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
