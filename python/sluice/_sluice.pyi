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
    def _column_addresses(self) -> dict[str, int]:
        """Diagnostics: per column, the address of its values' buffer as the native module allocated it."""

class PacketStream:
    """A run's per-packet table, readable through the Arrow PyCapsule interface."""

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object: ...
    def __len__(self) -> int: ...
