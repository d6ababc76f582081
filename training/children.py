"""What every process the trainers start does first: leave Ctrl-C to its parent, and end as
soon as the parent is gone (``evaluate.py``'s workers, ``train.py``'s learner process); and
what every process that collects games sets: one thread."""

from __future__ import annotations

import os
import signal
import threading
import time


def worker_start(parent: int) -> None:
    """Ignore Ctrl-C (it reaches the whole process group; the parent stops its children) and
    exit once process ``parent`` is gone, even after its ``kill -9``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _watch_parent(parent: int) -> None:
    # A killed parent runs no cleanup; its orphans get a new parent process id.
    while os.getppid() == parent:
        time.sleep(0.2)
    os._exit(1)


def one_thread(numba_too: bool = True) -> None:
    """torch and numba on one thread each, in a process that steps games on one core
    (``numba_too=False``: torch alone, numba's thread count left as it is).

    More torch threads are much slower on small machines (README). The engines' parallel
    kernels wait at each step for their worker threads: beside another busy process that wait
    cost 10x a run's speed, and K Ray collectors each with a thread per core of the machine
    made 15 collectors on 16 cores slower than one process (docs/results.md).

    numba first: its first ``set_num_threads`` starts its OpenMP layer, which sets the thread
    count of the libgomp that torch shares to numba's (the machine's cores), undoing an earlier
    ``torch.set_num_threads(1)``. A probe whose torch ran on two threads beside a busy process
    made 20 times fewer samples per CPU minute."""
    import numba
    import torch

    numba.set_num_threads(1 if numba_too else numba.get_num_threads())
    torch.set_num_threads(1)
