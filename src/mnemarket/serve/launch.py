"""Starting and stopping `mnemarket serve`: load the model safely, bind, serve with uvicorn.

The model loads through the project's own loader (no repacked weight buffers, the crash check in
a child process: :mod:`mnemarket.providers.llama_cpu`), so the server runs on every x86-64 CPU the
in-process path runs on, AMX included. The socket is bound before the ready line is printed, so a
client (or a test) that reads ``ready on URL`` can connect at once, and port 0 picks a free port.
SIGTERM or SIGINT stop the server: during the load they end the crash-check child with it
(``subprocess.run`` kills its child on any exception), while serving uvicorn finishes the
requests in flight (a few seconds at most) and exits; the server starts no other process.
"""

from __future__ import annotations

import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from mnemarket.errors import ProviderError

GRACEFUL_SHUTDOWN_S = 10
BACKLOG = 128
#: Requests held at once (in flight and queued for a slot) before uvicorn answers 503, which
#: mnemarket's client retries with backoff.
QUEUE_PER_SLOT = 32


@dataclass(frozen=True)
class ServeOptions:
    """What `mnemarket serve` was asked for."""

    host: str = "127.0.0.1"
    port: int = 8000
    slots: int = 1
    threads: int | None = None
    model_path: Path | None = None
    n_ctx: int = 2048
    embeddings: bool = True
    max_requests: int | None = None
    """Stop after this many requests (a bounded server for scripts and tests); None: until stopped."""


def _stop_on_sigterm() -> None:
    """SIGTERM raises like Ctrl-C while the model loads, so the crash-check child dies with us."""
    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, stop)


def load_slots(options: ServeOptions) -> list:
    """One loaded model per slot (each its own llama.cpp context and prefix cache)."""
    from mnemarket.providers import GemmaLocalLLM

    return [GemmaLocalLLM(model_path=options.model_path, threads=options.threads, n_ctx=options.n_ctx, instance=i)
            for i in range(options.slots)]


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: a free one).

    Raises:
        ProviderError: the address is taken or not this machine's.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ProviderError(f"mnemarket serve cannot listen on {host}:{port} ({exc.strerror}); pick another --port "
                            "(0 picks a free one) or stop what holds it") from None
    sock.listen(BACKLOG)
    return sock


def serve(options: ServeOptions, announce=print) -> None:
    """Load the model, bind, print ``ready on URL`` and serve until SIGTERM/SIGINT (or ``max_requests``).

    Raises:
        ProviderError: the model cannot load (missing, or it crashed in the test decode), or the
            address cannot be bound.
    """
    import uvicorn

    from mnemarket.serve.app import SlotPool, create_app

    _stop_on_sigterm()
    try:
        pool = SlotPool(load_slots(options))
    except KeyboardInterrupt:
        sys.exit(128 + signal.SIGTERM)
    sock = bind(options.host, options.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    embedder = None
    if options.embeddings:
        from mnemarket.providers import default_embedder
        embedder = default_embedder
    config = uvicorn.Config(create_app(pool, embedder), log_level="warning", access_log=False,
                            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S, limit_max_requests=options.max_requests,
                            limit_concurrency=QUEUE_PER_SLOT * options.slots)
    server = uvicorn.Server(config)  # installs its own SIGTERM/SIGINT handlers: a graceful stop
    announce(f"mnemarket serve: ready on http://{shown}:{port}/v1 (model {pool.model_version}, "
             f"{options.slots} slot{'s' if options.slots != 1 else ''}, structured output json_schema)")
    sys.stdout.flush()
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the stopping signal once it has shut down
        pass
    finally:
        sock.close()


__all__ = ["ServeOptions", "bind", "load_slots", "serve"]
