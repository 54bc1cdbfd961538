"""Lets the test modules import `scenarios` (pytest runs them with --import-mode=importlib,
which leaves sys.path alone, so that `mocc` is always the installed package)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
