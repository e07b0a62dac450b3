"""sluice.cluster's functions: plan the captures into shards, run one Ray
task per shard, prove every range's start (re-running the ranges whose
guess was wrong from their proven positions), and merge into what one
process gives."""

import os
import warnings

import sluice

from ._ray import ClusterError, Progress, connect, gather

# Ray runs a task again this many times after its worker or node is lost.
RETRIES = 3
# Files larger than this are cut into ranges of about this size when no
# split= is given (`sluice shards`'s default, 64M).
SPLIT = 64 << 20


def _paths(captures):
    """The capture list as strings (one path or pattern, or several)."""
    if isinstance(captures, (str, os.PathLike)):
        captures = [captures]
    paths = [os.fspath(c) for c in captures]
    if not paths:
        raise ClusterError("no captures given")
    return paths


def _program(obj_or_program, program, set, maps):
    """The program to run: a ``Program`` as given, or ``program`` of an
    object (an ``Object`` or its path) loaded with ``set`` and ``maps``."""
    if isinstance(obj_or_program, sluice.Program):
        if program is not None or set or maps:
            raise ClusterError("program=, set= and maps= choose and load a program of an object; a Program is loaded already")
        return obj_or_program
    obj = obj_or_program if isinstance(obj_or_program, sluice.Object) else sluice.Object(obj_or_program)
    return obj.program(program, set=set, maps=maps)


def _positive(name, value):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ClusterError(f"{name} must be a positive integer, not {value!r}")
    return value


def _proven(ray, shards, launch, progress):
    """Every range's result, in plan order, each range's start proven:
    ``launch(index, shard, proven)`` starts a range's task (its result
    has a boundary); the ranges ``sluice.check`` finds unproven run again
    from the position it proves, until none is left (at most one round
    per range: each round proves at least the first one in doubt)."""
    got = gather(ray, {i: launch(i, s, None) for i, s in enumerate(shards)}, progress)
    results = [got[i] for i in range(len(shards))]
    for _ in range(len(shards)):
        redos = sluice.check(results)
        if not redos:
            return results
        progress.add(len(redos))
        got = gather(ray, {r.index: launch(r.index, r.shard, r.position) for r in redos}, progress)
        for i, result in got.items():
            results[i] = result
    if sluice.check(results):
        raise ClusterError("ranges still unproven after a round per range (a bug: please report it)")
    return results


def run(
    obj_or_program,
    captures,
    *,
    program=None,
    address=None,
    split=None,
    flow_affine=False,
    buckets=None,
    threads=1,
    policies=None,
    table_dir=None,
    output_dir=None,
    progress=True,
    set=None,
    maps=None,
    map_entries=16,
    retries=RETRIES,
):
    """Runs a program over captures on Ray, merged as one process: the
    :class:`sluice.RunResult` of ``Program.merge`` (its ``to_json()`` has
    ``sluice run --json``'s keys and ``"merged"``).

    ``obj_or_program``: a :class:`sluice.Program`, or an object (path or
    :class:`sluice.Object`) whose program ``program`` is loaded with
    ``set`` (globals) and ``maps`` (map contents). ``captures``: paths
    and glob patterns, planned by :func:`sluice.plan` with ``split``
    (bytes, or text such as ``"64M"``; default 64 MiB). One task per
    range (``threads`` threads and Ray CPUs each), retried ``retries``
    times if its worker is lost; ``policies``: ``{map: "sum" | "union" |
    "last" | "keep"}`` over the defaults. ``table_dir`` /
    ``output_dir``: per-packet tables and output packets written there
    as partitions. ``flow_affine``: partition packets by flow into
    ``buckets`` (default: the cluster's CPUs, or more so that a bucket
    fits in half a node's object store) through Ray's object store, then
    one task per bucket, equal to ``sluice run --threads buckets`` (for
    programs whose state is per flow). ``map_entries``: entries shown
    per map in the report (``sluice run --map-entries``).
    ``address``: a Ray cluster's (default: the connection already made,
    else a local Ray started on this machine)."""
    prog = _program(obj_or_program, program, set, maps)
    threads = _positive("threads", threads)
    ray = connect(address)
    shards = sluice.plan(_paths(captures), SPLIT if split is None else split)
    ref = ray.put(prog)
    if flow_affine:
        results = _affine(ray, ref, shards, _buckets(ray, shards, buckets), retries, progress)
    else:
        if buckets is not None:
            raise ClusterError("buckets= is for flow_affine=True")
        task = _tasks().run_range.options(num_cpus=threads, max_retries=retries)
        bar = Progress("sluice run", len(shards), progress)
        try:
            results = _proven(
                ray,
                shards,
                lambda i, s, proven: task.remote(ref, s, i, proven, threads, table_dir, output_dir),
                bar,
            )
        finally:
            bar.close()
    return prog.merge(results, policies=policies, map_entries=map_entries)


def _buckets(ray, shards, buckets):
    """The buckets of a flow-affine run: ``buckets``, else the cluster's
    CPUs, or more when a bucket's blobs (about the captures' bytes over
    the buckets) would fill over half the smallest node's object store,
    where its task's arguments must fit (a warning when ``buckets`` given
    is that few)."""
    data = sum(s.end - s.start for s in shards)
    stores = [n["Resources"].get("object_store_memory", 0) for n in ray.nodes() if n.get("Alive")]
    room = max(1, int(min(stores, default=0) // 2))
    enough = max(1, -(-data // room))
    if buckets is None:
        return max(enough, int(ray.cluster_resources().get("CPU", 1)))
    buckets = _positive("buckets", buckets)
    if buckets < enough:
        warnings.warn(
            f"flow-affine: {buckets} buckets of about {data // buckets:,} bytes each; a node's object store "
            f"holds {2 * room:,}: the bucket tasks may wait for memory (use {enough} buckets or more)",
            stacklevel=3,
        )
    return buckets


def _affine(ray, ref, shards, buckets, retries, progress):
    """Flow-affine: one partition task per range (its buckets' blobs kept
    in Ray's object store), the partitions' boundaries proven, then one
    task per bucket over that bucket's blobs of every range, in plan
    order. The buckets' results."""
    tasks = _tasks()
    part = tasks.partition_range.options(num_returns=buckets + 1, max_retries=retries)
    blobs = {}

    def launch(i, shard, proven):
        refs = part.remote(ref, shard, i, buckets, proven)
        blobs[i] = refs[1:]
        return refs[0]

    bar = Progress("sluice partition", len(shards), progress)
    try:
        _proven(ray, shards, launch, bar)
    finally:
        bar.close()
    task = tasks.run_bucket.options(max_retries=retries)
    bar = Progress("sluice run (buckets)", buckets, progress)
    try:
        got = gather(
            ray,
            {b: task.remote(ref, b, buckets, *(blobs[i][b] for i in range(len(shards)))) for b in range(buckets)},
            bar,
        )
    finally:
        bar.close()
    return [got[b] for b in range(buckets)]


def flows(
    captures,
    *,
    address=None,
    split=None,
    progress=True,
    retries=RETRIES,
    capacity=None,
    idle=15.0,
    active=1800.0,
):
    """Flow accounting over captures on Ray, as ``sluice monitor flows``
    over each capture in one process, one after another: a
    :class:`sluice.MonitorResult` (a flow seen in several ranges of a file
    is one record, its timeouts applied as one process applies them; the
    summary's ``"inexact"`` says when that could not be known).
    ``capacity``, ``idle``, ``active``: as :func:`sluice.flows` (its
    ``"table"`` engine); the others as :func:`run`."""
    options = {"capacity": capacity, "idle": idle, "active": active}
    ray = connect(address)
    shards = sluice.plan(_paths(captures), SPLIT if split is None else split)
    task = _tasks().flows_range.options(max_retries=retries)
    bar = Progress("sluice flows", len(shards), progress)
    try:
        parts = _proven(ray, shards, lambda i, s, proven: task.remote(s, i, proven, options), bar)
    finally:
        bar.close()
    return sluice.merge_flows(parts, **options)


def filter(
    expr,
    captures,
    *,
    address=None,
    split=None,
    output_dir=None,
    progress=True,
    retries=RETRIES,
):
    """A tcpdump filter over captures on Ray, as ``sluice filter -r`` over
    them in one process: a :class:`sluice.FilterResult`. ``expr``: the
    expression (compiled for the first capture's link type) or a
    :class:`sluice.Filter`; ``output_dir``: matching packets written there
    as pcap partitions. The others as :func:`run`."""
    ray = connect(address)
    shards = sluice.plan(_paths(captures), SPLIT if split is None else split)
    if not shards:
        raise ClusterError("the captures hold no file")
    compiled = expr if isinstance(expr, sluice.Filter) else sluice.Filter(expr, pcap=shards[0].path)
    # What the tasks compile again (a Filter is not pickled: its expression is).
    spec = (compiled.expr, compiled.linktype, compiled.snaplen)
    task = _tasks().filter_range.options(max_retries=retries)
    bar = Progress("sluice filter", len(shards), progress)
    try:
        parts = _proven(ray, shards, lambda i, s, proven: task.remote(spec, s, i, proven, output_dir), bar)
    finally:
        bar.close()
    return compiled.merge(parts)


def _tasks():
    """The tasks' module (imports Ray: after :func:`connect`)."""
    from . import _tasks

    return _tasks
