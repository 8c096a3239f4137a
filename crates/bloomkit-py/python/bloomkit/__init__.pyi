"""Type stubs for bloomkit: every public class, function and constant, with its docs.

The classes live in the extension module ``bloomkit._native`` and are re-exported here;
the exceptions are pure Python (``bloomkit._errors``).
"""

import os
from typing import Any, Iterable, Optional, Tuple, TypeVar, Union

from ._errors import BloomkitError as BloomkitError
from ._errors import FilterFullError as FilterFullError
from ._errors import InvalidFilterError as InvalidFilterError
from ._errors import ParameterError as ParameterError

__version__: str

#: The seed keys are hashed with unless one is given: the ASCII bytes "bloomkit" as a
#: little-endian integer, as in the Rust library, the CLI and the server.
DEFAULT_SEED: int

#: A byte string key: ``str`` (its UTF-8 bytes), ``bytes``, ``bytearray``, ``memoryview``.
ByteKey = Union[str, bytes, bytearray, memoryview]
#: A key: a byte string, an ``int`` (by value, -2**127 to 2**128 - 1), or a tuple of keys.
Key = Union[ByteKey, int, Tuple[Any, ...]]
#: Many keys: any iterable of keys; a NumPy array of integers; with ``key_size``, one
#: bytes-like buffer of fixed-width keys.
Keys = Union[Iterable[Any], bytes, bytearray, memoryview]
#: A file path.
PathLike = Union[str, "os.PathLike[str]"]

_F = TypeVar("_F", bound="Filter")

def hash(key: Key, seed: int = ...) -> int:
    """The stable 64-bit hash bloomkit gives `key` under `seed`: what every filter made with
    that seed probes for it, here, in Rust (``bloomkit::hash_with_seed``), in the CLI and
    the server."""

def from_bytes(data: Union[bytes, bytearray, memoryview]) -> "Filter":
    """Reads a filter of any kind from bytes in bloomkit's format, as its kind's class.

    Raises ``InvalidFilterError`` (naming the offset) for anything but exactly one valid
    filter."""

def load(path: PathLike) -> "Filter":
    """Reads a filter of any kind from a file (``save``'s, or ``bloomkit build``'s), as its
    kind's class. Raises ``InvalidFilterError`` naming the file and offset for a file that
    is not a valid filter, ``OSError`` for one that cannot be read."""

def open(path: PathLike, *, verify: bool = True) -> "MappedFilter":
    """Maps the blocked or classic filter in the file `path` and queries it in place.

    Opening reads the header and, unless ``verify=False``, every byte once for the checksum
    (at memory speed); nothing is copied. With ``verify=False`` opening costs the header
    only, for a file already checked. Other kinds raise ``ValueError``: read them into
    memory with ``bloomkit.load``."""

class Filter:
    """A filter of any kind: what every bloomkit filter answers.

    Not made directly: make one of its kinds, or read one with ``bloomkit.load`` or
    ``bloomkit.from_bytes``, which give the kind the data holds."""

    def __contains__(self, key: Key) -> bool:
        """Whether `key` may be in the filter: ``False`` means it is definitely not; ``True``
        means it is, or is a false positive (at the filter's rate)."""
    def contains_many(self, keys: Keys, *, key_size: Optional[int] = None) -> Any:
        """Answers ``key in self`` for every key of `keys`, in order: a ``list[bool]``, or a
        NumPy bool array for a NumPy array of integers. Runs with the GIL released while the
        filter is probed; a bytes-like buffer with `key_size` holds keys of that many bytes
        each, back to back."""
    def __len__(self) -> int:
        """The filter's count of keys, as the Rust library's ``len`` counts them: inserts
        that changed a Bloom filter, copies held by a counting or cuckoo filter, keys added
        to a scalable filter, keys a static filter was built from, keys in an aging filter's
        live generations."""
    @property
    def kind(self) -> str:
        """The kind's name, as the CLI spells it: ``"classic"``, ``"blocked"``,
        ``"sector"``, ``"counting"``, ``"scalable"``, ``"cuckoo"``, ``"aging"``,
        ``"ribbon"`` or ``"fuse"``."""
    @property
    def seed(self) -> int:
        """The seed keys are hashed with."""
    @property
    def memory_bytes(self) -> int:
        """Bytes of memory the filter holds."""
    @property
    def fp_rate(self) -> Optional[float]:
        """The rate the filter was planned for: the ``fp_rate`` it was made with, the target
        a scalable filter keeps, a static filter's exact rate; ``None`` for a Bloom,
        counting, cuckoo or aging filter read from bytes or a file, whose format stores its
        shape and not a target."""
    @property
    def estimated_fp_rate(self) -> float:
        """The false-positive rate a query risks now, estimated from the filter's contents."""
    @property
    def predicted_fp_rate(self) -> float:
        """The false-positive rate the sizing math predicts for the filter's shape holding
        ``len(self)`` keys."""
    def to_bytes(self) -> bytes:
        """The filter in bloomkit's file format: what ``bloomkit build`` writes."""
    @classmethod
    def from_bytes(cls: type[_F], data: Union[bytes, bytearray, memoryview]) -> _F:
        """Reads a filter of this class's kind from bytes in bloomkit's format
        (``InvalidFilterError`` for anything else, naming the offset)."""
    def save(self, path: PathLike) -> None:
        """Writes the filter to the file `path`, replaced atomically, in the format
        ``bloomkit info``, ``query`` and ``load`` read."""
    @classmethod
    def load(cls: type[_F], path: PathLike) -> _F:
        """Reads a filter of this class's kind from the file `path` (streamed)."""
    def copy(self: _F) -> _F:
        """A copy of the filter."""
    def __copy__(self: _F) -> _F: ...
    def __deepcopy__(self: _F, memo: Any) -> _F: ...
    def __eq__(self, other: object) -> bool:
        """Equal when the same kind with the same shape, seed and contents."""
    def __reduce__(self) -> Any:
        """Pickles as the filter's bytes in bloomkit's format."""

class _Adding(Filter):
    """The methods of the kinds that take keys after they are made (not a real class)."""

    def add(self, key: Key) -> bool:
        """Adds `key`. Returns ``True`` if it was definitely not in the filter before,
        ``False`` if it may have been (a counting or cuckoo filter then holds one more
        copy). ``FilterFullError`` from a full cuckoo or non-scaling scalable filter."""
    def update(self, *iterables: Keys) -> None:
        """Adds every key of each iterable, as ``set.update`` does."""
    def add_many(self, keys: Keys, *, key_size: Optional[int] = None) -> None:
        """Adds every key of `keys`, with the GIL released while the filter is written;
        fastest for a list or a NumPy array of integers; a bytes-like buffer with
        `key_size` holds keys of that many bytes each. A key that cannot be added raises
        after the keys before it were added. While the batch runs, another thread's call on
        the same filter raises ``RuntimeError``."""
    def clear(self) -> None:
        """Removes every key: an empty filter of the same shape and seed."""

class _Bits(Filter):
    @property
    def num_bits(self) -> int:
        """Bits in the filter (all layers or generations)."""

class _Probes(Filter):
    @property
    def num_hashes(self) -> int:
        """Probes per key."""

class _Union(Filter):
    def __or__(self: _F, other: _F) -> _F:
        """A new filter holding the keys of both (``ParameterError`` if they differ in shape
        or seed)."""
    def __ior__(self: _F, other: _F) -> _F:
        """Adds the keys of `other`, in place."""

class _Intersection(Filter):
    def __and__(self: _F, other: _F) -> _F:
        """A new filter with the bits both set: it holds the keys both hold."""
    def __iand__(self: _F, other: _F) -> _F:
        """Keeps only the bits `other` sets too, in place."""

class _Removal(Filter):
    def remove(self, key: Key) -> None:
        """Removes one copy of `key`; ``KeyError`` if it is definitely not there. Remove
        only keys that were added."""
    def discard(self, key: Key) -> bool:
        """Removes one copy of `key` if it may be there: returns whether one was removed."""

class BloomFilter(_Adding, _Bits, _Probes, _Union, _Intersection):
    """The classic Bloom filter: k probes spread over the whole bit array, the textbook
    −ln p / (ln 2)² bits per key. ``bloomkit.open`` queries one in place from a file."""

    def __init__(
        self,
        expected_items: int,
        fp_rate: float,
        *,
        seed: Optional[int] = None,
        num_bits: Optional[int] = None,
        num_hashes: Optional[int] = None,
    ) -> None:
        """Plans bits and probes for `expected_items` keys at `fp_rate`; `num_bits` and
        `num_hashes` override the plan."""

class BlockedBloomFilter(_Adding, _Bits, _Probes, _Union, _Intersection):
    """The blocked Bloom filter, the one to choose by default: all of a key's probes fall in
    one 64-byte cache line, so a query costs one cache miss, for about 3% more memory than
    ``BloomFilter``. ``bloomkit.open`` queries one in place from a file."""

    def __init__(
        self,
        expected_items: int,
        fp_rate: float,
        *,
        seed: Optional[int] = None,
        num_bits: Optional[int] = None,
        num_hashes: Optional[int] = None,
    ) -> None: ...

class SectorBloomFilter(_Adding, _Bits, _Probes, _Union, _Intersection):
    """The sector Bloom filter: the blocked layout with the same number of bits in each of a
    line's eight words, the fewest instructions per insert."""

    def __init__(
        self,
        expected_items: int,
        fp_rate: float,
        *,
        seed: Optional[int] = None,
        num_bits: Optional[int] = None,
        num_hashes: Optional[int] = None,
    ) -> None:
        """As ``BloomFilter``; `num_hashes` is a multiple of 8, up to 64."""

class CountingBloomFilter(_Adding, _Probes, _Union, _Removal):
    """The counting Bloom filter: a 4-bit counter for each bit of a classic filter, so keys
    can be removed, for four times the memory. A key added twice is held twice."""

    def __init__(
        self,
        expected_items: int,
        fp_rate: float,
        *,
        seed: Optional[int] = None,
        num_counters: Optional[int] = None,
        num_hashes: Optional[int] = None,
    ) -> None: ...
    @property
    def num_counters(self) -> int:
        """Counters in the filter (4 bits each)."""

class ScalableBloomFilter(_Adding, _Bits):
    """The scalable Bloom filter, for an unknown number of keys: it adds layers as it fills
    and keeps the false-positive rate under `fp_rate` however far it grows. A key already
    present is not added again."""

    def __init__(
        self,
        initial_capacity: int,
        fp_rate: float,
        *,
        expansion: Optional[int] = None,
        tightening: Optional[float] = None,
        non_scaling: Optional[bool] = None,
        layout: Optional[str] = None,
        seed: Optional[int] = None,
    ) -> None:
        """Each layer holds `expansion` times the keys of the one before (2), at
        `tightening` times its rate (0.5); `layout` is ``"blocked"`` (default) or
        ``"classic"``; ``non_scaling=True`` makes a full filter refuse keys."""
    @property
    def capacity(self) -> int:
        """How many keys the layers made so far hold before another is added."""
    @property
    def num_layers(self) -> int:
        """The number of layers."""
    @property
    def expansion(self) -> int:
        """The factor each layer's capacity grows by."""
    @property
    def layout(self) -> str:
        """``"blocked"`` or ``"classic"``."""

class CuckooFilter(_Adding, _Removal):
    """The cuckoo filter: fingerprints in buckets, so keys can be removed and their copies
    counted; the smallest filter below a rate of about 3%. Without `expansion` a full
    filter refuses keys (``FilterFullError``)."""

    def __init__(
        self,
        capacity: int,
        fp_rate: float,
        *,
        expansion: Optional[int] = None,
        fingerprint_bits: Optional[int] = None,
        bucket_size: Optional[int] = None,
        max_kicks: Optional[int] = None,
        max_filters: Optional[int] = None,
        seed: Optional[int] = None,
    ) -> None: ...
    def count(self, key: Key) -> int:
        """How many copies of `key` the filter holds (a false positive counts too)."""
    @property
    def capacity(self) -> int:
        """How many keys the sub-filters made so far hold at most."""
    @property
    def fingerprint_bits(self) -> int:
        """Bits in each fingerprint."""
    @property
    def bucket_size(self) -> int:
        """Slots per bucket."""
    @property
    def num_buckets(self) -> int:
        """Buckets in all sub-filters."""
    @property
    def num_filters(self) -> int:
        """The number of sub-filters."""
    @property
    def expansion(self) -> int:
        """The factor each new sub-filter grows by (0: the filter does not grow)."""
    @property
    def load_factor(self) -> float:
        """The fraction of slots in use, from 0 to 1."""

class AgingBloomFilter(_Adding, _Bits, _Probes):
    """The aging Bloom filter, "seen recently": keys go into the newest of G generations, and
    ``rotate()`` drops the oldest, so a key is remembered for G − 1 to G rotation periods."""

    def __init__(
        self,
        items_per_generation: int,
        fp_rate: float,
        *,
        generations: Optional[int] = None,
        seed: Optional[int] = None,
        num_bits_per_generation: Optional[int] = None,
        num_hashes: Optional[int] = None,
    ) -> None:
        """`fp_rate` is the whole filter's, each generation planned tighter to keep it (2
        generations unless given)."""
    def rotate(self) -> None:
        """Drops the oldest generation and starts an empty newest one."""
    @property
    def num_generations(self) -> int:
        """The number of generations, G."""

class RibbonFilter(_Bits):
    """The ribbon filter: built once from all its keys, within about 5% of the least memory
    any filter can take for its rate; never changed afterwards."""

    def __init__(
        self,
        keys: Keys,
        fp_rate: float,
        *,
        seed: Optional[int] = None,
        result_bits: Optional[int] = None,
        layout: Optional[str] = None,
        key_size: Optional[int] = None,
    ) -> None:
        """The rate delivered is 2^−r, the largest not above `fp_rate` unless `result_bits`
        = r is given; `layout` is ``"homogeneous"`` (default) or ``"standard"``."""
    @property
    def result_bits(self) -> int:
        """Result bits per slot, r: the rate is 2^−r."""
    @property
    def bits_per_key(self) -> float:
        """Bits per key the filter was built from."""

class BinaryFuseFilter(_Bits):
    """The binary fuse filter: built once from all its keys, the fastest queries, at 9.0
    bits per key for 2^−8 or 18.0 for 2^−16."""

    def __init__(
        self,
        keys: Keys,
        fp_rate: float,
        *,
        seed: Optional[int] = None,
        fingerprint_bits: Optional[int] = None,
        key_size: Optional[int] = None,
    ) -> None: ...
    @property
    def fingerprint_bits(self) -> int:
        """Bits in each fingerprint: 8 or 16."""
    @property
    def bits_per_key(self) -> float:
        """Bits per key the filter was built from."""

class MappedFilter:
    """A blocked or classic filter in a memory-mapped file, queried in place: what
    ``bloomkit.open`` returns. A context manager; after ``close()`` every query raises
    ``ValueError``. The file must not be truncated or rewritten in place while it is open."""

    def __contains__(self, key: Key) -> bool: ...
    def contains_many(self, keys: Keys, *, key_size: Optional[int] = None) -> Any: ...
    def __len__(self) -> int: ...
    @property
    def kind(self) -> str:
        """``"blocked"`` or ``"classic"``."""
    @property
    def num_bits(self) -> int: ...
    @property
    def num_hashes(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def estimated_fp_rate(self) -> float:
        """From the fill (reads every byte)."""
    @property
    def file_bytes(self) -> int:
        """The size of the mapped file in bytes."""
    @property
    def path(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    def to_filter(self) -> Union[BlockedBloomFilter, BloomFilter]:
        """A copy in memory, which can change."""
    def close(self) -> None:
        """Unmaps the file; closing again does nothing."""
    def __enter__(self) -> "MappedFilter": ...
    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None: ...
