"""Which threads run torch's CPU work, and why it matters: libgomp's thread pools.

PyTorch's CPU build runs its parallel ops on GNU OpenMP (libgomp). Every thread that runs one becomes
the master of its own pool of ``torch.get_num_threads() - 1`` helper threads, and the pool lives as
long as that thread. Once libgomp manages more threads than there are CPUs it stops spinning between
parallel regions and parks its helpers instead, so each op waits for a helper to wake. A live step is
hundreds of small ops: on the 2-core machine a live session pushed from a second thread, after the
first thread had loaded the model (what the server did: it loads in its main thread and pushes from
the web server's worker threads), ran at about half speed (``python -m bench.torch_threads``,
``bench/results/torch_threads.md``).

Two rules follow, on a CPU (a GPU runs its work as kernels and keeps the callers' threads):

- loading and the readiness round trip run in a thread that ends (:func:`in_passing_thread`), so the
  thread that started the server keeps no pool;
- every live session's model work runs on one thread (:class:`OneThread`, owned by
  ``core.model.live.LiveSessions``): on a CPU the sessions take turns on the engine's lock anyway.

A job (a round trip) in another thread while a session runs still makes a second pool for as long as
the job's thread lives.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import threading
from collections.abc import Callable
from typing import TypeVar

import torch

T = TypeVar("T")


def _threads_of_caller() -> Callable[[], None]:
    """What sets, in another thread, the caller's torch thread count (OpenMP's and MKL's counts are
    per thread: a count set in the caller after that thread started does not reach it)."""
    count = torch.get_num_threads()

    def same() -> None:
        if torch.get_num_threads() != count:
            torch.set_num_threads(count)

    return same


def in_passing_thread(fn: Callable[..., T], *args, name: str = "torch-passing") -> T:
    """``fn(*args)`` in a new thread that ends when it returns (its OpenMP pool ends with it), in a
    copy of the caller's context variables (a web framework's progress reporter lives in one); its
    exception is raised here."""
    result: list = []
    error: list[BaseException] = []
    same_threads = _threads_of_caller()
    context = contextvars.copy_context()

    def body() -> None:
        try:
            same_threads()
            result.append(context.run(fn, *args))
        except BaseException as e:  # noqa: BLE001 - handed to the caller as it is
            error.append(e)

    thread = threading.Thread(target=body, name=name, daemon=True)
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return result[0]


class OneThread:
    """One long-lived thread that runs the calls given to it, one at a time, in order, each with its
    caller's torch thread count."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._ident: int | None = None
        self._guard = threading.Lock()

    def call(self, fn: Callable[..., T], *args) -> T:
        """``fn(*args)`` on the thread, waiting for it; called from the thread itself, it runs at once."""
        if threading.get_ident() == self._ident:
            return fn(*args)
        with self._guard:
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=self.name)
                self._ident = self._executor.submit(threading.get_ident).result()
            executor = self._executor
        same_threads = _threads_of_caller()

        def body():
            same_threads()
            return fn(*args)

        return executor.submit(body).result()
