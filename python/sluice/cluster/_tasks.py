"""The Ray tasks of sluice.cluster: a program over one range, flow
accounting or a tcpdump filter over one range, a range partitioned into
flow buckets, a program over one bucket. Each is a function of its
arguments alone (outputs are written atomically by the library, under
names of their range), so Ray may run it again on another worker after a
worker is lost, and the result is the same."""

import os
from contextlib import contextmanager

import ray

import sluice

# When set in a worker's environment (the tests set it for the nodes they
# start), every task writes ``start-KIND-INDEX-PID`` into this folder as it
# starts and ``end-KIND-INDEX-PID`` as it ends: which worker process runs
# which range, so that a test can kill one mid-task and see it run again.
MARK_ENV = "SLUICE_CLUSTER_MARK_DIR"


@contextmanager
def marked(kind, index):
    """Marks the task's start and end (see ``MARK_ENV``)."""
    folder = os.environ.get(MARK_ENV)
    name = f"{kind}-{index}-{os.getpid()}"
    if folder:
        open(os.path.join(folder, f"start-{name}"), "w").close()
    yield
    if folder:
        open(os.path.join(folder, f"end-{name}"), "w").close()


@ray.remote
def run_range(program, shard, index, proven, threads, table_dir, output_dir):
    """``program.run_shard`` over one range: a ``sluice.ShardResult``."""
    with marked("run", index):
        return program.run_shard(
            shard, proven=proven, threads=threads, table_dir=table_dir, output_dir=output_dir
        )


@ray.remote
def flows_range(shard, index, proven, options):
    """``sluice.flows_shard`` over one range: a ``sluice.FlowsShard``."""
    with marked("flows", index):
        return sluice.flows_shard(shard, proven=proven, **options)


@ray.remote
def filter_range(spec, shard, index, proven, output_dir):
    """``Filter.run_shard`` over one range: a ``sluice.FilterShard``;
    ``spec``: the filter's (expression, link type, snapshot length)."""
    expr, linktype, snaplen = spec
    with marked("filter", index):
        return sluice.Filter(expr, linktype=linktype, snaplen=snaplen).run_shard(
            shard, proven=proven, output_dir=output_dir
        )


@ray.remote
def partition_range(program, shard, index, buckets, proven):
    """``program.partition`` of one range: the ``sluice.Partition`` then one
    blob per bucket, as the task's ``buckets + 1`` return values (each blob
    its own object in Ray's object store, fetched by its bucket's task)."""
    with marked("partition", index):
        partition, blobs = program.partition(shard, buckets, proven=proven)
        return (partition, *blobs)


@ray.remote
def run_bucket(program, bucket, buckets, *blobs):
    """``program.run_bucket`` over bucket ``bucket``'s packets of every
    range (``blobs``: one per range, plan order; Ray resolves them)."""
    with marked("bucket", bucket):
        return program.run_bucket(bucket, buckets, list(blobs))
