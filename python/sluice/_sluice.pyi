"""Type stubs of sluice's native module (python/src/, PyO3)."""

import os
from typing import Any, Iterable, Optional, Sequence, Tuple, Union

import pyarrow

_Packet = Union[bytes, bytearray, Tuple[int, Union[bytes, bytearray]], Any]

class Error(Exception):
    """An error of sluice's engine; its message is the one the `sluice` command line prints."""

class ObjectError(Error):
    """The object did not read or parse, or has no such program."""

class SourceError(Error):
    """The packets' source did not open: a capture not read, a generator spec refused."""

class VerifierError(Error):
    """The verifier rejected the program; the message says where and why."""

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
        pcap: Union[str, os.PathLike[str], None] = None,
        packets: Optional[Iterable[_Packet]] = None,
        gen: Union[str, Sequence[str], None] = None,
        *,
        threads: int = 1,
        engine: str = "jit",
        limit: Optional[int] = None,
        filter: Optional[str] = None,
        per_packet: bool = True,
        map_entries: int = 16,
    ) -> RunResult:
        """Runs the program over exactly one of ``pcap``, ``packets``, ``gen``."""
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

class PacketStream:
    """A table (a run's packets, or another of sluice's), readable through the Arrow PyCapsule interface."""

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object: ...
    def __len__(self) -> int: ...

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
