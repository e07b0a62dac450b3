"""``sluice-cluster``: sluice.cluster's command line (run, filter, flows
over captures on Ray), its reports those of ``sluice run``, ``sluice
filter`` and ``sluice monitor flows``; an error is one line on standard
error and exit status 1."""

import argparse
import contextlib
import json
import re
import sys

import sluice

from . import _api, _text


class _Parser(argparse.ArgumentParser):
    """argparse, its errors one line and exit status 1."""

    def error(self, message):
        print(f"sluice-cluster: {message} (sluice-cluster {self.prog.split()[-1]} -h)", file=sys.stderr)
        sys.exit(1)


_SIZE = re.compile(r"^([0-9]+)([KMG]?)$", re.IGNORECASE)


def _size(text):
    """``64M``, ``1G``, ``4096``: bytes (binary multiples), as ``sluice shards --split``."""
    m = _SIZE.match(text.strip())
    if not m or int(m.group(1)) == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size: bytes, or with K, M or G (64M)")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2).upper()]


def _positive(text):
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return n


def _assignment(text):
    """``NAME=VALUE``: a (name, value) pair."""
    name, eq, value = text.partition("=")
    if not eq or not name or not value:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    return name, value


def _integer_assignment(text):
    """``NAME=VALUE`` with an integer value (decimal, 0x hex)."""
    name, value = _assignment(text)
    try:
        return name, int(value, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: {value!r} is not an integer") from None


def _common(p):
    """The options every subcommand takes."""
    p.add_argument("--address", metavar="ADDR", help="a Ray cluster's address (default: start a local Ray)")
    p.add_argument(
        "--split",
        metavar="BYTES",
        type=_size,
        help="cut files larger than this into byte ranges of about this size (bytes, or with K, M or G) [default: 64M]",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a progress bar on standard error (default: when it is a terminal)",
    )


def parser():
    """The command line's parser."""
    top = _Parser(
        prog="sluice-cluster",
        description="Run a program, a tcpdump filter or flow accounting over captures on a Ray cluster, "
        "merged exactly as one process (docs/cluster.md)",
    )
    sub = top.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run a program over captures: the report of `sluice run`")
    run.add_argument("object", metavar="OBJ", help="object file built by clang -target bpf")
    run.add_argument("captures", metavar="CAPTURE", nargs="+", help="captures: files and glob patterns")
    run.add_argument("--program", metavar="NAME", help="program to run (needed when the object has several)")
    run.add_argument("--flow-affine", action="store_true", help="partition packets by flow into buckets first")
    run.add_argument("--buckets", metavar="N", type=_positive, help="with --flow-affine: buckets (default: CPUs)")
    run.add_argument("--threads", metavar="N", type=_positive, default=1, help="threads per task [default: 1]")
    run.add_argument(
        "--policy",
        metavar="MAP=POLICY",
        type=_assignment,
        action="append",
        default=[],
        help="how a map is merged: sum, union, last or keep (per range)",
    )
    run.add_argument(
        "--set", metavar="NAME=VALUE", type=_integer_assignment, action="append", default=[], help="set a global"
    )
    run.add_argument(
        "--map-entries", metavar="N", type=_positive, default=16, help="entries shown per map [default: 16]"
    )
    run.add_argument("--table-dir", metavar="DIR", help="write per-packet tables here (Parquet partitions)")
    run.add_argument("--output-dir", metavar="DIR", help="write output packets here (pcap partitions)")
    _common(run)

    filt = sub.add_parser("filter", help="filter captures with a tcpdump expression: the report of `sluice filter`")
    filt.add_argument("expression", metavar="EXPR", help="tcpdump expression")
    filt.add_argument("captures", metavar="CAPTURE", nargs="+", help="captures: files and glob patterns")
    filt.add_argument("--output-dir", metavar="DIR", help="write matching packets here (pcap partitions)")
    _common(filt)

    flows = sub.add_parser(
        "flows", help="flow accounting over captures (the table engine): the records of `sluice monitor flows`"
    )
    flows.add_argument("captures", metavar="CAPTURE", nargs="+", help="captures: files and glob patterns")
    flows.add_argument("--capacity", metavar="N", type=_positive, help="flows kept at once")
    flows.add_argument("--idle", metavar="S", type=float, default=15.0, help="seconds without a packet that end a flow")
    flows.add_argument("--active", metavar="S", type=float, default=1800.0, help="seconds after which a flow restarts")
    _common(flows)
    return top


def _run(a, progress):
    result = _api.run(
        a.object,
        a.captures,
        program=a.program,
        address=a.address,
        split=a.split,
        flow_affine=a.flow_affine,
        buckets=a.buckets,
        threads=a.threads,
        policies=dict(a.policy) or None,
        table_dir=a.table_dir,
        output_dir=a.output_dir,
        progress=progress,
        set=dict(a.set) or None,
        map_entries=a.map_entries,
    )
    return result.to_json() + "\n" if a.json else _text.run_text(result.report)


def _filter(a, progress):
    result = _api.filter(
        a.expression, a.captures, address=a.address, split=a.split, output_dir=a.output_dir, progress=progress
    )
    return json.dumps(result.report, indent=2) + "\n" if a.json else _text.filter_text(result.report)


def _flows(a, progress):
    result = _api.flows(
        a.captures,
        address=a.address,
        split=a.split,
        progress=progress,
        capacity=a.capacity,
        idle=a.idle,
        active=a.active,
    )
    records = [{k: v for k, v in r.items() if v is not None} for r in _plain(result.records).to_pylist()]
    if not a.json:
        return _text.flows_text(result.summary, records)
    lines = [json.dumps(r, separators=(",", ":")) for r in records]
    lines.append(json.dumps({"summary": result.summary}, separators=(",", ":"), sort_keys=True))
    return "\n".join(lines) + "\n"


def _plain(table):
    """``table`` with its timestamps as integers (as ``--json`` prints them)."""
    import pyarrow as pa

    for i, field in enumerate(table.schema):
        if pa.types.is_timestamp(field.type):
            table = table.set_column(i, field.name, table.column(i).cast(pa.int64()))
    return table


def main(argv=None):
    """The ``sluice-cluster`` command; its exit status."""
    a = parser().parse_args(argv)
    progress = sys.stderr.isatty() if a.progress is None else a.progress
    command = {"run": _run, "filter": _filter, "flows": _flows}[a.command]
    try:
        # Ray's messages (a worker lost, a task retried) go to standard
        # error: standard output holds the report alone.
        with contextlib.redirect_stdout(sys.stderr):
            text = command(a, progress)
    except sluice.Error as e:
        print(f"sluice-cluster: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("sluice-cluster: interrupted", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
