"""The PPO update in a second process, so that collecting and learning use both cores.

``train.py --workers 2`` (the default where the process may use two or more cores) keeps
collecting in the main process (tables, opponents, league, evaluation, checkpoints) and hands
each full rollout to a learner process that runs sb3-contrib's ``MaskablePPO.train`` on its own
copy of the model. While the learner updates on rollout *k*, the main process collects rollout
*k + 1* with the weights of update *k − 1*:

* **Policy lag: exactly one update.** Rollout *k + 1* is collected with weights *w_k* and
  trained from *w_{k+1}*; the main process takes new weights only between rollouts, and waits
  for them if the learner is slower, so the lag never grows and a run's samples do not depend
  on the speed of either process.
* **Off-policy correction.** PPO's ratio is taken against the log-probabilities stored with
  each sample, those of the policy that acted (*w_k*), so its clipped objective already weighs
  the one-update-old samples by importance; with the lag fixed at one, no further correction
  (V-trace, a decoupled proximal policy) is needed.

A checkpoint waits for the update in flight and holds its weights (every rollout made so far is
trained on); the main process keeps acting with *w_k* until its next rollout, as it would have.

The learner process ignores Ctrl-C (the main process stops it), leaves as soon as the main
process is gone, even after ``kill -9`` (it watches its parent), and its death ends the run
with one line through :class:`LearnerError`.
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import resource
import signal
import threading
import time
from collections.abc import Iterator
from multiprocessing import shared_memory
from typing import Any

import numpy as np

from training.children import worker_start

# What MaskablePPO.train reads from the rollout buffer.
BUFFER_FIELDS = ("observations", "actions", "values", "log_probs", "advantages", "returns",
                 "action_masks")  # fmt: skip


class LearnerError(RuntimeError):
    """The learner process ended while the run needed it."""


def default_workers() -> int:
    """Processes a run uses by default: 2 where this process may run on two cores or more."""
    return 2 if len(os.sched_getaffinity(0)) >= 2 else 1


def _weights(model: Any) -> bytes:
    """The policy's and its optimizer's state, as bytes for the pipe."""
    buffer = io.BytesIO()
    state = {"policy": model.policy.state_dict(), "optimizer": model.policy.optimizer.state_dict()}
    import torch

    torch.save(state, buffer)
    return buffer.getvalue()


def _load_weights(model: Any, data: bytes) -> None:
    import torch

    state = torch.load(io.BytesIO(data), map_location=model.device, weights_only=True)
    model.policy.load_state_dict(state["policy"])
    model.policy.optimizer.load_state_dict(state["optimizer"])


class Shared:
    """Named arrays in one block of shared memory: created by the main process, attached by
    the learner (``layout``: name, shape, dtype and offset of each)."""

    def __init__(self, memory: shared_memory.SharedMemory, layout: list[tuple]):
        self.memory, self.layout, self.name = memory, layout, memory.name
        self.arrays = {
            name: np.ndarray(shape, dtype=np.dtype(dtype), buffer=memory.buf, offset=offset)
            for name, shape, dtype, offset in layout
        }

    @classmethod
    def create(cls, like: dict[str, np.ndarray]) -> Shared | None:
        """A block for arrays like ``like``; None where the system refuses one (the rollouts
        then go through the pipe)."""
        layout, size = [], 0
        for name, array in like.items():
            layout.append((name, array.shape, array.dtype.str, size))
            size += -(-array.nbytes // 64) * 64  # each array on a cache line of its own
        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if limit != resource.RLIM_INFINITY and limit < size:
            return None  # the block is a file: creating it would fail, and Python 3.11 then
            # has its resource tracker print a traceback
        try:
            return cls(shared_memory.SharedMemory(create=True, size=max(size, 1)), layout)
        except OSError:
            return None

    @classmethod
    def attach(cls, name: str, layout: list[tuple]) -> Shared:
        return cls(shared_memory.SharedMemory(name=name), layout)

    def release(self, unlink: bool = False) -> None:
        self.arrays = {}  # no view may outlive the mapping
        self.memory.close()
        if unlink:
            self.memory.unlink()


class LearnerProcess:
    """A learner process: started early (it imports torch beside the run's own setup), then
    :meth:`load` a model, :meth:`submit` full rollouts, :meth:`take` each update's result,
    and :meth:`close` at the end."""

    def __init__(self, device: str, seed: int):
        ctx = multiprocessing.get_context("spawn")  # fork could deadlock torch's threads
        self._conn, child = ctx.Pipe()
        # The model goes through our pipe, not the start: multiprocessing writes a start's
        # arguments to the new process while holding the pipe's other end itself, so a
        # process killed while it imports would leave that write, and this run, hanging.
        self._process = ctx.Process(
            target=serve, args=(child, device, seed, os.getpid()), name="tablegym-learner",
            daemon=True,
        )  # fmt: skip
        self._process.start()
        child.close()  # the learner's end: its death then reads as EOF here
        self.pending = False  # an update is in flight
        self.ready: dict[str, Any] | None = None  # its result, received but not yet acted with
        self.seconds = 0.0  # the learner's own time in updates
        self.cpu_seconds = 0.0  # and its CPU time in them
        self._first: list[BaseException] = []
        self._sending: threading.Thread | None = None

    def load(self, model: Any) -> None:
        """Send the model to learn from, beside the first rollout's collection (the learner
        reads it once it has imported torch, which takes seconds), and share the memory that
        each rollout goes through."""
        saved = io.BytesIO()
        model.save(saved)
        buffer = model.rollout_buffer
        self._shared = Shared.create({name: getattr(buffer, name) for name in BUFFER_FIELDS})
        shared = (None, None) if self._shared is None else (self._shared.name, self._shared.layout)
        first = (saved.getvalue(), *shared)
        self._sending = threading.Thread(target=self._send_first, args=(first,))
        self._sending.start()

    def _send_first(self, first: tuple) -> None:
        try:
            self._conn.send(first)
        except OSError as err:
            self._first.append(err)

    def _sent_first(self) -> None:
        """Wait until the model is sent: a message must never be cut into another."""
        if self._sending is None:
            raise RuntimeError("the learner process has no model yet (LearnerProcess.load)")
        self._sending.join()
        if self._first:
            raise self._died()

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def submit(self, model: Any) -> None:
        """Send ``model``'s full rollout buffer and schedules; the learner starts updating."""
        # Through shared memory, not the pipe (pickling megabytes of observations cost a
        # tenth of a rollout's time): the learner reads it only until its update is sent
        # back, and the next rollout is copied in only after that (take comes first).
        self._sent_first()
        buffer = model.rollout_buffer
        job: dict[str, Any] = {
            "progress": model._current_progress_remaining,
            "ent_coef": model.ent_coef,
        }
        if self._shared is None:
            job["arrays"] = {name: getattr(buffer, name) for name in BUFFER_FIELDS}
        else:
            for name, view in self._shared.arrays.items():
                np.copyto(view, getattr(buffer, name))
        with _signals_held():
            self._send(job)
            self.pending = True

    def take(self) -> None:
        """Wait for the update in flight, if any; its result goes to :attr:`ready`."""
        self._sent_first()
        while self.pending and not self._conn.poll(0.2):  # interruptible while waiting
            pass
        if not self.pending:
            return
        with _signals_held():
            try:
                result = self._conn.recv()
            except (EOFError, OSError):
                raise self._died() from None
            self.pending = False
            if "error" in result:
                raise LearnerError(f"the learner process failed: {result['error']}")
            self.seconds += result["seconds"]
            self.cpu_seconds += result["cpu"]
            self.ready = result

    def close(self, timeout: float = 10.0) -> None:
        """End the learner process (an update in flight is dropped) and wait for it."""
        sending = self._sending is not None and self._sending.is_alive()
        if not sending:  # else it has not even read the model: kill it
            with contextlib.suppress(OSError, ValueError):
                self._conn.send(None)
            self._process.join(timeout)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        if self._sending is not None:
            self._sending.join()
            if self._shared is not None:
                self._shared.release(unlink=True)
        self._conn.close()

    def _send(self, message: Any) -> None:
        # Signals wait until the whole message is sent: a stop cut into a message would leave
        # the pipe out of step, and the stop's own save would hang on it.
        self._sent_first()
        with _signals_held():
            try:
                self._conn.send(message)
            except OSError:
                raise self._died() from None

    def _died(self) -> LearnerError:
        self._process.join(5.0)
        code = self._process.exitcode
        how = f"was killed by signal {-code}" if code is not None and code < 0 else "ended"
        if code is not None and code > 0:
            how = f"exited with code {code}"
        return LearnerError(f"the learner process (pid {self._process.pid}) {how}")


def start(device: str, seed: int) -> LearnerProcess:
    """A learner process for a model on ``device``, importing while the run sets up."""
    # Held: Ctrl-C cannot reach the new process while it imports, nor lose its handle here.
    with _signals_held():
        return LearnerProcess(device, seed)


def attach(model: Any, learner: LearnerProcess) -> None:
    """Give ``model`` to ``learner``: from now on ``model.train()`` hands updates to it."""
    learner.load(model)
    model.learner = learner


def _apply(model: Any, result: dict[str, Any]) -> None:
    _load_weights(model, result["weights"])
    model._n_updates = result["n_updates"]


def settle(model: Any) -> None:
    """Wait for the update in flight, if any, and act with its weights from now on.

    The result is dropped only once applied, so a stop that cuts in can settle again.
    """
    learner = model.learner
    if learner is None:
        return
    learner.take()
    result = learner.ready
    if result is not None:
        _apply(model, result)
        for key, value in result["logged"].items():
            model.logger.record(key, value, exclude=result["excluded"].get(key))
        learner.ready = None


@contextlib.contextmanager
def trained_weights(model: Any) -> Iterator[None]:
    """Within the block ``model`` holds the weights of every update so far (the one in flight
    is waited for and kept for the next rollout); afterwards the acting weights again."""
    learner = model.learner
    if learner is not None:
        learner.take()
    if learner is None or learner.ready is None:
        yield
        return
    acting = _weights(model), model._n_updates
    _apply(model, learner.ready)
    try:
        yield
    finally:
        _load_weights(model, acting[0])
        model._n_updates = acting[1]


# -- the learner process -------------------------------------------------------------------


def serve(conn: Any, device: str, seed: int, parent: int) -> None:
    """The learner process: load the model it is sent, then update on each rollout received."""
    # Ctrl-C reaches the whole group; the parent settles and stops us. SIGTERM stays deadly:
    # multiprocessing ends its daemons with it at exit, and then waits for them. Both were
    # held while this process started (see attach).
    worker_start(parent)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    import torch
    from stable_baselines3.common.utils import set_random_seed

    from training.collector import SelfPlayPPO, quiet_logger

    torch.set_num_threads(1)
    try:
        first = conn.recv()
    except (EOFError, OSError):
        return
    if first is None:  # the run ended before it had a model to learn from
        return
    saved, name, layout = first
    model = SelfPlayPPO.load(io.BytesIO(saved), device=device)
    shared = None if name is None else Shared.attach(name, layout)  # kept: views need it
    arrays = {} if shared is None else shared.arrays
    quiet_logger(model)
    set_random_seed(seed)  # minibatch order (numpy's global generator) and torch
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        try:
            result = _update(model, job, job.get("arrays", arrays))
        except Exception as err:  # the parent reports it in one line and saves its own state
            result = {"error": f"{type(err).__name__}: {err}"}
        try:
            conn.send(result)
        except (BrokenPipeError, OSError):
            return


def _update(model: Any, job: dict[str, Any], arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    started, cpu = time.perf_counter(), time.process_time()
    buffer = model.rollout_buffer
    for name, array in arrays.items():
        setattr(buffer, name, array)  # read only: minibatches are copies
    buffer.pos, buffer.full, buffer.generator_ready = buffer.buffer_size, True, False
    model._current_progress_remaining = job["progress"]
    model.ent_coef = job["ent_coef"]
    model.logger.name_to_value.clear()
    super(type(model), model).train()  # MaskablePPO.train: the parent keeps the time split
    logged = dict(model.logger.name_to_value)
    excluded = {k: v for k, v in model.logger.name_to_excluded.items() if k in logged}
    return {
        "weights": _weights(model),
        "n_updates": model._n_updates,
        "logged": {k: float(v) if isinstance(v, np.floating) else v for k, v in logged.items()},
        "excluded": excluded,
        "seconds": time.perf_counter() - started,
        "cpu": time.process_time() - cpu,
    }


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM in this block; they act as it ends (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
