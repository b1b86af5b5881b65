"""Fork safety: a child forked while another thread runs a fit must not inherit a lock
held by a thread it does not have.

``os.fork`` copies only the calling thread. Whatever another thread held at that moment
stays held in the child forever: a lock of the library (the kernel build lock, numba's
compiler lock), a pool's bookkeeping, or an import in progress. The last is the common
one: the first fit of a process imports the estimators, scikit-learn, scipy and the
engines (seconds of imports), and Python's per-module import locks are not reset at
fork, so a child that imports a module the other thread was importing waits forever
(a ``multiprocessing`` "fork" pool hangs until its timeout).

This module installs one set of ``os.register_at_fork`` handlers, on ``import objpert``
(the library's modules register none of their own: every fork-sensitive resource is
listed here, in :data:`RESOURCES` and :data:`LOCKS`):

- before a fork, it waits (at most :data:`SETTLE_SECONDS`) until no other thread is in
  the middle of an import, then runs the ``before`` hooks of :data:`RESOURCES` (the kernel
  build takes its build lock and numba's compiler lock, waiting for a build or compile
  running in another thread to finish); when an import started meanwhile, it undoes them
  and waits again;
- in the parent after the fork, the hooks' ``after_in_parent`` (releasing those locks);
- in the child, it frees the import locks still owned by threads that do not exist there
  (an import that did not settle in time then fails in the child with an ImportError
  instead of hanging), re-creates the module-level locks of :data:`LOCKS`, and runs the
  hooks' ``after_in_child`` (locks released or re-created, thread pools forgotten: their
  threads do not exist in the child).

CPython runs the ``before`` handlers registered when the fork began, but the ``after``
handlers registered by then: a module first imported while the fork waits gets its
``after`` handlers without its ``before``. :mod:`concurrent.futures.thread` (whose
handlers take and release a lock; the engines' pools import it) is therefore imported
here, ahead of any fork.

What each part of the library does in a child: the engines' thread pools
(:mod:`objpert._engines.blocked`) are forgotten and started afresh; the BLAS limit of a
sweep running in another thread is lifted; numba's parallel kernels are not launched in
a child forked after numba's thread pool started (:func:`objpert._engines.compiled.
parallel_kernel`); the caches of :mod:`objpert.accounting` and :mod:`objpert.certify` are
``functools.lru_cache`` (no lock).
"""

from __future__ import annotations

import _thread
import concurrent.futures.thread  # noqa: F401 (its fork handlers before ours: see below)
import os
import sys
import threading
import time
from collections.abc import Callable

__all__ = ["LOCKS", "RESOURCES", "SETTLE_SECONDS", "imports_in_progress"]

#: The longest a fork waits for imports of other threads to finish (the first fit of a
#: process imports for a second or two).
SETTLE_SECONDS = 30.0

#: (module, before, after_in_parent, after_in_child): functions of a loaded module run
#: around a fork (None: nothing). ``before`` runs in this order, the others in reverse;
#: a ``before`` must not import, and its ``after_in_parent`` undoes it (also before the
#: fork, when an import started while the hooks held their locks).
RESOURCES: tuple[tuple[str, str | None, str | None, str | None], ...] = (
    # the build lock and numba's compiler lock: held across the fork, released on both sides
    ("objpert._engines.compiled.build", "_before_fork", "_after_fork", "_after_fork"),
    # the lock of numba's parallel launches
    ("objpert._engines.compiled", None, None, "_after_fork_in_child"),
    # the engines' thread pools, their lock and the sweeps' process-wide BLAS limit
    ("objpert._engines.blocked", None, None, "_after_fork_in_child"),
)

#: Module-level locks (module, attribute) re-created in a forked child, where the module
#: is loaded.
LOCKS: tuple[tuple[str, str], ...] = (("objpert.estimators._selection", "_lock"),)

#: Per forking thread: the after_in_parent hooks of the before hooks it ran.
_RAN: dict[int, list[Callable[[], None]]] = {}


def _hooks(which: int) -> list[tuple[Callable[[], None] | None, Callable[[], None] | None]]:
    """(hook number ``which``, its after_in_parent) of each loaded module of RESOURCES."""
    out = []
    for entry in RESOURCES:
        module = sys.modules.get(entry[0])
        if module is None:
            continue
        hook = getattr(module, entry[which]) if entry[which] else None
        undo = getattr(module, entry[2]) if entry[2] else None
        out.append((hook, undo))
    return out


def _module_locks() -> list[object]:
    """The import system's per-module locks now alive (CPython's importlib)."""
    bootstrap = sys.modules.get("_frozen_importlib")  # importlib._bootstrap
    table = getattr(bootstrap, "_module_locks", None)
    if not table:
        return []
    for _ in range(3):
        try:
            refs = list(table.values())
            break
        except RuntimeError:  # changed size meanwhile (a lock collected): read it again
            continue
    else:
        return []
    out = []
    for ref in refs:
        try:
            lock = ref()
        except TypeError:  # a table of locks rather than weak references
            lock = ref
        if lock is not None:
            out.append(lock)
    return out


def imports_in_progress() -> list[str]:
    """The modules that threads other than this one are importing now."""
    me = threading.get_ident()
    return [
        str(getattr(lock, "name", "?"))
        for lock in _module_locks()
        if getattr(lock, "owner", None) not in (None, me)
    ]


def _settle(deadline: float) -> bool:
    """Wait until no other thread is importing (True), or until ``deadline`` (False)."""
    pause = 0.001
    while imports_in_progress():
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(2 * pause, 0.02)
    return True


def _undo() -> None:
    for undo in reversed(_RAN.pop(threading.get_ident(), [])):
        undo()


def _before() -> None:
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        settled = _settle(deadline)
        ran = _RAN.setdefault(threading.get_ident(), [])
        for before, undo in _hooks(1):
            if before is None:
                continue
            before()
            if undo is not None:
                ran.append(undo)
        if not settled or not imports_in_progress() or time.monotonic() >= deadline:
            return
        _undo()  # an import started while the hooks waited: let it finish (it may need them)


def _after_in_parent() -> None:
    _undo()


def _free_import_locks() -> None:
    """In the child: the per-module import locks owned by threads of the parent (which do
    not exist here) made free."""
    me = threading.get_ident()
    for lock in _module_locks():
        if getattr(lock, "owner", None) in (None, me):
            continue
        try:
            count, waiters = lock.count, lock.waiters  # type: ignore[attr-defined]
            reentrant = isinstance(lock.lock, _thread.RLock)  # type: ignore[attr-defined]
            lock.lock = _thread.RLock() if reentrant else _thread.allocate_lock()  # type: ignore[attr-defined]
            lock.wakeup = _thread.allocate_lock()  # type: ignore[attr-defined]
            lock.count = type(count)()  # type: ignore[attr-defined]
            lock.waiters = type(waiters)()  # type: ignore[attr-defined]
            lock.owner = None  # type: ignore[attr-defined]
        except (AttributeError, TypeError):  # another importlib: leave it
            continue


def _after_in_child() -> None:
    _RAN.clear()
    _free_import_locks()
    for module, name in LOCKS:
        loaded = sys.modules.get(module)
        if loaded is not None and hasattr(loaded, name):
            setattr(loaded, name, threading.Lock())
    for hook, _ in reversed(_hooks(3)):
        if hook is not None:
            hook()


os.register_at_fork(
    before=_before, after_in_parent=_after_in_parent, after_in_child=_after_in_child
)
