"""What the command lines share: argparse whose errors are one line."""

from __future__ import annotations

import argparse
from typing import Any


class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one line, ``error: ...`` (no usage block), exit status 2."""

    def error(self, message: str) -> Any:
        self.exit(2, f"error: {message}\n")
