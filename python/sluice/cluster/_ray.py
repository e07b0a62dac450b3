"""Ray for sluice.cluster: connecting (a local Ray, or a cluster's
address), gathering tasks' results as they finish with a progress bar, and
a failed task's exception made into one of sluice's."""

import logging
import sys

from .. import Error


class ClusterError(Error):
    """A cluster run failed outside sluice's engine: Ray missing or not
    reachable, a task lost more often than Ray retries it, an argument
    the cluster functions refuse."""


def ray_module():
    """The ``ray`` module, or :class:`ClusterError` saying how to install it."""
    try:
        import ray
    except ImportError as e:
        raise ClusterError(
            f"sluice.cluster needs Ray ({e}): pip install 'sluice[cluster]' (or pip install ray)"
        ) from None
    return ray


def connect(address=None):
    """Connects to Ray: an existing connection is kept; without ``address``
    a local Ray starts on this machine (``ray.init()``), with it the
    cluster at that address (``ray.init(address=...)``). The module."""
    ray = ray_module()
    if ray.is_initialized():
        return ray
    try:
        if address is None:
            # "local": a new Ray of this process, never a cluster found on the machine.
            ray.init(address="local", log_to_driver=False, include_dashboard=False, logging_level=logging.WARNING)
        else:
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
    except (ConnectionError, RuntimeError, ValueError) as e:
        where = f"at {address}" if address else "on this machine"
        raise ClusterError(f"Ray {where} did not start or answer: {e}") from None
    return ray


class Progress:
    """Tasks done out of tasks started: tqdm's bar on standard error when
    tqdm is installed (a line per tenth done otherwise); silent when off."""

    def __init__(self, what, total, on=True):
        self.what, self.total, self.done, self.bar = what, total, 0, None
        self.on = on
        if not on:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            return
        self.bar = tqdm(total=total, desc=what, unit="task", file=sys.stderr, leave=False)

    def add(self, tasks):
        """Counts ``tasks`` more started (re-reads)."""
        self.total += tasks
        if self.bar is not None:
            self.bar.total = self.total
            self.bar.refresh()

    def step(self):
        """Counts one task done."""
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)
        elif self.on and (self.done == self.total or self.done % max(1, self.total // 10) == 0):
            print(f"{self.what}: {self.done}/{self.total} tasks", file=sys.stderr)

    def close(self):
        """Removes the bar."""
        if self.bar is not None:
            self.bar.close()


def gather(ray, refs, progress):
    """``{key: result}`` for ``refs`` (``{key: ObjectRef}``), taken as the
    tasks finish (``ray.wait``); a task's exception is raised as sluice's
    (the engine's own error, or :class:`ClusterError` when Ray gave up)."""
    keys = {ref: key for key, ref in refs.items()}
    pending, results = list(keys), {}
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for ref in done:
            results[keys[ref]] = get(ray, ref)
            progress.step()
    return results


def get(ray, ref):
    """``ray.get(ref)``, its exception made into sluice's."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as e:
        cause = e.cause
        if isinstance(cause, Error):
            raise cause from None
        raise ClusterError(f"a cluster task failed: {cause!r}") from None
    except ray.exceptions.RayError as e:
        # Worker or node lost more often than the task's retries allow,
        # an object lost with its owner, ...
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ClusterError(f"a cluster task was lost: {type(e).__name__}: {first}") from None
