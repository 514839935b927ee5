"""Small file-system helpers: atomic replace of small metadata files, directory fsync, unlink if present."""

from __future__ import annotations

import os


def fsync_dir(path: str) -> None:
    """Make a rename/creation/unlink inside ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def unlink_if_present(path: str) -> None:
    """Unlink ``path``; a file already gone is not an error."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def atomic_write(path: str, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` so readers (and crash recovery) see old or new, never half."""
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if durable:
        fsync_dir(os.path.dirname(path) or ".")
