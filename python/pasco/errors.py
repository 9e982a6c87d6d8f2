"""Pasco's status codes as Python exceptions.

Every failing library call raises a subclass of :class:`PascoError` named
after TensorFlow's (``tf.errors``) where the code means the same thing,
carrying the library's message (the one ``pasco_model_last_error``,
``pasco_strategy_error``, ... keep) and the code in ``.code``.
"""

from __future__ import annotations

from typing import Dict, Optional, Type

__all__ = ["PascoError", "InvalidArgumentError", "ResourceExhaustedError",
           "NotFoundError", "AlreadyExistsError", "UnavailableError",
           "CancelledError", "AbortedError", "DeadlineExceededError",
           "OutOfRangeError", "FailedPreconditionError", "InternalError",
           "IOError_", "ProtocolError", "ClosedError", "UnknownError",
           "PermissionDeniedError", "error_for"]


class PascoError(Exception):
    """A failed library call: ``code`` (pasco_err), ``name``
    (``"PASCO_EINVAL"``) and the library's message as ``str(e)``."""

    code: int = 15
    name: str = "PASCO_EUNKNOWN"

    def __init__(self, message: str, code: Optional[int] = None,
                 name: Optional[str] = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        if name is not None:
            self.name = name


class InvalidArgumentError(PascoError, ValueError):
    """PASCO_EINVAL: a bad argument, option, config or data."""
    code = 1


class ResourceExhaustedError(PascoError, MemoryError):
    """PASCO_ENOMEM."""
    code = 2


class NotFoundError(PascoError, LookupError):
    """PASCO_ENOTFOUND: a missing file, checkpoint, dataset factory."""
    code = 3


class AlreadyExistsError(PascoError):
    """PASCO_EEXIST."""
    code = 4


class UnavailableError(PascoError):
    """PASCO_EUNAVAILABLE: a task is down or unreachable."""
    code = 5


class CancelledError(PascoError):
    """PASCO_ECANCELLED."""
    code = 6


class AbortedError(PascoError):
    """PASCO_EABORTED."""
    code = 7


class DeadlineExceededError(PascoError, TimeoutError):
    """PASCO_ETIMEDOUT."""
    code = 8


class OutOfRangeError(PascoError):
    """PASCO_EOUTOFRANGE: end of data."""
    code = 9


class FailedPreconditionError(PascoError):
    """PASCO_EPRECONDITION."""
    code = 10


class InternalError(PascoError):
    """PASCO_EINTERNAL."""
    code = 11


class IOError_(PascoError, OSError):
    """PASCO_EIO (named with a trailing underscore: IOError is Python's)."""
    code = 12


class ProtocolError(PascoError):
    """PASCO_EPROTO: a malformed message or file."""
    code = 13


class ClosedError(PascoError):
    """PASCO_ECLOSED."""
    code = 14


class UnknownError(PascoError):
    """PASCO_EUNKNOWN."""
    code = 15


class PermissionDeniedError(PascoError, PermissionError):
    """PASCO_EPERM."""
    code = 16


_BY_CODE: Dict[int, Type[PascoError]] = {
    c.code: c for c in (InvalidArgumentError, ResourceExhaustedError,
                        NotFoundError, AlreadyExistsError, UnavailableError,
                        CancelledError, AbortedError, DeadlineExceededError,
                        OutOfRangeError, FailedPreconditionError,
                        InternalError, IOError_, ProtocolError, ClosedError,
                        UnknownError, PermissionDeniedError)}


def error_for(code: int, message: str) -> PascoError:
    """The exception for status ``code`` with ``message`` (the library's
    words for the code when the message is empty)."""
    from ._lib import lib

    name = lib.pasco_errname(code).decode()
    what = lib.pasco_strerror(code).decode()
    text = f"{message} ({what})" if message else what
    return _BY_CODE.get(code, PascoError)(text, code, name)


def check(code: int, message: "Optional[str]" = None) -> None:
    """Raises the exception for a non-zero status, with message."""
    if code != 0:
        raise error_for(code, message or "")
