"""The one way tablegym writes a file: whole or not at all, and a full disk is one clear error.

Every writer of checkpoints, snapshots, curves, records, replays and evaluation outputs goes
through :func:`write_atomic`: the content goes to a temporary file beside the target, which
then replaces the target in one rename. When the write fails (``ENOSPC``, ``EFBIG``, a
permission lost mid-run), the temporary file is removed, the previous file stays as it was,
and :class:`WriteError` names the path and the cause, so a command-line tool can end with
one ``error:`` line instead of a traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


class WriteError(OSError):
    """A file could not be written; its temporary file is gone and the previous file kept."""

    def __init__(self, path: str | os.PathLike, cause: OSError):
        super().__init__(cause.errno, cause.strerror or str(cause), str(path))
        self.path = Path(path)

    def __str__(self) -> str:
        return f"cannot write {self.path}: {self.strerror}"


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block ends, then act on the first one that came.

    torch's zip writer turns a KeyboardInterrupt raised inside it into a RuntimeError while
    closing the half-written file, so Ctrl-C during a save would end the run with a traceback
    and no checkpoint at the current step. Outside the main thread signals cannot arrive.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[tuple[int, Any]] = []
    held = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, lambda *got: caught.append(got)) for sig in held}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if caught:
        signum, frame = caught[0]
        handler = previous[signum]
        if callable(handler):
            handler(signum, frame)
        elif handler == signal.SIG_DFL:
            signal.raise_signal(signum)


@contextlib.contextmanager
def thread_write_errors_quiet() -> Iterator[None]:
    """Inside the block, an OSError that ends a writer thread prints no traceback.

    TensorBoard writes its event files in a thread; when a write fails, the thread ends with
    the error's traceback on stderr and the next log call raises the same error in the
    thread that logs, which reports it in one line. Other errors keep their traceback.
    """
    previous = threading.excepthook

    def hook(args: Any) -> None:
        if not isinstance(args.exc_value, OSError):
            previous(args)

    threading.excepthook = hook
    try:
        yield
    finally:
        threading.excepthook = previous


def os_error(err: BaseException) -> OSError | None:
    """The OSError behind ``err``: itself, or one it was raised from or while handling.

    torch's zip writer reports a failed write as a RuntimeError raised while handling the
    OSError of the file object; the OSError is what says why.
    """
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, OSError):
            return err
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return None


def write_atomic(path: str | os.PathLike, write: Callable[[Path], Any]) -> Path:
    """Write ``path`` with ``write(tmp)`` and a rename; :class:`WriteError` if it fails.

    The temporary file is hidden (``.NAME.PID.tmp.SUFFIX``, the suffix kept for writers that
    choose the format from it) and removed on any failure; Ctrl-C and SIGTERM wait for the
    rename. An error that is not about the file system propagates unchanged.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        with signals_deferred():
            write(tmp)
            os.replace(tmp, path)
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        cause = os_error(err)
        if cause is None or isinstance(err, WriteError):
            raise
        raise WriteError(path, cause) from None
    return path


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` whole or not at all (see :func:`write_atomic`)."""
    return write_atomic(path, lambda tmp: tmp.write_text(text))


def write_json_atomic(path: str | os.PathLike, data: Any, indent: int | None = 2) -> Path:
    """Write ``data`` as JSON (and a final newline) to ``path`` whole or not at all."""
    return write_text_atomic(path, json.dumps(data, indent=indent) + "\n")
