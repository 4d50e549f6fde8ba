"""Byte relay between TCP and Unix sockets: the two halves of a run network's host services.

* In the run's relay container: ``python3 relay.py PORT=SOCKET [PORT=SOCKET ...]`` listens
  on each TCP ``PORT`` and forwards every connection to the Unix ``SOCKET`` (a file
  bind-mounted from the host). It prints ``relay: ready`` once every port listens.
* On the host: :class:`UnixToTcpForwarder` accepts on that Unix socket and connects each
  connection to the service's own address (e.g. the emulator on 127.0.0.1).

Bytes are copied both ways as they come (server-sent event streams are not buffered);
a half-close is passed on. Standard library only: the container runs this file's source.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from types import FrameType

_CHUNK = 65536


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(_CHUNK):
            sink.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


class Listener:
    """Accepts on ``server`` and joins each connection to a fresh ``connect()`` socket."""

    def __init__(self, server: socket.socket, connect: Callable[[], socket.socket]) -> None:
        self._server = server
        self._connect = connect
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        self.last_failure: str | None = None  # the last connection it could not make
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)
        self._thread.start()

    def _accept_loop(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = self._connect()
        except OSError as exc:
            self.last_failure = str(exc)
            print(f"relay: cannot reach the service: {exc}", file=sys.stderr, flush=True)
            client.close()
            return
        with self._lock:
            if self._closed:
                client.close()
                upstream.close()
                return
            self._open.update((client, upstream))
        back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
        back.start()
        _pump(client, upstream)
        back.join()
        with self._lock:
            self._open.difference_update((client, upstream))
        client.close()
        upstream.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sockets = list(self._open)
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)


def _unix_client(path: str) -> Callable[[], socket.socket]:
    def connect() -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
        return sock

    return connect


def _tcp_client(host: str, port: int) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=30)
    sock.settimeout(None)  # connected: an idle keep-alive connection stays open
    return sock


def tcp_to_unix(port: int, path: str) -> Listener:
    """Container side: TCP ``port`` on every interface -> the Unix socket ``path``."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", port))
    server.listen(64)
    return Listener(server, _unix_client(path))


class UnixToTcpForwarder:
    """Host side: the Unix socket ``path`` (created here, mode 0666) -> TCP ``host:port``."""

    def __init__(self, path: str, host: str, port: int) -> None:
        self.path, self.address = path, f"{host}:{port}"
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        os.chmod(path, 0o666)  # the relay runs as an unprivileged user
        server.listen(64)
        self._listener = Listener(server, lambda: _tcp_client(host, port))

    @property
    def last_failure(self) -> str | None:
        """``host:port: <error>`` of the last connection to the service that failed."""
        failure = self._listener.last_failure
        return None if failure is None else f"could not connect to {self.address}: {failure}"

    def close(self) -> None:
        self._listener.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


def _stop(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def main(argv: list[str]) -> int:
    """Container entry point: ``PORT=SOCKET`` pairs; runs until SIGTERM."""
    signal.signal(signal.SIGTERM, _stop)
    listeners = []
    for spec in argv:
        port, _, path = spec.partition("=")
        listeners.append(tcp_to_unix(int(port), path))
    print("relay: ready " + " ".join(argv), flush=True)
    try:
        while True:
            signal.pause()
    finally:
        for listener in listeners:
            listener.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
