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

from tablegym.layout import Layout

ROOT = Path(__file__).resolve().parent.parent
FILES = ("README.md", "docs/*.md", "*_env/*.py")
_BLOCK = re.compile(
    r"^(?P<indent>[ \t]*)<!-- layout: (?P<target>[\w.]+) -->\n.*?^[ \t]*<!-- end layout -->$",
    re.MULTILINE | re.DOTALL,
)


def _layout(target: str) -> Layout:
    module, _, name = target.rpartition(".")
    return getattr(importlib.import_module(module), name)


def render(text: str) -> str:
    """``text`` with every layout block regenerated. A layout that starts with the fields of
    the one tabled before it in the same text (a state after its observation) lists only the
    fields it adds."""
    previous: list[Layout] = []

    def block(m: re.Match) -> str:
        layout, indent = _layout(m["target"]), m["indent"]
        after = previous[-1] if previous and layout.starts_with(previous[-1]) else None
        previous.append(layout)
        body = "\n".join(indent + row for row in layout.table(after).splitlines())
        return f"{indent}<!-- layout: {m['target']} -->\n{body}\n{indent}<!-- end layout -->"

    return _BLOCK.sub(block, text)


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
