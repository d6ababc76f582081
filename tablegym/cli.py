"""What the command lines share: argparse whose errors are one line."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any


class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one line, ``error: ...`` (no usage block), exit status 2."""

    def error(self, message: str) -> Any:
        self.exit(2, f"error: {message}\n")


class _DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends each flag's default, unless its help already names it (per-game defaults,
    whose flag default is None)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if "(default:" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def dataclass_parser(
    fields_of: type, prog: str, description: str, choices: dict[str, list] | None = None
) -> OneLineParser:
    """A parser with one ``--flag`` per field of the dataclass ``fields_of``.

    Each field's ``metadata["help"]`` is its help and its default the flag's default; ``bool``
    fields get ``--flag/--no-flag``, a field named ``option`` is a repeatable ``KEY=VALUE``,
    ``int``/``float`` fields (optional ones too) are parsed as such, and ``choices`` restricts
    fields by name.
    """
    parser = OneLineParser(
        prog=prog,
        description=description,
        formatter_class=_DefaultsFormatter,
    )
    defaults = fields_of()
    for f in dataclasses.fields(fields_of):
        flag = "--" + f.name.replace("_", "-")
        kwargs: dict[str, Any] = {"help": f.metadata["help"], "default": getattr(defaults, f.name)}
        if f.name in (choices or {}):
            kwargs["choices"] = choices[f.name]
        if f.type == "bool":
            kwargs["action"] = argparse.BooleanOptionalAction
        elif f.name == "option":
            kwargs.update(action="append", metavar="KEY=VALUE", default=[])
        elif f.type in ("int | None", "int"):
            kwargs["type"] = int
        elif f.type in ("float | None", "float"):
            kwargs["type"] = float
        parser.add_argument(flag, **kwargs)
    return parser


def given_flags(argv: list[str]) -> frozenset[str]:
    """Option names set on a command line (``--num-games 8`` -> ``num_games``)."""
    names = {a[2:].split("=")[0].replace("-", "_") for a in argv if a.startswith("--")}
    return frozenset(n[3:] if n.startswith("no_") else n for n in names)
