"""The provider emulator as a real HTTP service, in-process or as ``pairlab emulator serve``.

In-process use (what a run does)::

    with ProviderEmulator(ledger_dir) as emulator:          # binds 127.0.0.1 on a free port
        ep = emulator.register_episode(EpisodeRegistration(task_id="fix-median", seed=7))
        env = {**ep.claude_env()}                          # or ep.codex_args() + ep.codex_env()
        ... run the CLI ...
        truth = ep.ground_truth()                          # read back from ep.ledger_path

HTTP/1.1 with keep-alive; SSE bodies use chunked transfer encoding, so a cut stream
(an injected fault) is a connection closed without the final chunk, which a client
sees as an incomplete body, exactly like a dropped connection.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from pairlab.adapters.emulator.auth_gate import AuthGate
from pairlab.adapters.emulator.model_api import Incoming
from pairlab.adapters.emulator.reply import Reply
from pairlab.adapters.emulator.service import EmulatorService
from pairlab.core.emulator.quota_model import AccountPlan
from pairlab.core.emulator.request_ledger import (
    EpisodeRegistration,
    RequestRow,
    ground_truth,
    read_ledger,
)
from pairlab.core.errors import EnvironmentUnavailable, ReasonCode
from pairlab.core.schemas.usage import UsageVector

TLS_HANDSHAKE_TIMEOUT_S: Final = 30.0
MAX_BODY_BYTES: Final = 32 * 1024 * 1024
CODEX_PROVIDER_ID: Final = "pairlab-emulator"
CODEX_KEY_ENV: Final = "PAIRLAB_EMULATOR_KEY"
# what the CLIs are given as credentials (the emulator accepts any)
CLAUDE_API_KEY: Final = "sk-ant-api03-pairlab-emulator"
CLAUDE_OAUTH_TOKEN: Final = "sk-ant-oat01-pairlab-emulator"
# Claude Code's quiet mode: no telemetry, update checks or error reports (REAL-CLIS.md)
CLAUDE_QUIET_ENV: Final = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # small SSE writes on a kept-alive connection would otherwise wait for the peer's
    # delayed ACK (~40 ms per response: Nagle's algorithm)
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        return  # the ledger is the log

    def _incoming(self) -> Incoming | None:
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_BODY_BYTES:
            self.send_error(413, "request body too large")
            return None
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        url = urlsplit(self.path)
        return Incoming(self.command, url.path, headers, body, url.query)

    def _serve(self) -> None:
        incoming = self._incoming()
        if incoming is None:
            return
        self._write(self.server.service.handle(incoming))

    do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = _serve

    def _write(self, reply: Reply) -> None:
        sent = 0
        try:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if reply.frames is None:
                body = reply.body or b""
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)
                self.wfile.flush()
                reply.on_delivered()
                return
            self.send_header("transfer-encoding", "chunked")
            if reply.cut_after is not None:  # no client may reuse a connection we will cut
                self.send_header("connection", "close")
            self.end_headers()
            frames = reply.frames if reply.cut_after is None else reply.frames[: reply.cut_after]
            for frame in frames:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                self.wfile.flush()
                sent += 1
            if reply.cut_after is not None:
                if not reply.cut_drops_connection:  # end the body: the SSE stream just stops
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                how = "connection dropped" if reply.cut_drops_connection else "stream ended early"
                reply.on_failed(f"cut-stream: {how} after {sent} events (injected fault)", sent)
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError as exc:
            self.close_connection = True
            reply.on_failed(f"client went away: {exc.__class__.__name__}", sent)
            return
        reply.on_delivered()


class _Server(ThreadingHTTPServer):
    """HTTP, or HTTPS with ``tls``: each accepted connection's TLS handshake runs in its
    own handler thread (a client that refuses the certificate ends only its connection)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        service: EmulatorService,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        super().__init__(address, _Handler)
        self.service = service
        self.tls = tls

    def get_request(self) -> tuple[socket.socket, object]:
        sock, address = super().get_request()
        if self.tls is None:
            return sock, address
        return self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address

    def finish_request(self, request: object, client_address: object) -> None:
        if isinstance(request, ssl.SSLSocket):
            request.settimeout(TLS_HANDSHAKE_TIMEOUT_S)
            try:
                request.do_handshake()
            except (ssl.SSLError, OSError):
                return  # the client refused the certificate (or went away): nothing served
            request.settimeout(None)
        super().finish_request(request, client_address)  # type: ignore[arg-type]


def server_tls_context(cert_file: Path, key_file: Path) -> ssl.SSLContext:
    """The emulator's TLS context: its certificate chain (PEM) and private key."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert_file, key_file)
    except (OSError, ssl.SSLError) as exc:
        raise EnvironmentUnavailable(
            f"cannot load the TLS certificate {cert_file} / key {key_file}: {exc}",
            reason=ReasonCode.ENVIRONMENT_UNAVAILABLE,
        ) from exc
    return context


@dataclass(frozen=True)
class EpisodeHandle:
    """One registered episode: where its CLI points and where its ground truth goes."""

    token: str
    ledger_path: Path
    server_url: str  # http://HOST:PORT as seen from this process
    # waits until every request received has its ledger row (set by ProviderEmulator)
    wait_idle: Callable[[float], bool] = field(default=lambda _timeout: True, repr=False)

    def base_url(self, server_url: str | None = None) -> str:
        """``<server>/e/<token>``; pass ``server_url`` when the CLI reaches the emulator
        under another address (a container on a per-run network)."""
        return f"{(server_url or self.server_url).rstrip('/')}/e/{self.token}"

    def claude_env(self, *, oauth: bool = False, server_url: str | None = None) -> dict[str, str]:
        """Environment for ``claude``: base URL, a credential, quiet mode.

        ``oauth=True`` sends an OAuth-style token (``CLAUDE_CODE_OAUTH_TOKEN``): only then
        does Claude Code read the unified rate-limit headers and emit ``rate_limit_event``
        in stream-json (REAL-CLIS.md)."""
        credential = (
            {"CLAUDE_CODE_OAUTH_TOKEN": CLAUDE_OAUTH_TOKEN}
            if oauth
            else {"ANTHROPIC_API_KEY": CLAUDE_API_KEY}
        )
        return {"ANTHROPIC_BASE_URL": self.base_url(server_url), **credential, **CLAUDE_QUIET_ENV}

    def codex_args(
        self, *, server_url: str | None = None, stream_max_retries: int | None = None
    ) -> list[str]:
        """``-c`` overrides that point ``codex`` at this episode (no config file needed)."""
        provider = (
            f'{{name="pairlab emulator",base_url="{self.base_url(server_url)}/v1",'
            f'wire_api="responses",env_key="{CODEX_KEY_ENV}"'
        )
        if stream_max_retries is not None:
            provider += f",stream_max_retries={stream_max_retries}"
        provider += "}"
        return [
            "-c",
            f'model_provider="{CODEX_PROVIDER_ID}"',
            "-c",
            f"model_providers.{CODEX_PROVIDER_ID}={provider}",
        ]

    def codex_env(self) -> dict[str, str]:
        return {CODEX_KEY_ENV: "pairlab-emulator"}

    def usage_urls(self, server_url: str | None = None) -> dict[str, str]:
        """Where the quota probes read this episode's account (claude-oauth-usage, codex-usage-endpoint)."""
        base = self.base_url(server_url)
        return {
            "claude-oauth-usage": f"{base}/api/oauth/usage",
            "codex-usage-endpoint": f"{base}/backend-api/wham/usage",
        }

    def rows(self, *, timeout_s: float = 10.0) -> list[RequestRow]:
        """The request rows, once every request received so far has its row written."""
        self.wait_idle(timeout_s)
        return read_ledger(self.ledger_path)[1]

    def ground_truth(self) -> UsageVector:
        return ground_truth(self.rows())


class ProviderEmulator:
    """Start/stop the emulator on a port of this process; register episodes."""

    def __init__(
        self,
        ledger_dir: Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        catalog_dir: Path | None = None,
        clock: Callable[[], float] = time.time,
        accounts: dict[str, AccountPlan] | None = None,
        keep_requests: bool = False,
        auth: AuthGate | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.tls = tls
        self.service = EmulatorService(
            ledger_dir,
            catalog_dir=catalog_dir,
            clock=clock,
            accounts=accounts,
            keep_requests=keep_requests,
            auth=auth,
        )
        self.host, self.port = host, port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the emulator is not started")
        host, port = self._server.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else str(host)
        shown = name if ":" not in name else f"[{name}]"
        return f"{'https' if self.tls else 'http'}://{shown}:{port}"

    @property
    def bound_port(self) -> int:
        """The TCP port the emulator listens on (the one chosen when started with port 0)."""
        if self._server is None:
            raise RuntimeError("the emulator is not started")
        return int(self._server.server_address[1])

    def start(self) -> ProviderEmulator:
        try:
            self._server = _Server((self.host, self.port), self.service, self.tls)
        except OSError as exc:
            raise EnvironmentUnavailable(
                f"the provider emulator cannot listen on {self.host}:{self.port}: {exc}",
                reason=ReasonCode.ENVIRONMENT_UNAVAILABLE,
            ) from exc
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name="pairlab-emulator",
            daemon=True,
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted (``pairlab emulator serve``)."""
        if self._server is None:
            self.start()
            assert self._thread is not None
        try:
            while self._thread is not None and self._thread.is_alive():
                self._thread.join(0.5)
        finally:
            self.stop()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)
        self._server = self._thread = None

    def __enter__(self) -> ProviderEmulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def charge_mark(self, account: str) -> int:
        """The account's charge counter now (0 before its first charge)."""
        return self.service.charge_mark(account)

    def charged_between(self, account: str, start: int, end: int) -> list[str]:
        """Tokens of the episodes whose charges are numbered ``start < n <= end``."""
        return self.service.charged_between(account, start, end)

    def register_episode(
        self, registration: EpisodeRegistration, token: str | None = None
    ) -> EpisodeHandle:
        episode = self.service.register(registration, token)
        return EpisodeHandle(
            token=episode.token,
            ledger_path=episode.ledger_path,
            server_url=self.url,
            wait_idle=episode.wait_idle,
        )


__all__ = [
    "CLAUDE_API_KEY",
    "CLAUDE_OAUTH_TOKEN",
    "CLAUDE_QUIET_ENV",
    "CODEX_KEY_ENV",
    "CODEX_PROVIDER_ID",
    "EpisodeHandle",
    "ProviderEmulator",
]
