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
        count_memory: bool = False,
        coverage: bool = False,
    ) -> RunResult:
        """Runs the program over exactly one of ``pcap``, ``packets``, ``gen``."""

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
    def coverage(self) -> Optional[Coverage]:
        """The source lines, branches and functions run (``None`` without ``coverage=True``)."""

class PacketStream:
    """A run's per-packet table, readable through the Arrow PyCapsule interface."""

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object: ...
    def __len__(self) -> int: ...

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
