"""The machine's own limits, measured in the same run as a benchmark: what a Python process moves
over a loopback TCP socket (``sendall`` / ``recv_into``), with ``os.sendfile`` of a file, and over
TLS (Python's ``ssl``, i.e. OpenSSL, at both ends).

Every benchmark that prints a broker rate prints one of these beside it, so the ratio says how
close the broker gets to what the machine can do, whatever the machine.  With ``sender_cpu`` /
``receiver_cpu`` the two ends run in separate processes pinned like the broker and its load
generator, so the baseline pays the same cross-core costs.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import socket
import ssl
import time
from collections.abc import Callable, Iterator

CHUNK = 1 << 20


def pin(cpu: int | None, pid: int = 0) -> None:
    """Pin process ``pid`` (0: this one) to ``cpu`` when one is given and the OS allows it."""
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(pid, {cpu})


@contextlib.contextmanager
def pinned(cpu: int | None) -> Iterator[None]:
    """Run the block pinned to ``cpu`` (if given), then restore this process's affinity."""
    if cpu is None or not hasattr(os, "sched_getaffinity"):
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def loopback_pair() -> tuple[socket.socket, socket.socket]:
    srv = socket.create_server(("127.0.0.1", 0))
    a = socket.create_connection(srv.getsockname())
    b, _ = srv.accept()
    srv.close()
    return a, b


def receive_all(sock: socket.socket, total: int) -> int:
    """Read and drop up to ``total`` bytes from ``sock`` (less when it closes); returns how many came."""
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    got = 0
    while got < total:
        n = sock.recv_into(view)
        if not n:
            break
        got += n
    return got


def _recv_then_ack(sock: socket.socket, total: int, cpu: int | None) -> None:
    pin(cpu)
    receive_all(sock, total)
    sock.sendall(b"k")


def _send_file(sock: socket.socket, path: str, total: int, cpu: int | None) -> None:
    pin(cpu)
    sock.recv(1)  # the go signal
    with open(path, "rb") as fh:
        offset = 0
        while offset < total:
            sent = os.sendfile(sock.fileno(), fh.fileno(), offset, total - offset)
            if sent <= 0:
                break
            offset += sent


def _best(runs: int, once: Callable[[], float]) -> float:
    return min(once() for _ in range(runs))


def socket_rate(total: int, *, sender_cpu: int | None = None, receiver_cpu: int | None = None,
                runs: int = 3) -> float:
    """Bytes/s over a loopback TCP socket pair: ``sendall`` of 1 MiB chunks here, ``recv_into`` in
    a child process; best of ``runs``."""
    ctx = multiprocessing.get_context("fork")
    chunk = os.urandom(CHUNK)

    def once() -> float:
        a, b = loopback_pair()
        child = ctx.Process(target=_recv_then_ack, args=(b, total, receiver_cpu))
        child.start()
        b.close()
        start = time.perf_counter()
        sent = 0
        view = memoryview(chunk)
        while sent < total:
            n = min(CHUNK, total - sent)
            a.sendall(view[:n])
            sent += n
        a.recv(1)
        elapsed = time.perf_counter() - start
        child.join()
        a.close()
        return elapsed

    with pinned(sender_cpu):
        return total / _best(runs, once)


def _receive_from(child: Callable[..., None], args: tuple[object, ...], total: int, what: str,
                  wrap: Callable[[socket.socket], socket.socket] | None = None) -> float:
    """Seconds to receive ``total`` bytes over a loopback connection from a forked child running
    ``child(its socket, *args)``, which sends once it reads the go signal; ``wrap``: this end's socket
    wrapped (TLS)."""
    a, b = loopback_pair()
    process = multiprocessing.get_context("fork").Process(target=child, args=(b, *args))
    process.start()
    b.close()
    with wrap(a) if wrap is not None else a as sock:
        start = time.perf_counter()
        sock.sendall(b"g")
        got = receive_all(sock, total)
        elapsed = time.perf_counter() - start
    process.join()
    if got < total:
        raise RuntimeError(f"{what} loopback moved {got} of {total} bytes")
    return elapsed


def sendfile_rate(path: str, total: int, *, sender_cpu: int | None = None, receiver_cpu: int | None = None,
                  runs: int = 3) -> float:
    """Bytes/s of ``os.sendfile`` of ``path`` (its first ``total`` bytes, page-cache warm after the
    first run) over a loopback TCP socket, sent by a child process, received here; best of ``runs``."""
    total = min(total, os.path.getsize(path))
    with pinned(receiver_cpu):
        return total / _best(runs, lambda: _receive_from(_send_file, (path, total, sender_cpu), total, "sendfile"))


def page_cache_write_rates(directory: str, total: int, chunk: int, *, cpu: int | None = None) -> tuple[float, float]:
    """Bytes/s of ``os.pwrite`` of ``chunk``-byte pieces (no fsync) into a new file in ``directory``: first into
    pages the page cache takes from free memory, then, after that file is removed, into a second new file
    that takes the pages its removal freed (the page cache of a broker whose retention deletes as fast as it
    writes).  On a virtual machine the two differ: memory the guest freed long ago may have been handed back
    to the host, and the first write to each such page then waits for the host to supply it."""
    data = memoryview(os.urandom(chunk))
    written = total - total % chunk

    def once(path: str) -> float:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            start = time.perf_counter()
            for position in range(0, written, chunk):
                os.pwrite(fd, data, position)
            return time.perf_counter() - start
        finally:
            os.close(fd)

    first, second = os.path.join(directory, ".page-cache-1"), os.path.join(directory, ".page-cache-2")
    with pinned(cpu):
        try:
            fresh = once(first)
            os.unlink(first)  # its dirty pages are dropped, not written back, and go to the free lists
            reused = once(second)
        finally:
            for path in (first, second):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
    return written / fresh, written / reused


def confine_memory(pid: int, limit_bytes: int) -> str | None:
    """Put process ``pid`` in a new memory cgroup (v1 or v2, beside this process's own) that holds at most
    ``limit_bytes``, page cache included: once its page cache is that full, the process's writes reuse the
    pages of what it wrote before (the kernel reclaims its oldest clean pages), as on a machine whose memory
    is full of a long-running broker's log — instead of taking free memory, which a virtual machine may have
    handed back to the host.  Returns the cgroup's directory (for :func:`release_memory`), or None when this
    machine does not let us make one."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            base, limit_file = f"/sys/fs/cgroup/memory{path}", "memory.limit_in_bytes"
            break
    else:
        base, limit_file = "/sys/fs/cgroup" + next((ln.split(":", 2)[2] for ln in lines if ln.startswith("0::")), "/"), \
            "memory.max"
    directory = os.path.join(base, f"kbroker-bench-{pid}")
    try:
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, limit_file), "w") as f:
            f.write(str(limit_bytes))
        with open(os.path.join(directory, "cgroup.procs"), "w") as f:
            f.write(str(pid))
    except OSError:
        with contextlib.suppress(OSError):
            os.rmdir(directory)
        return None
    return directory


def release_memory(directory: str | None) -> None:
    """Remove a cgroup :func:`confine_memory` made (its process has exited)."""
    if directory is not None:
        with contextlib.suppress(OSError):
            os.rmdir(directory)


def _send_tls(sock: socket.socket, context: ssl.SSLContext, total: int, cpu: int | None) -> None:
    pin(cpu)
    with context.wrap_socket(sock, server_side=True) as tls:
        tls.recv(1)  # the go signal
        view = memoryview(os.urandom(CHUNK))
        sent = 0
        while sent < total:
            n = min(CHUNK, total - sent)
            tls.sendall(view[:n])
            sent += n


def tls_socket_rate(total: int, cafile: str, certfile: str, keyfile: str, *, sender_cpu: int | None = None,
                    receiver_cpu: int | None = None, runs: int = 3) -> float:
    """Bytes/s over a loopback TLS connection: a child process ``sendall``s 1 MiB chunks through
    ``ssl`` (certificate ``certfile``), this one ``recv_into``s them (trusting ``cafile``); best of
    ``runs``.  What user-space TLS moves on this machine, one connection, one core at each end."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(certfile, keyfile)
    client = ssl.create_default_context(cafile=cafile)

    def wrap(sock: socket.socket) -> socket.socket:
        return client.wrap_socket(sock, server_hostname="localhost")

    with pinned(receiver_cpu):
        return total / _best(runs, lambda: _receive_from(_send_tls, (server, total, sender_cpu), total, "TLS", wrap))
