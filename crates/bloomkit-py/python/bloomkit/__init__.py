"""bloomkit: approximate membership filters, with the keys and files of the Rust library.

A filter answers "definitely not" or "maybe" for a key, in a few bits per key whatever the
key's size: put one in front of something expensive (a disk read, a database query, a
crawl) and skip the work when it says no. ::

    import bloomkit

    seen = bloomkit.BlockedBloomFilter(1_000_000, 0.01)   # a million keys at 1%
    seen.add("alice")
    assert "alice" in seen and "bob" not in seen

Every kind of the Rust library has a class: ``BloomFilter``, ``BlockedBloomFilter`` (the
default choice), ``SectorBloomFilter``, ``CountingBloomFilter`` and ``CuckooFilter`` (which
remove keys), ``ScalableBloomFilter`` (which grows), ``AgingBloomFilter`` (which forgets),
and the static ``RibbonFilter`` and ``BinaryFuseFilter``, built once from all their keys.

Keys are ``str``, ``bytes`` (and ``bytearray``, ``memoryview``), ``int`` and tuples of these,
hashed exactly as the Rust library, the ``bloomkit`` CLI and the server hash them: never
with Python's ``hash()``, which changes from one process to the next. So a filter saved here
(``save``, ``to_bytes``, ``pickle``) answers the same in any process, and ``bloomkit
query`` reads it, and a file ``bloomkit build`` wrote loads here (``bloomkit.load``) or is
queried in place, memory-mapped (``bloomkit.open``).

Many keys at once: ``add_many(keys)`` and ``contains_many(keys)`` take any iterable and run
with the GIL released, fastest for a list, a NumPy array of integers (NumPy is optional), or
one buffer of fixed-width keys (``key_size=``).
"""

from ._errors import BloomkitError, FilterFullError, InvalidFilterError, ParameterError
from ._native import (
    DEFAULT_SEED,
    AgingBloomFilter,
    BinaryFuseFilter,
    BlockedBloomFilter,
    BloomFilter,
    CountingBloomFilter,
    CuckooFilter,
    Filter,
    MappedFilter,
    RibbonFilter,
    ScalableBloomFilter,
    SectorBloomFilter,
    __version__,
    hash,
    open,
)

#: Reads a filter of any kind from bytes in bloomkit's format, as its kind's class.
from_bytes = Filter.from_bytes

#: Reads a filter of any kind from a file, as its kind's class.
load = Filter.load

__all__ = [
    "DEFAULT_SEED",
    "AgingBloomFilter",
    "BinaryFuseFilter",
    "BlockedBloomFilter",
    "BloomFilter",
    "BloomkitError",
    "CountingBloomFilter",
    "CuckooFilter",
    "Filter",
    "FilterFullError",
    "InvalidFilterError",
    "MappedFilter",
    "ParameterError",
    "RibbonFilter",
    "ScalableBloomFilter",
    "SectorBloomFilter",
    "__version__",
    "from_bytes",
    "hash",
    "load",
    "open",
]
