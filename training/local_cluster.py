"""A Ray cluster of several nodes on this machine, for tests and benchmarks.

Each node is ``ray start --block`` in a process group of its own, so that closing the cluster
stops exactly its processes (the node's raylet, GCS and workers), never another Ray on the
machine (``ray stop`` would stop them all). The nodes listen on the loopback interface only
and run without Ray 2.60's token authentication, whose token file a real cluster distributes
(docs/rllib.md).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

#: The environment of the nodes and of the drivers that join them.
LOOPBACK = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_ADDRESS": ""}

# Ray's command line by its module, so that it works where pip put no `ray` script on PATH.
RAY = [sys.executable, "-c", "import sys; from ray.scripts.scripts import main; sys.exit(main())"]


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_node(*args: str, log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """``ray start --block`` in its own process group, so that exactly it can be stopped."""
    cmd = [*RAY, "start", "--block", "--disable-usage-stats", "--node-ip-address=127.0.0.1",
           *args]  # fmt: skip
    return subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True, env=env or LOOPBACK)  # fmt: skip


def stop_nodes(nodes: list[subprocess.Popen]) -> None:
    """SIGTERM to each node's process group (ray start, its raylet, GCS and workers), all at
    once since each drains for up to 30 s; SIGKILL to whatever is left after 40 s."""
    for node in nodes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.pid, signal.SIGTERM)
    deadline = time.monotonic() + 40
    for node in nodes:
        while True:
            node.poll()  # reap `ray start` once it exits: a zombie still counts in its group
            try:
                os.killpg(node.pid, 0)  # is any process of the group left?
            except ProcessLookupError:
                break
            if time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(node.pid, signal.SIGKILL)
            time.sleep(0.2)
        node.wait(timeout=30)


class LocalCluster:
    """A head and ``len(cpus) - 1`` worker nodes with ``cpus[i]`` CPUs each, up on entering
    (all nodes joined) and stopped on leaving. ``address`` is the head's ``HOST:PORT``."""

    def __init__(self, cpus: list[int], logs: Path, env: dict[str, str] | None = None,
                 timeout: float = 120.0):  # fmt: skip
        if not cpus or min(cpus) < 0:
            raise ValueError(f"cpus must list each node's CPUs (>= 0); got {cpus!r}")
        self.cpus, self.logs, self.timeout = cpus, logs, timeout
        self.env = env or LOOPBACK
        self.port = closed_port()
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: list[subprocess.Popen] = []
        self._temp = ""

    def __enter__(self) -> LocalCluster:
        # Ray's socket paths must stay under 107 bytes: a deep temporary folder is too long.
        self._temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")
        self.logs.mkdir(parents=True, exist_ok=True)
        try:
            head = start_node("--head", f"--port={self.port}", f"--num-cpus={self.cpus[0]}",
                              "--include-dashboard=false", f"--temp-dir={self._temp}",
                              log=self.logs / "node0.log", env=self.env)  # fmt: skip
            self.nodes.append(head)
            self._wait_for_head()
            self._wait_for_sockets(1)
            for i, n in enumerate(self.cpus[1:], 1):
                log = self.logs / f"node{i}.log"
                node = start_node(f"--address={self.address}", f"--num-cpus={n}", log=log,
                                  env=self.env)  # fmt: skip
                self.nodes.append(node)
                self._wait_for_sockets(i + 1)
            self._wait_for_nodes()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_for_sockets(self, count: int) -> None:
        """Until ``count`` nodes made their object store's socket. Nodes on one machine share
        the session's socket folder and each picks the first free name, so two that start at
        once can pick the same one (and the second's raylet aborts): start them one by one."""
        sockets = Path(self._temp) / "session_latest" / "sockets"
        self._wait(lambda: len(list(sockets.glob("plasma_store*"))) >= count, count - 1)

    def _wait(self, ready: Callable[[], bool], node: int) -> None:
        """Poll ``ready`` until it holds; node ``node``'s log in the error if it ends first."""
        deadline = time.monotonic() + self.timeout
        while not ready():
            if self.nodes[node].poll() is not None or time.monotonic() > deadline:
                log = (self.logs / f"node{node}.log").read_text()[-2000:]
                raise RuntimeError(f"Ray node {node} did not start:\n{log}")
            time.sleep(0.2)

    def __exit__(self, *exc: object) -> None:
        stop_nodes(self.nodes)
        self.nodes = []
        shutil.rmtree(self._temp, ignore_errors=True)

    def _wait_for_head(self) -> None:
        """Until the head answers on its GCS port."""

        def answers() -> bool:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            except OSError:
                return False
            return True

        self._wait(answers, 0)

    def _wait_for_nodes(self) -> None:
        """Until every node is alive in the cluster (a driver that asks, then leaves)."""
        probe = (
            f"import ray,time;ray.init(address='{self.address}',logging_level='ERROR');"
            f"t=time.time()\nwhile sum(n['Alive'] for n in ray.nodes())<{len(self.cpus)} "
            f"and time.time()-t<{self.timeout}: time.sleep(0.5)\n"
            "print(sum(n['Alive'] for n in ray.nodes()))"
        )
        alive = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                               timeout=self.timeout + 60, env=self.env)  # fmt: skip
        if alive.stdout.strip() != str(len(self.cpus)):
            raise RuntimeError(f"{alive.stdout.strip() or 0} of {len(self.cpus)} Ray nodes "
                               f"joined:\n{alive.stderr[-2000:]}")  # fmt: skip
