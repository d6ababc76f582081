"""What the command lines share: argparse whose errors are one line, and the one-line error of
a command or agent that needs an extra that is not installed."""

from __future__ import annotations

import argparse
import dataclasses
import re
from importlib import metadata
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
    fields get ``--flag/--no-flag``, a ``list[str]`` field is a repeatable ``KEY=VALUE``,
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
        elif f.type == "list[str]":
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


def missing_of_extra(extra: str, dist: str = "tablegym") -> list[str]:
    """The distributions that ``pip install 'tablegym[EXTRA]'`` would add and that are not
    installed, read from the installed package's own requirements (an extra that names other
    extras of tablegym, as ``rllib`` names ``train``, includes theirs). Empty where tablegym
    itself is not installed (a source checkout): nothing to compare against."""
    try:
        requires = metadata.requires(dist) or []
    except metadata.PackageNotFoundError:
        return []
    missing: list[str] = []
    for line in requires:
        requirement, _, marker = line.partition(";")
        if not re.search(rf"""extra\s*==\s*["']{re.escape(extra)}["']""", marker):
            continue
        name, extras = re.match(r"\s*([\w.-]+)(?:\[([^\]]*)\])?", requirement).groups()
        if name == dist:
            for inner in (extras or "").split(","):
                missing += [m for m in missing_of_extra(inner.strip(), dist) if m not in missing]
            continue
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
    return missing


def require_extra(extra: str, what: str) -> None:
    """ValueError in one line if ``what`` (a command, an agent spec) cannot run because the
    extra ``extra`` is not installed; it names the extra and what is missing."""
    missing = missing_of_extra(extra)
    if missing:
        raise ValueError(
            f"{what} needs the {extra} extra: pip install 'tablegym[{extra}]' "
            f"(not installed: {', '.join(missing)})"
        )
