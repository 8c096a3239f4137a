"""The exceptions bloomkit raises, defined in Python so that each can have two bases."""

from typing import Optional


class BloomkitError(Exception):
    """The base of every error bloomkit raises itself.

    Its message is the Rust library's, which says what was expected, what was found and how
    to fix it. Errors that Python has a class for come as that class instead: ``MemoryError``
    when a filter does not fit, ``OSError`` from files, ``TypeError`` for a value that is not
    a key, ``OverflowError`` for an integer outside 128 bits.
    """


class InvalidFilterError(BloomkitError, ValueError):
    """Bytes or a file that do not hold a valid bloomkit filter (or hold another kind).

    Attributes:
        path: the file read, or ``None`` for bytes.
        offset: where in the data reading stopped: the start of the header field (or of
            the 8 KiB payload chunk) just read when the problem showed, the kind field for
            a filter of another kind, the checksum for a mismatch, the end of the data if it
            is truncated, the end of the filter if bytes follow it.
    """

    path: Optional[str]
    offset: int

    def __init__(self, message: str, path: Optional[str] = None, offset: int = 0) -> None:
        super().__init__(message)
        self.path = path
        self.offset = offset

    def __reduce__(self):  # keep path and offset through pickling (multiprocessing)
        return (type(self), (self.args[0], self.path, self.offset))


class ParameterError(BloomkitError, ValueError):
    """A parameter outside its range (a false-positive rate of 0, a zero-bit filter), or two
    filters that differ in a parameter and so cannot be merged."""


class FilterFullError(BloomkitError):
    """The filter holds all it can and the insert changed nothing: a cuckoo filter without
    ``expansion``, or a ``non_scaling`` scalable filter. A batch that stops here has added
    the keys before the one that did not fit."""
