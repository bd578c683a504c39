"""sluice: publish into and subscribe from a sluice graph (docs/API.md).

A stream's tuples are numpy structured arrays of its dtype: `seq` (u64,
numbered by the publisher's library) first, then the schema's fields at
their offsets, itemsize = tuple_bytes. Back pressure is a return value;
errors raise Error with the library's message; every wait releases the GIL.
"""
from types import TracebackType
from typing import Callable, Iterator, Optional, Sequence, Tuple, TypedDict

import numpy as np
import numpy.typing as npt

class Error(RuntimeError):
    """An error of the library: what failed, on which link, with which peer."""

class SchemaError(Error, TypeError):
    """An array or a declared dtype that is not the stream's schema; the message names both."""

class ClosedError(Error):
    """A call on a Publisher or Subscriber that was closed."""

class Claim:
    """Room for tuples inside a slot of the publisher's pool, until committed or aborted."""

    @property
    def tuples(self) -> npt.NDArray[np.void]:
        """A writable array of the publisher's dtype over the slot itself (zero copy); valid until commit or abort."""
    @property
    def stream(self) -> int: ...
    def commit(self, n: Optional[int] = None) -> None:
        """Sends the first n tuples (all by default) as one event, no copy."""
    def abort(self) -> None:
        """Gives the slot back unsent."""
    def __enter__(self) -> "Claim": ...
    def __exit__(self, t: Optional[type], v: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        """Commits at the end of the block; aborts on an exception."""

class Publisher:
    """The application as the source of a graph's stream.

    Name the end by run_dir and process (a run of sluice-deploy), by deployment
    and process (a deployment file), or by address and token (a standalone
    node's listener, `set` giving the stream's keys as KEY=VALUE). Opening
    returns once every downstream link is connected, or raises Error saying why.
    A `dtype` that is not the graph's schema is refused at the handshake,
    naming both. One thread calls send, claim, flush and close.
    """

    def __init__(
        self,
        run_dir: Optional[str] = None,
        process: Optional[str] = None,
        *,
        deployment: Optional[str] = None,
        address: Optional[str] = None,
        token: Optional[str] = None,
        set: Sequence[str] = (),
        instance: int = 0,
        dtype: Optional[npt.DTypeLike] = None,
        summary: Optional[str] = None,
    ) -> None: ...
    @property
    def dtype(self) -> np.dtype:
        """The stream's tuples: seq (u64) first, every field at its offset, itemsize = tuple_bytes."""
    @property
    def schema(self) -> str:
        """The schema as the handshake names it: 'quotes{seq:u64,key:u32,...;tuple_bytes=128}'."""
    @property
    def max_tuples(self) -> int:
        """Tuples per event (what event_bytes holds)."""
    @property
    def streams(self) -> int: ...
    @property
    def committed(self) -> int:
        """Events committed since open."""
    @property
    def sent(self) -> int:
        """Of those, handed to the links."""
    @property
    def acknowledged(self) -> int:
        """Of those, acknowledged downstream (acks on; 0 with them off)."""
    @property
    def closed(self) -> bool: ...
    def send(self, array: npt.NDArray[np.void], timeout: Optional[float] = None, stream: int = 0) -> int:
        """Sends the array's tuples, copied straight into claimed slots, max_tuples per event.

        Returns how many tuples went: fewer than len(array) when no slot came free
        within `timeout` seconds (back pressure; None waits without limit, 0 does
        not wait; the GIL is released only to wait). Another dtype raises
        SchemaError naming both. Refill one array in place and send it again:
        nothing is allocated per call.
        """
    def claim(self, n: int, timeout: Optional[float] = None, stream: int = 0) -> Optional[Claim]:
        """Room for n tuples in a slot (zero copy), or None under back pressure."""
    def flush(self, timeout: Optional[float] = None) -> bool:
        """True once everything committed is acknowledged (acks on) or sent; False at the timeout."""
    def close(self, timeout: float = 30.0) -> None:
        """END after everything committed; raises Error when a receiver did not take it in time."""
    def __enter__(self) -> "Publisher": ...
    def __exit__(self, t: Optional[type], v: Optional[BaseException], tb: Optional[TracebackType]) -> None: ...

class Event(Tuple[int, int, int, int]):
    """One event's place in its stream: a named tuple (a struct sequence) of stream, count, first_seq, event_seq."""

    @property
    def stream(self) -> int: ...
    @property
    def count(self) -> int: ...
    @property
    def first_seq(self) -> int: ...
    @property
    def event_seq(self) -> int: ...

class Counts(TypedDict):
    events: int
    tuples: int
    lost: int
    duplicated: int
    corrupt: int
    deduplicated: int
    ended: bool

class Subscriber:
    """The application as an end of a graph's stream.

    Every event is checked as the sink checks it before the application sees
    it; with acks a replay's duplicates are dropped. manual_acks: events are
    acknowledged upstream only by acknowledge(). resume: (stream,
    next_event_seq, next_seq) per stream already written by the application.
    Iterating yields each event's tuples (a copy) until END. One thread calls
    poll, acknowledge and close.
    """

    def __init__(
        self,
        run_dir: Optional[str] = None,
        process: Optional[str] = None,
        *,
        deployment: Optional[str] = None,
        address: Optional[str] = None,
        token: Optional[str] = None,
        set: Sequence[str] = (),
        instance: int = 0,
        dtype: Optional[npt.DTypeLike] = None,
        summary: Optional[str] = None,
        manual_acks: bool = False,
        resume: Sequence[Tuple[int, int, int]] = (),
    ) -> None: ...
    @property
    def dtype(self) -> np.dtype: ...
    @property
    def schema(self) -> str: ...
    @property
    def ended(self) -> bool:
        """True once END came and every event before it was handled."""
    @property
    def closed(self) -> bool: ...
    def poll(
        self,
        handler: Callable[[npt.NDArray[np.void], Event], object],
        limit: int = 64,
        timeout: Optional[float] = None,
        copy: bool = False,
    ) -> int:
        """Calls handler(tuples, event) for at most `limit` events; returns how many.

        `tuples` is a read-only array over the slot, valid inside the call only
        (copy=True: a copy to keep). Waits up to `timeout` seconds for the first
        (None: without limit; 0: not at all), the GIL released; a poll that
        finds events waiting keeps it. 0 after END. A larger `limit` hands
        more events per call.
        """
    def counts(self) -> Counts:
        """The sink's counts so far (tuples lost, duplicated, corrupt, deduplicated)."""
    def acknowledge(self) -> None:
        """With manual_acks: every event handled so far is acknowledged upstream."""
    def close(self) -> None:
        """Writes the summary; raises Error when the stream failed or END never came."""
    def __iter__(self) -> Iterator[npt.NDArray[np.void]]: ...
    def __next__(self) -> npt.NDArray[np.void]: ...
    def __enter__(self) -> "Subscriber": ...
    def __exit__(self, t: Optional[type], v: Optional[BaseException], tb: Optional[TracebackType]) -> None: ...
