"""Every command and code block of README.md and docs/*.md runs as written.

Shell commands are cut out of the ```bash blocks. The short ones (``RUN``) run as they stand, in
a scratch directory that sees the repository's folders, so what they write stays out of the
checkout. The others would take minutes or hours: their program's ``--help`` runs instead, and
every ``--flag`` they use must be one that the help names (a renamed or dropped option fails
here). ``python -c`` one-liners are compiled and their imports resolved. The ```python blocks
run as they stand; docs/integrations.md's recipes have their own test
(tests/test_integrations.py). The docs cite only paths that the repository holds.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SCRIPTS = PYPROJECT["project"]["scripts"]
EXTRAS = set(PYPROJECT["project"]["optional-dependencies"])
BIN = Path(sys.executable).parent
# Tools of other projects whose options the docs use: their --help is checked as ours is.
EXTERNAL = {"ray", "jupyter", "tensorboard"}
PLAIN_SHELL = {"tail", "export", "sleep", "kill", "wait"}  # the shell's own: nothing to check
PREFIXES = {"setsid"}  # run the command that follows them
# Folders that the commands in the docs write; they are not in the repository.
OUTPUTS = {"runs", "games", "results", "tb", "pool", "checkpoint"}

# Commands short enough to run as written, with a pattern their output must contain (the
# figure the docs quote).
RUN = {
    "python -m tablegym.doctables --check": "",
    "python training/evaluate.py --game kingup --agents random heuristic heuristic heuristic "
    "--games 2000 --seed 20261127 --batch 256": r"random +0\.085 +\[0\.074, 0\.098\]",
}
QUICKSTART = (
    "python training/train.py --game kingup --timesteps 100000 --eval-every 50000 "
    "--eval-games 100 --out runs/quickstart"
)


# -- reading the docs ------------------------------------------------------------------------
def blocks(lang: str) -> list[tuple[str, str]]:
    """(file name, body) of every ```lang block of the docs."""
    found = []
    for path in DOCS:
        for body in re.findall(rf"^```{lang}\n(.*?)^```", path.read_text(), re.M | re.S):
            found.append((path.relative_to(ROOT).as_posix(), body))
    return found


def split_commands(script: str) -> list[list[str]]:
    """The simple commands of a shell snippet as token lists: continuation lines joined,
    comments dropped, split at ``&&``, ``;``, ``|``, ``&`` and ``--`` (``ray job submit -- CMD``),
    leading ``VAR=value`` assignments removed."""
    lexer = shlex.shlex(script.replace("\\\n", " "), posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token in {"&&", ";", "|", "||", "&", "--"} or token == "\n":
            commands.append([])
        else:
            commands[-1].append(token)
    result = []
    for tokens in commands:
        while tokens and (re.fullmatch(r"[A-Za-z_]\w*=\S*", tokens[0]) or tokens[0] in PREFIXES):
            tokens = tokens[1:]
        if tokens:
            result.append(tokens)
    return result


def shell_commands() -> list[tuple[str, list[str]]]:
    """(file name, tokens) of every command in the docs' ```bash blocks, one line at a time."""
    found = []
    for name, body in blocks("bash"):
        for line in body.replace("\\\n", " ").splitlines():
            found.extend((name, tokens) for tokens in split_commands(line))
    return found


def program_of(tokens: list[str]) -> tuple[tuple[str, ...], list[str]]:
    """(the argv that prints the program's help, without --help; the arguments given)."""
    head = tokens[0]
    if head == "python" and tokens[1] == "-m":
        return (sys.executable, "-m", tokens[2]), tokens[3:]
    if head == "python":
        return (sys.executable, tokens[1]), tokens[2:]
    if head in SCRIPTS:
        return (str(BIN / head),), tokens[1:]
    if head in EXTERNAL:
        words = []
        for token in tokens[1:]:
            if not re.fullmatch(r"[a-z][a-z-]*", token):
                break
            words.append(token)
        return (str(BIN / head), *words), tokens[1 + len(words) :]
    raise AssertionError(f"the docs run {head!r}, which this test does not know how to check")


def to_check() -> dict[tuple[str, ...], set[str]]:
    """Per program (its help argv), every --flag the docs give it."""
    programs: dict[tuple[str, ...], set[str]] = {}
    for _, tokens in shell_commands():
        if tokens[0] in {"pip", "cd", *PLAIN_SHELL} or tokens[:2] == ["python", "-c"]:
            continue
        program, args = program_of(tokens)
        flags = {a.split("=")[0] for a in args if a.startswith("--")}
        programs.setdefault(program, set()).update(flags)
    return programs


def _id(program: tuple[str, ...]) -> str:
    return " ".join(Path(p).name if i == 0 else p for i, p in enumerate(program))


PROGRAMS = to_check()


def in_scratch(tmp_path: Path) -> Path:
    """A directory that sees the repository's folders but keeps what commands write."""
    for entry in ROOT.iterdir():
        if entry.is_dir() and not entry.name.startswith(".") and entry.name not in OUTPUTS:
            (tmp_path / entry.name).symlink_to(entry)
    return tmp_path


def run_shell(command: str, cwd: Path, timeout: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    argv = [sys.executable if t == "python" else t for t in shlex.split(command)]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


# -- the tests -------------------------------------------------------------------------------
def test_the_docs_have_commands_and_the_parser_finds_them():
    commands = [" ".join(tokens) for _, tokens in shell_commands()]
    assert len(commands) > 20
    assert QUICKSTART in commands and "python -m pytest -n 2" in commands
    assert split_commands("A=1 ray start --x=1 && echo hi # c\n") == [
        ["ray", "start", "--x=1"],
        ["echo", "hi"],
    ]


@pytest.mark.parametrize("program", sorted(PROGRAMS), ids=_id)
def test_every_long_command_has_a_help_naming_its_options(program):
    external = Path(program[0]).name in EXTERNAL
    if external and not Path(program[0]).exists():
        pytest.skip(f"{Path(program[0]).name} is not installed (an extra)")
    proc = subprocess.run([*program, "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = proc.stdout
    unknown = [
        f for f in PROGRAMS[program] if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", text)
    ]
    assert not unknown, f"{_id(program)} has no option {unknown}"


def test_the_scripts_that_the_docs_run_exist():
    for name, tokens in shell_commands():
        if tokens[0] == "python" and tokens[1] not in {"-m", "-c"}:
            assert (ROOT / tokens[1]).is_file(), f"{name}: {' '.join(tokens)}"
        if tokens[0] == "cd":
            assert (ROOT / tokens[1]).is_dir(), f"{name}: cd {tokens[1]}"


def test_python_one_liners_compile_and_import_what_they_name():
    found = 0
    for name, tokens in shell_commands():
        if tokens[:2] != ["python", "-c"]:
            continue
        tree = ast.parse(tokens[2])
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = importlib.import_module(node.module)
                for alias in node.names:
                    assert hasattr(module, alias.name), f"{name}: {node.module}.{alias.name}"
        found += 1
    assert found


def test_pip_commands_name_extras_that_exist():
    for name, tokens in shell_commands():
        if tokens[0] != "pip":
            continue
        for token in tokens:
            if m := re.fullmatch(r"\.\[([\w,]+)\]", token):
                assert set(m[1].split(",")) <= EXTRAS, f"{name}: {token}"


def test_the_readme_installs_and_tests_as_ci_does():
    """.ci/run runs exactly the README's install and test commands."""
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    readme = [" ".join(t) for name, t in shell_commands() if name == "README.md"]
    torch = "pip install torch==2.13.0 --extra-index-url https://download.pytorch.org/whl/cpu"
    for command in (torch, "pip install -e .[all]", "python -m pytest -n 2"):
        assert command in readme
    assert torch in ci and 'pip install -e ".[all]"' in ci and "python -m pytest -n 2" in ci


@pytest.mark.parametrize("command", sorted(RUN))
def test_short_commands_run_as_written(command, tmp_path):
    assert command in {" ".join(t) for _, t in shell_commands()}, "no longer in the docs"
    proc = run_shell(command, in_scratch(tmp_path), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert re.search(RUN[command], proc.stdout), proc.stdout[-2000:]


PYTHON_BLOCKS = [b for b in blocks("python") if b[0] != "docs/integrations.md"]


@pytest.mark.parametrize(
    "name,code", PYTHON_BLOCKS, ids=[f"{name}:{i}" for i, (name, _) in enumerate(PYTHON_BLOCKS)]
)
def test_python_blocks_run_as_written(name, code, capsys):
    exec(compile(code, name, "exec"), {"__name__": "__main__"})


@pytest.mark.slow
def test_the_quick_start_prints_what_the_readme_quotes(tmp_path):
    """The form of the quoted lines and the samples they are printed at. The win rates depend
    on the machine's floating point (torch build, CPU), so only the README's machine is
    checked for them, by hand (docs/results.md, "The quick start")."""
    proc = run_shell(QUICKSTART, in_scratch(tmp_path), timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = r"step (\d+): win rate vs heuristic \d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\] \(fair 0\.250\)"
    quoted = re.findall(line, (ROOT / "README.md").read_text())
    printed = re.findall(line, proc.stdout)
    assert len(quoted) == 2 and len(printed) == 3
    for k, (quote, step) in enumerate(zip(quoted, printed[1:]), start=1):
        assert int(quote) // 50_000 == int(step) // 50_000 == k  # after 50,000 and 100,000
    assert (tmp_path / "runs" / "quickstart" / "checkpoint.zip").is_file()


# -- cite only what ships --------------------------------------------------------------------
PATH_REF = re.compile(r"`((?:[\w.<>{}*-]+/)+[\w.<>{}*-]*)`|\]\(((?!https?:|#)[^)#\s]+)")


REGISTRY_ID = re.compile(r"tablegym/\w+(-v\w+)?")  # PettingZoo's ids, not paths
# TensorBoard's tag groups (training/tags.py, SB3's and RLlib's own) and the run directory's
# placeholder: written like paths, but none.
NOT_PATHS = {"eval", "selfplay", "rollout", "time", "probe", "train", "league", "losses",
             "charts", "DIR"}  # fmt: skip
CITING = DOCS


def cited_paths() -> list[tuple[str, str]]:
    """(file, path) of every repository path the docs cite in backticks or as a link, outside
    code blocks."""
    found = []
    for path in CITING:
        base = path.parent.relative_to(ROOT)
        prose = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.M | re.S)
        for m in PATH_REF.finditer(prose):
            if m[1]:
                found.append((path.name, m[1]))
            else:  # a link is relative to its file
                found.append((path.name, os.path.normpath(base / m[2])))
    return found


def test_the_docs_cite_only_paths_the_repository_holds():
    missing = []
    for name, cited in cited_paths():
        first = cited.split("/")[0]
        if (
            cited.startswith(("/", "~", "..."))
            or first in OUTPUTS | NOT_PATHS
            or REGISTRY_ID.fullmatch(cited)
        ):
            continue
        pattern = re.sub(r"<\w+>|\{\w+\}", "*", cited.rstrip("/"))
        if not list(ROOT.glob(pattern)):
            missing.append(f"{name}: {cited}")
    assert not missing, missing


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors of a Markdown file: lower case, punctuation dropped, spaces to
    hyphens."""
    prose = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.M | re.S)
    headings = re.findall(r"^#+ (.+)$", prose, re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def test_links_to_sections_point_at_headings():
    links, broken = 0, []
    for path in DOCS:
        for target, anchor in re.findall(r"\]\(([\w./-]*\.md)?#([\w-]+)\)", path.read_text()):
            linked = (path.parent / target) if target else path
            links += 1
            if anchor not in anchors(linked):
                broken.append(f"{path.name}: {target}#{anchor}")
    assert links > 10 and not broken, broken
