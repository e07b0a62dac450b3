"""Type stubs of sluice's native module (python/src/, PyO3)."""

import ipaddress
import os
from typing import Any, BinaryIO, Iterable, Iterator, Mapping, Optional, Sequence, Tuple, Union

import pyarrow

_Packet = Union[bytes, bytearray, Tuple[int, Union[bytes, bytearray]], Any]
# A capture: its path, its bytes, or a binary file object (with .read()).
_Capture = Union[str, os.PathLike[str], bytes, bytearray, BinaryIO]
# Routes kept in memory: True (all), a route ("tx") or a list of routes.
_Output = Union[bool, str, Sequence[str], None]

class Error(Exception):
    """An error of sluice's engine; its message is the one the `sluice` command line prints."""

class ObjectError(Error):
    """The object did not read or parse, or has no such program."""

class SourceError(Error):
    """The packets' source did not open: a capture not read, a generator spec refused."""

class VerifierError(Error):
    """The verifier rejected the program; the message says where and why."""

    program: str
    insn: int
    line: Optional[str]
    explanation: str
    kernel_message: str

class MapError(Error):
    """A map operation failed: no such map, a key or value that does not fit, an update refused."""

class FilterError(Error):
    """A tcpdump expression did not compile (libpcap's message), or packets could not be filtered."""

class TcError(Error):
    """A tc configuration did not load: a line tc would refuse, no qdisc, no device to take packets."""

class Object:
    """An eBPF object file built by ``clang -target bpf``: a path, or its bytes."""

    def __init__(
        self, source: Union[str, os.PathLike[str], bytes, bytearray], name: Optional[str] = None
    ) -> None: ...
    @property
    def name(self) -> str:
        """Its path, or the name given with its bytes."""
    @property
    def programs(self) -> list[str]:
        """The names of the object's programs, in the object's order."""
    @property
    def maps(self) -> list[dict[str, Any]]:
        """The object's maps as declared: name, type, key_size, value_size, max_entries, flags, cpus."""
    def program(
        self,
        name: Optional[str] = None,
        *,
        set: Optional[Mapping[str, int]] = None,
        map_size: Optional[Mapping[str, int]] = None,
        map_size_default: Optional[int] = None,
        maps: Optional[Mapping[str, Mapping[Any, Any]]] = None,
        cpus: int = 1,
    ) -> Program:
        """The program ``name``, loaded with its globals, map sizes and map contents."""

class Program:
    """A program of an :class:`Object`, from :meth:`Object.program`."""

    @property
    def name(self) -> str: ...
    @property
    def object(self) -> str: ...
    @property
    def cpus(self) -> int:
        """The CPUs the per-CPU maps hold a value for."""
    @property
    def maps(self) -> Maps:
        """The program's maps by name."""
    def reset(self) -> None:
        """Starts again from fresh maps."""
    def verify(
        self, *, kernel: Optional[bool] = None, unprivileged: bool = False, log: bool = False
    ) -> VerifyResult:
        """Checks the program as ``sluice verify`` does."""
    def run(
        self,
        pcap: Optional[_Capture] = None,
        packets: Optional[Iterable[_Packet]] = None,
        gen: Union[str, Sequence[str], None] = None,
        *,
        threads: int = 1,
        shard: str = "auto",
        engine: str = "jit",
        limit: Optional[int] = None,
        filter: Optional[str] = None,
        per_packet: bool = True,
        map_entries: int = 16,
        count_memory: bool = False,
        coverage: bool = False,
        output: _Output = None,
    ) -> RunResult:
        """Runs the program over exactly one of ``pcap``, ``packets``, ``gen``.

        Ctrl-C raises ``KeyboardInterrupt`` with the partial result as its ``result``.
        """
    def profile(
        self,
        pcap: Union[str, os.PathLike[str], None] = None,
        packets: Optional[Iterable[_Packet]] = None,
        gen: Union[str, Sequence[str], None] = None,
        *,
        engine: str = "jit",
        limit: Optional[int] = None,
        filter: Optional[str] = None,
        warm_up: bool = False,
    ) -> Profile:
        """Profiles the program's cost per packet, as ``sluice profile`` does."""
    def run_shard(
        self,
        shard: Union[Shard, Mapping[str, Any], Any],
        proven: Optional[Mapping[str, Any]] = None,
        *,
        threads: int = 1,
        cpu: Optional[int] = None,
        table_dir: Union[str, os.PathLike[str], None] = None,
        output_dir: Union[str, os.PathLike[str], None] = None,
    ) -> ShardResult:
        """Runs the program over one shard on fresh maps: the range's counts, maps and proof, raw.

        ``table_dir``: ``part-{index:05}.parquet``; ``output_dir``: ``{route}/part-{index:05}.pcap``
        (written atomically). ``proven``: :attr:`Redo.position` for a range :func:`check` listed.
        """
    def merge(
        self,
        results: Union[Sequence[ShardResult], Sequence[BucketResult]],
        policies: Optional[Mapping[str, str]] = None,
        *,
        map_entries: int = 16,
    ) -> RunResult:
        """Merges the runs over every shard of a plan (plan order, proven) into one process's result.

        ``policies``: ``{map: "sum" | "union" | "last" | "keep"}`` over the defaults.
        ``results`` may instead be every :class:`BucketResult` of a flow-affine run (bucket
        order): ``sluice run --threads BUCKETS``'s result. Raises :class:`MergeError` for a
        range not proven or missing, results of both kinds.
        """
    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        """Pickles as its specification (object, settings, ``maps=``), not the maps it holds."""
    def partition(
        self,
        shard: Any,
        buckets: int,
        proven: Union[Mapping[str, Any], str, bytes, None] = None,
        *,
        sharding: str = "symmetric",
        filter: Optional[str] = None,
    ) -> tuple[Partition, list[bytes]]:
        """Flow-affine mode: one range (a :class:`Shard`, or a capture's path) split by
        flow into the buckets of ``buckets`` workers; one blob per bucket."""
    def run_bucket(
        self,
        bucket: int,
        buckets: int,
        blobs: Sequence[bytes],
        *,
        engine: str = "jit",
        map_entries: int = 16,
    ) -> BucketResult:
        """Flow-affine mode: bucket ``bucket``'s blobs (one per range, in plan order) run
        as worker ``bucket`` of ``sluice run --threads BUCKETS``, on fresh maps."""

class Partition:
    """One range split by flow into buckets, from :meth:`Program.partition`. Picklable."""

    @property
    def index(self) -> int:
        """The range's place in the plan."""
    @property
    def sharding(self) -> str:
        """``"symmetric"`` or ``"directional"``."""
    @property
    def buckets(self) -> int:
        """The number of buckets (workers)."""
    @property
    def boundary(self) -> Optional[dict[str, Any]]:
        """The range's reader's ``first``, ``next``, ``frames`` and ``error``; None for a whole capture."""
    @property
    def frames(self) -> int:
        """Frames the range read (skipped ones included)."""
    @property
    def packets(self) -> int:
        """Packets put in the buckets."""
    @property
    def per_bucket(self) -> list[int]:
        """Packets per bucket."""
    @property
    def skipped(self) -> dict[str, int]:
        """Frames skipped for want of an Ethernet form, per link type."""
    @property
    def snapped(self) -> int:
        """Frames captured shorter than on the wire."""
    @property
    def source_error(self) -> Optional[str]:
        """The error the range's reading ended on."""
    def _boundary_bytes(self) -> Optional[bytes]:
        """The boundary as JSON bytes, for :func:`check`."""

class BucketResult:
    """One bucket's run, from :meth:`Program.run_bucket`. Picklable."""

    @property
    def bucket(self) -> int:
        """The worker this run was."""
    @property
    def buckets(self) -> int:
        """The workers of the run (``--threads``)."""
    @property
    def report(self) -> dict[str, Any]:
        """The bucket's report, with the keys of ``sluice run --json``."""
    @property
    def packets(self) -> int:
        """The packets the bucket ran."""
    @property
    def verdicts(self) -> dict[str, int]:
        """Packets per verdict."""
    def to_json(self) -> str:
        """The report as JSON text."""

class Shard:
    """A piece of work over a capture list, from :func:`plan`: the records of ``path`` whose first byte lies in ``[start, end)``."""

    def __init__(
        self, path: Union[str, os.PathLike[str]], start: int, end: int, size: int, index: int = 0
    ) -> None: ...
    @property
    def path(self) -> str:
        """The capture file."""
    @property
    def start(self) -> int:
        """The first byte of the range."""
    @property
    def end(self) -> int:
        """The byte after the range."""
    @property
    def size(self) -> int:
        """The file's size when planned."""
    @property
    def index(self) -> int:
        """The shard's place in the plan."""
    @property
    def whole(self) -> bool:
        """Whether the shard is its whole file."""

class ShardResult:
    """The result of :meth:`Program.run_shard`: one range's run, raw; pickles."""

    @property
    def index(self) -> int:
        """The shard's place in the plan."""
    @property
    def shard(self) -> Shard:
        """The shard run."""
    @property
    def boundary(self) -> dict[str, Any]:
        """The proof of the range's reading: ``shard``, ``first``, ``next``, ``frames``, ``error``."""
    def _boundary_bytes(self) -> bytes:
        """The boundary serialized, as :func:`check` takes it."""
    @property
    def packets(self) -> int:
        """Packets the range's run ran."""
    @property
    def frames(self) -> int:
        """Frames the range's reader read."""
    @property
    def verdicts(self) -> dict[str, int]:
        """Packets per verdict in the range."""
    @property
    def report(self) -> dict[str, Any]:
        """The range's own report (``sluice run --json`` over its packets)."""
    @property
    def redone(self) -> bool:
        """Whether the range was read from a proven position given to it."""
    @property
    def table_path(self) -> Optional[str]:
        """The Parquet file of the range's per-packet table (``table_dir=``)."""
    @property
    def output_paths(self) -> dict[str, str]:
        """Each route's capture file (``output_dir=``)."""

class Redo:
    """A range to read again, from :func:`check`: ``prog.run_shard(redo.shard, proven=redo.position)``."""

    @property
    def index(self) -> int:
        """The range's place in the plan."""
    @property
    def shard(self) -> Shard:
        """The range."""
    @property
    def position(self) -> dict[str, Any]:
        """The proven position to read it from: ``offset`` and ``state``."""

class MergeError(Error):
    """Runs over shards not merged: a range not proven, a range missing, a policy for no map."""

def plan(
    inputs: Union[str, os.PathLike[str], Sequence[Union[str, os.PathLike[str]]]],
    split: Union[int, str, None] = None,
) -> list[Shard]:
    """Cuts a capture list (paths, glob patterns) into shards: whole files, byte ranges of about ``split`` bytes."""

def check(results: Sequence[Any]) -> list[Redo]:
    """The ranges whose start the range before them does not prove: read them again from ``redo.position``."""

class RunResult:
    """The result of :meth:`Program.run`."""

    @property
    def report(self) -> dict[str, Any]:
        """The report of ``sluice run --json`` for the same run."""
    @property
    def verdicts(self) -> dict[str, int]:
        """Packets per verdict: ``{"PASS": 9, "DROP": 1}``."""
    @property
    def count(self) -> int:
        """Packets run."""
    @property
    def maps(self) -> dict[str, dict[Any, Any]]:
        """The report's maps as Python values: ``{map: {key: value}}``."""
    @property
    def packets(self) -> Optional[pyarrow.Table]:
        """One row per packet (``None`` with ``per_packet=False``)."""
    @property
    def packet_stream(self) -> Optional[PacketStream]:
        """The per-packet table through the Arrow PyCapsule interface."""
    def _column_addresses(self) -> dict[str, int]:
        """Diagnostics: per column, the address of its values' buffer as the native module allocated it."""
    @property
    def coverage(self) -> Optional[Coverage]:
        """The source lines, branches and functions run (``None`` without ``coverage=True``)."""
    @property
    def stopped(self) -> bool:
        """Whether a signal (Ctrl-C) stopped the run before its source's end."""
    @property
    def shard(self) -> Optional[str]:
        """How the threads shared the packets: ``"ranges"`` or the flow sharding; ``None`` with one thread."""
    @property
    def shard_note(self) -> Optional[str]:
        """Why ``shard="auto"`` sharded by flow rather than by byte ranges."""
    def to_json(self) -> str:
        """The report as JSON text: what ``sluice run --json`` prints."""
    @property
    def map_policies(self) -> Optional[dict[str, str]]:
        """A merged result's map policies (:meth:`Program.merge`); ``None`` for a run."""
    def output(self, route: str, *, scapy: bool = False) -> list[Any]:
        """The packets of ``route`` (``run(output=...)`` kept them): ``bytes``, or scapy ``Ether``."""

class PacketStream:
    """A table (a run's packets, or another of sluice's), readable through the Arrow PyCapsule interface."""

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object: ...
    def __len__(self) -> int: ...

_Key = Union[int, bytes, bytearray, str, dict[str, Any], tuple[Any, ...], ipaddress.IPv4Address,
             ipaddress.IPv6Address, ipaddress.IPv4Network, ipaddress.IPv6Network]

class Maps(Mapping[str, "Map"]):
    """A program's maps by name (:attr:`Program.maps`)."""

    def __getitem__(self, name: str) -> Map: ...
    def __contains__(self, name: object) -> bool: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def keys(self) -> list[str]: ...  # type: ignore[override]

class Map:
    """One map of a program, like a dict: keys and values decoded through BTF."""

    @property
    def name(self) -> str: ...
    @property
    def info(self) -> dict[str, Any]:
        """name, type, key_size, value_size, max_entries, flags, cpus."""
    def __getitem__(self, key: _Key) -> Any: ...
    def __setitem__(self, key: _Key, value: Any) -> None: ...
    def __delitem__(self, key: _Key) -> None: ...
    def __contains__(self, key: _Key) -> bool: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Any]: ...
    def get(self, key: _Key, default: Any = None) -> Any: ...
    def keys(self) -> list[Any]: ...
    def values(self) -> list[Any]: ...
    def items(self) -> list[tuple[Any, Any]]: ...
    def to_dict(self) -> dict[Any, Any]: ...
    def to_arrow(self) -> pyarrow.Table:
        """The map as a table: key and value columns decoded through BTF."""

class VerifyResult:
    """What :meth:`Program.verify` found."""

    @property
    def accepted(self) -> bool: ...
    @property
    def verdict(self) -> str:
        """``"accept"``, ``"reject"`` or ``"unsupported"``."""
    @property
    def program(self) -> str: ...
    @property
    def insn(self) -> Optional[int]: ...
    @property
    def line(self) -> Optional[str]:
        """``FILE:LINE`` of the instruction at fault."""
    @property
    def source(self) -> Optional[str]: ...
    @property
    def disasm(self) -> Optional[str]: ...
    @property
    def explanation(self) -> Optional[str]: ...
    @property
    def kernel_message(self) -> Optional[str]: ...
    @property
    def rule(self) -> Optional[str]: ...
    @property
    def registers(self) -> Optional[str]: ...
    @property
    def insns_processed(self) -> int: ...
    @property
    def states(self) -> int: ...
    @property
    def stack_depth(self) -> int: ...
    @property
    def kernel(self) -> Optional[dict[str, Any]]:
        """The kernel's verdict, when it was asked."""
    @property
    def agrees(self) -> Optional[bool]: ...
    @property
    def log(self) -> list[str]: ...
    @property
    def report(self) -> dict[str, Any]:
        """One program of ``sluice verify --json``."""
class Coverage:
    """Coverage of C source by packet runs; coverages add up (``a + b``, ``a += b``, ``a.add(b)``)."""

    def __init__(self) -> None:
        """An empty coverage, to add runs' coverages to."""
    @property
    def lines(self) -> dict[Tuple[str, int], int]:
        """``{(file, line): count}``: how often each source line with instructions ran."""
    @property
    def branches(self) -> dict[Tuple[str, int, int, int], Optional[int]]:
        """``{(file, line, block, branch): count}``: branch 0 the jump taken, 1 the fall-through; ``None``: never reached."""
    @property
    def functions(self) -> dict[Tuple[str, str], int]:
        """``{(file, name): calls}``: the program and its subprograms."""
    @property
    def summary(self) -> dict[str, dict[str, int]]:
        """Found and hit lines, branches and functions, as the report's ``coverage``."""
    def lcov(self, test_name: str = "") -> str:
        """The lcov tracefile, as ``sluice run --coverage FILE`` writes it."""
    def write(self, path: Union[str, os.PathLike[str]], test_name: str = "") -> None:
        """Writes :meth:`lcov` to ``path`` (``genhtml path`` draws it); raises :class:`Error`."""
    def add(self, other: Coverage) -> None:
        """Adds ``other``'s counts, in place."""
    def __add__(self, other: Coverage) -> Coverage: ...
    def __iadd__(self, other: Coverage) -> Coverage: ...
class Filter:
    """A tcpdump expression, compiled by libpcap as tcpdump compiles it."""

    def __init__(
        self,
        expr: str,
        *,
        linktype: Union[int, str, None] = None,
        snaplen: Optional[int] = None,
        pcap: Optional[_Capture] = None,
    ) -> None: ...
    @property
    def expr(self) -> str: ...
    @property
    def linktype(self) -> int:
        """The LINKTYPE number compiled for (1: Ethernet)."""
    @property
    def snaplen(self) -> int: ...
    @property
    def instructions(self) -> list[Tuple[int, int, int, int]]:
        """The classic BPF program: ``(code, jt, jf, k)`` tuples."""
    def dump(self, form: str = "d") -> str:
        """The program as ``tcpdump -d`` (``"dd"``: ``-dd``, ``"ddd"``: ``-ddd``) prints it."""
    def matches(self, packet: _Packet, *, wire_len: Optional[int] = None) -> bool:
        """Whether the filter accepts ``packet``."""
    def run(
        self,
        pcap: Optional[_Capture] = None,
        packets: Optional[Iterable[_Packet]] = None,
        gen: Union[str, Sequence[str], None] = None,
        *,
        write: Union[str, os.PathLike[str], None] = None,
        count: Optional[int] = None,
        engine: str = "interp",
    ) -> FilterResult:
        """Filters packets as ``sluice filter -r`` does; ``engine``: interp, jit, ebpf-jit or kernel."""
    def run_shard(
        self,
        shard: Any,
        proven: Optional[Any] = None,
        output_dir: Union[str, os.PathLike[str], None] = None,
    ) -> FilterShard:
        """Filters one shard of a plan (a ``Shard`` or a dict: path, start, end, size, index); ``output_dir``: its ``part-{index:05}.pcap``."""
    def merge(self, parts: Iterable[FilterShard]) -> FilterResult:
        """The shards' parts (plan order, proven) merged: what :meth:`run` gives over the whole capture."""

class FilterResult:
    """The result of :meth:`Filter.run`."""

    @property
    def report(self) -> dict[str, Any]:
        """The report of ``sluice filter -r F EXPR --json``."""
    @property
    def read(self) -> int: ...
    @property
    def matched(self) -> int: ...
    @property
    def stopped(self) -> bool: ...
    @property
    def packets(self) -> pyarrow.Table:
        """The matching packets: ``index``, ``timestamp``, ``length``, ``wire_length``."""

class Tc:
    """A tc configuration: lines of ``tc`` commands, or a file of them."""

    def __init__(
        self,
        lines: Union[str, Sequence[str], None] = None,
        *,
        path: Union[str, os.PathLike[str], None] = None,
        name: Optional[str] = None,
    ) -> None: ...
    @property
    def name(self) -> str: ...
    def run(
        self,
        pcap: Optional[_Capture] = None,
        packets: Optional[Iterable[_Packet]] = None,
        gen: Union[str, Sequence[str], None] = None,
        *,
        dev: Optional[str] = None,
        hook: str = "ingress",
        limit: Optional[int] = None,
        output: _Output = None,
    ) -> TcResult:
        """Runs packets through the configuration, as ``sluice run --tc FILE`` does."""

class TcResult:
    """The result of :meth:`Tc.run`."""

    @property
    def report(self) -> dict[str, Any]:
        """The report of ``sluice run --tc FILE --json``."""
    @property
    def verdicts(self) -> dict[str, int]: ...
    @property
    def count(self) -> int: ...
    @property
    def sent(self) -> list[dict[str, Any]]:
        """Where mirred sent packets: ``dev``, ``hook``, ``delivered``, ``consumed``."""
    @property
    def shown(self) -> dict[str, str]:
        """``tc -s filter show`` text per ``"DEV HOOK"``."""
    @property
    def filters(self) -> pyarrow.Table:
        """Every filter's actions and counters, a row per action."""
    @property
    def stopped(self) -> bool: ...
    def output(self, route: str, *, scapy: bool = False) -> list[Any]:
        """The packets of ``route`` (``run(output=...)`` kept them)."""

class Profile:
    """A program's profile, from :meth:`Program.profile`."""

    @property
    def report(self) -> dict[str, Any]:
        """The report of ``sluice profile --json`` (without the processors)."""
    @property
    def alpha(self) -> float:
        """Instructions per packet at length 0 (the fit's intercept)."""
    @property
    def beta(self) -> float:
        """Instructions per byte (the fit's slope)."""
    @property
    def gamma(self) -> float:
        """Memory accesses per packet at length 0."""
    @property
    def delta(self) -> float:
        """Memory accesses per byte."""
    @property
    def packets(self) -> pyarrow.Table:
        """One row per packet: seq, len, insns, branches, ... verdict."""
    @property
    def packet_stream(self) -> PacketStream:
        """The per-packet table through the Arrow PyCapsule interface."""
    def plot(self) -> Any:
        """A matplotlib ``Figure``: instructions against length, the fitted line."""

class MonitorResult:
    """What :func:`flows`, :func:`rtt` and :func:`sample` give."""

    @property
    def records(self) -> pyarrow.Table:
        """One row per record: ended flows (IPFIX names), RTT samples, sampling's records."""
    @property
    def record_stream(self) -> PacketStream:
        """The records through the Arrow PyCapsule interface."""
    @property
    def summary(self) -> dict[str, Any]:
        """The summary of ``sluice monitor KIND --json``."""
    def __len__(self) -> int: ...

def flows(
    pcap: Union[str, os.PathLike[str], None] = None,
    packets: Optional[Iterable[_Packet]] = None,
    gen: Union[str, Sequence[str], None] = None,
    *,
    engine: str = "table",
    capacity: Optional[int] = None,
    idle: float = 15.0,
    active: float = 1800.0,
    count: Optional[int] = None,
) -> MonitorResult:
    """Flow accounting, as ``sluice monitor flows``: one row per ended flow."""

class FlowsShard:
    """One shard's flow accounting (:func:`flows_shard`), for :func:`merge_flows`; pickles as its bytes."""

    @property
    def index(self) -> int: ...
    @property
    def packets(self) -> int: ...
    @property
    def boundary(self) -> dict[str, Any]:
        """The range's boundary: shard, first, next, frames, error (docs/shards.md)."""
    def _boundary_bytes(self) -> bytes: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(data: bytes) -> FlowsShard: ...

class FilterShard:
    """One shard filtered (:meth:`Filter.run_shard`), for :meth:`Filter.merge`; pickles as its bytes."""

    @property
    def index(self) -> int: ...
    @property
    def read(self) -> int: ...
    @property
    def matched(self) -> int: ...
    @property
    def written(self) -> Optional[str]:
        """The partition written (``output_dir/part-{index:05}.pcap``), or None."""
    @property
    def boundary(self) -> dict[str, Any]: ...
    def _boundary_bytes(self) -> bytes: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(data: bytes) -> FilterShard: ...

def flows_shard(
    shard: Any,
    proven: Optional[Any] = None,
    *,
    engine: str = "table",
    capacity: Optional[int] = None,
    idle: float = 15.0,
    active: float = 1800.0,
) -> FlowsShard:
    """Flow accounting over one shard of a plan, for :func:`merge_flows`."""

def merge_flows(
    parts: Iterable[FlowsShard],
    *,
    engine: Optional[str] = None,
    capacity: Optional[int] = None,
    idle: Optional[float] = None,
    active: Optional[float] = None,
) -> MonitorResult:
    """The shards' parts (plan order, proven) merged: what :func:`flows` gives over the captures read one after another."""

def _flows_shard_from_bytes(data: bytes) -> FlowsShard: ...
def _filter_shard_from_bytes(data: bytes) -> FilterShard: ...

def rtt(
    pcap: Union[str, os.PathLike[str], None] = None,
    packets: Optional[Iterable[_Packet]] = None,
    gen: Union[str, Sequence[str], None] = None,
    *,
    engine: str = "table",
    xpf_engine: str = "interp",
    syn_table: Optional[int] = None,
    ts_table: Optional[int] = None,
    flow_table: int = 65536,
    max_age: float = 10.0,
    count: Optional[int] = None,
) -> MonitorResult:
    """Passive RTT, as ``sluice monitor rtt``: one row per sample."""

def sample(
    pcap: Union[str, os.PathLike[str], None] = None,
    packets: Optional[Iterable[_Packet]] = None,
    gen: Union[str, Sequence[str], None] = None,
    *,
    engine: str = "ebpf",
    xpf_engine: str = "interp",
    rate: Optional[str] = None,
    a: Optional[int] = None,
    b: Optional[int] = None,
    table: int = 4096,
    count: Optional[int] = None,
) -> MonitorResult:
    """Trajectory sampling, as ``sluice monitor sample``: one row per record."""
