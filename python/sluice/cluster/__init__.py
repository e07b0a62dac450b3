"""sluice on a Ray cluster: a program, a tcpdump filter or flow
accounting run over many captures, or huge ones cut into byte ranges, as
Ray tasks, and merged into exactly what one process gives.

    >>> import sluice.cluster
    >>> res = sluice.cluster.run("xdp_count.o", ["day/*.pcap"], split=64 << 20)
    >>> res.verdicts, res.report["merged"]

:func:`run` gives a :class:`sluice.RunResult` (``Program.merge`` of the
ranges' results: verdict counts and costs summed, maps merged by a
policy per map, the report of ``sluice run --json`` plus ``"merged"``);
``flow_affine=True`` partitions packets by flow into buckets first (for
stateful programs: equal to ``sluice run --threads N``). :func:`flows`
gives ``sluice monitor flows``'s :class:`sluice.MonitorResult`,
:func:`filter` ``sluice filter``'s :class:`sluice.FilterResult`.

Every range's first record is proven (``sluice.check``) and the ranges
whose guess was wrong are read again from their proven position; a task
whose worker is lost is run again by Ray. Without ``address=`` a local
Ray starts on this machine; an existing connection (``ray.init(...)``
made before, with your ``runtime_env``) is used as it is. Needs Ray:
``pip install 'sluice[cluster]'``. The command line: ``sluice-cluster``
(:mod:`sluice.cluster.cli`); docs/cluster.md.
"""

from ._api import filter, flows, run
from ._ray import ClusterError

__all__ = ["ClusterError", "filter", "flows", "run"]
