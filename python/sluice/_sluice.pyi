"""Type stubs of sluice's native module (python/src/, PyO3)."""

import os
from typing import Any, BinaryIO, Iterable, Optional, Sequence, Tuple, Union

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
    def program(self, name: Optional[str] = None) -> Program:
        """The program ``name``; without a name, the object's only runnable program."""

class Program:
    """A program of an :class:`Object`, from :meth:`Object.program`."""

    @property
    def name(self) -> str: ...
    @property
    def object(self) -> str: ...
    def run(
        self,
        pcap: Optional[_Capture] = None,
        packets: Optional[Iterable[_Packet]] = None,
        gen: Union[str, Sequence[str], None] = None,
        *,
        threads: int = 1,
        engine: str = "jit",
        limit: Optional[int] = None,
        filter: Optional[str] = None,
        per_packet: bool = True,
        map_entries: int = 16,
        output: _Output = None,
    ) -> RunResult:
        """Runs the program over exactly one of ``pcap``, ``packets``, ``gen``.

        Ctrl-C raises ``KeyboardInterrupt`` with the partial result as its ``result``.
        """

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
    def packets(self) -> Optional[pyarrow.Table]:
        """One row per packet (``None`` with ``per_packet=False``)."""
    @property
    def packet_stream(self) -> Optional[PacketStream]:
        """The per-packet table through the Arrow PyCapsule interface."""
    @property
    def stopped(self) -> bool:
        """Whether a signal (Ctrl-C) stopped the run before its source's end."""
    def output(self, route: str, *, scapy: bool = False) -> list[Any]:
        """The packets of ``route`` (``run(output=...)`` kept them): ``bytes``, or scapy ``Ether``."""

class PacketStream:
    """A run's per-packet table, readable through the Arrow PyCapsule interface."""

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object: ...
    def __len__(self) -> int: ...

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
    ) -> FilterResult:
        """Filters packets as ``sluice filter -r`` does."""

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
