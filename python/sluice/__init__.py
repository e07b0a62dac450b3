"""sluice from Python: eBPF packet programs run over captures in sluice's
userspace VM (verified, JIT-compiled), the results as Arrow tables.

    >>> import sluice
    >>> prog = sluice.Object("xdp_count.o").program()
    >>> res = prog.run(pcap="trace.pcap")
    >>> res.verdicts
    {'PASS': 10}
    >>> res.packets.to_pandas()

:class:`Object` opens an object (a path or bytes), :meth:`Object.program`
picks a program, :meth:`Program.run` replays packets through it and gives a
:class:`RunResult`: the report of ``sluice run --json`` (:attr:`RunResult.report`),
its verdict counts (:attr:`RunResult.verdicts`) and one row per packet
(:attr:`RunResult.packets`, a ``pyarrow.Table``). Errors raise
:class:`Error` (or :class:`ObjectError`, :class:`SourceError`,
:class:`VerifierError`, :class:`MapError`) with the messages of the
``sluice`` command line.
``run(coverage=True)`` also counts the C source lines, branches and
functions the packets ran (:attr:`RunResult.coverage`, a :class:`Coverage`
that adds up over runs and writes lcov).

A program holds its maps as a program loaded in the kernel does: runs
continue on them, :attr:`Program.maps` reads and writes them (a
:class:`Map` is dict-like, :meth:`Map.to_arrow` a table), :meth:`Program.reset`
starts again. :meth:`Program.verify` checks it as ``sluice verify`` does
(a :class:`VerifyResult`).

:class:`Filter` compiles a tcpdump expression (its program, ``sluice filter
-d``'s text, :meth:`Filter.matches`) and filters captures
(:meth:`Filter.run`, a :class:`FilterResult`); :class:`Tc` runs packets
through a tc configuration (:meth:`Tc.run`, a :class:`TcResult` with every
filter's counters). Every ``run`` takes a capture's path, bytes or file
object, packets in memory or generated traffic, and stops on Ctrl-C
(``KeyboardInterrupt``, its ``result`` the partial result).

:meth:`Program.profile` profiles a program's cost per packet (a
:class:`Profile`: the cost model's ``alpha`` and ``beta``, a table per
packet, :meth:`Profile.plot`). :func:`flows`, :func:`rtt` and :func:`sample`
run ``sluice monitor``'s applications (flow accounting, passive RTT,
trajectory sampling) and give a :class:`MonitorResult` whose ``records`` is a
``pyarrow.Table``.

:func:`plan` cuts a capture list into :class:`Shard` objects (whole files, byte
ranges), :meth:`Program.run_shard` runs one (a :class:`ShardResult`),
:func:`check` lists the ranges to read again (:class:`Redo`) and
:meth:`Program.merge` gives the one process's :class:`RunResult`; all pickle,
for a cluster's workers.

:meth:`Program.partition` splits a range of a capture by flow into the buckets
of N workers (a :class:`Partition` and a blob per bucket), and
:meth:`Program.run_bucket` runs one bucket as worker B of ``sluice run
--threads N`` (a :class:`BucketResult`): flow-affine runs on a cluster.
"""

from ._sluice import (
    BucketResult,
    Coverage,
    Error,
    Filter,
    FilterError,
    FilterResult,
    MonitorResult,
    Object,
    ObjectError,
    PacketStream,
    Partition,
    Profile,
    Program,
    RunResult,
    SourceError,
    Tc,
    TcError,
    TcResult,
    VerifierError,
    flows,
    rtt,
    sample,
)

# Maps and verify().
from ._sluice import Map, MapError, Maps, VerifyResult

# Shards of a capture list, runs over them, their merge.
from ._sluice import MergeError, Redo, Shard, ShardResult, check, plan

# Flows and filters over shards (pickling's constructors too).
from ._sluice import FilterShard, FlowsShard, flows_shard, merge_flows
from ._sluice import _filter_shard_from_bytes, _flows_shard_from_bytes

__all__ = [
    "BucketResult",
    "Coverage",
    "Error",
    "Filter",
    "FilterError",
    "FilterResult",
    "MonitorResult",
    "Object",
    "ObjectError",
    "PacketStream",
    "Partition",
    "Profile",
    "Program",
    "RunResult",
    "SourceError",
    "Tc",
    "TcError",
    "TcResult",
    "VerifierError",
    # Maps and verify().
    "Map",
    "MapError",
    "Maps",
    "VerifyResult",
    # Flows, RTT, sampling and profiles.
    "flows",
    "rtt",
    "sample",
    # Shards.
    "MergeError",
    "Redo",
    "Shard",
    "ShardResult",
    "check",
    "plan",
    # Flows and filters over shards.
    "FilterShard",
    "FlowsShard",
    "flows_shard",
    "merge_flows",
]
