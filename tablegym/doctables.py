"""Index tables in docs, generated from the layouts: ``python -m tablegym.doctables [--check]``.

A table lives between two marker lines, in a Markdown file or a module docstring alike::

    <!-- layout: kingup_env.observation.LAYOUT -->
    | index | field | ... |
    <!-- end layout -->

Running the module rewrites every such block from the named :class:`tablegym.layout.Layout`;
``--check`` only reports blocks that differ (the test suite runs it).
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = ("README.md", "docs/*.md", "*_env/*.py")
_BLOCK = re.compile(
    r"^(?P<indent>[ \t]*)<!-- layout: (?P<target>[\w.]+) -->\n.*?^[ \t]*<!-- end layout -->$",
    re.MULTILINE | re.DOTALL,
)


def _table(target: str, indent: str) -> str:
    module, _, name = target.rpartition(".")
    table = getattr(importlib.import_module(module), name).table()
    body = "\n".join(indent + row for row in table.splitlines())
    return f"{indent}<!-- layout: {target} -->\n{body}\n{indent}<!-- end layout -->"


def render(text: str) -> str:
    """``text`` with every layout block regenerated."""
    return _BLOCK.sub(lambda m: _table(m["target"], m["indent"]), text)


def stale(root: Path = ROOT) -> list[Path]:
    """Files whose layout blocks differ from their layouts."""
    paths = sorted({p for pattern in FILES for p in root.glob(pattern)})
    return [p for p in paths if render(text := p.read_text()) != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only list stale files")
    args = parser.parse_args(argv)
    files = stale()
    for path in files:
        if args.check:
            print(f"stale layout table: {path.relative_to(ROOT)}")
        else:
            path.write_text(render(path.read_text()))
            print(f"updated {path.relative_to(ROOT)}")
    return 1 if files and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
