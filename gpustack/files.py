"""Reading a user's file with bounds: a regular file only, at most a limit, never blocking.

`/dev/zero` would grow without end and a FIFO would block forever when read whole, and the size a
file reports can change while it is read. So the file is opened without blocking, refused unless it
is a regular file, and read up to the limit plus one byte: one byte more than allowed is enough to
say it is too large.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


class FileRefused(ValueError):
    """A file that cannot be used; the message says why, for people (no file contents in it)."""


def read_limited(path: str | os.PathLike[str], limit: int, what: str = "file") -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them, or FileRefused."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        handle = os.open(path, flags)
    except FileNotFoundError:
        raise FileRefused("no such file") from None
    except IsADirectoryError:
        raise FileRefused(f"is a directory, not a {what}") from None
    except OSError as exc:
        raise FileRefused(f"cannot be read ({exc.strerror})") from None
    try:
        info = os.fstat(handle)
        if stat.S_ISDIR(info.st_mode):
            raise FileRefused(f"is a directory, not a {what}")
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(f"is not a regular file (a device, FIFO or socket); give a {what}")
        if info.st_size > limit:
            raise FileRefused(f"is {info.st_size:,} bytes; a {what} may be at most {limit:,} bytes")
        chunks, size = [], 0
        while size <= limit:
            try:
                chunk = os.read(handle, min(1 << 20, limit + 1 - size))
            except OSError as exc:
                raise FileRefused(f"cannot be read ({exc.strerror})") from None
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise FileRefused(f"grew past {limit:,} bytes while it was read; a {what} may be at most {limit:,} bytes")
        return b"".join(chunks)
    finally:
        os.close(handle)


def _mode_for(path: Path) -> int:
    """The permission bits of the file being replaced, or 0666 less the umask for a new one."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0o022)
        os.umask(umask)
        return 0o666 & ~umask


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` so that a reader sees the old file or the new one, never a part; FileRefused
    (saying why) when it cannot be written."""
    folder = path.parent if str(path.parent) else Path(".")
    try:
        handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise FileRefused(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        os.chmod(temp, _mode_for(path))  # mkstemp makes 0600: keep the replaced file's mode, or the usual one
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp, path)
    except OSError as exc:
        Path(temp).unlink(missing_ok=True)
        raise FileRefused(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
