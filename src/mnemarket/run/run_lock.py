"""One writer per run directory: an advisory lock the operating system drops when the holder dies.

`run`, `resume`, `replay` and `compare` cells take it for as long as they write a run; a second
writer gets one line naming the holder instead of corrupting the run (two resumes interleaving
turns, or dying on a raw UNIQUE error). Inspection (`inspect`, `memory show/search`) never takes it.
A killed holder releases it at once (flock), so kill -9 and resume still works.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import IO

from mnemarket.errors import ConfigError

LOCK_FILE = ".writer.lock"


class RunLock:
    """Holds the writer lock of ``run_dir`` from :meth:`acquire` until :meth:`release`."""

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / LOCK_FILE
        self._handle: IO[str] | None = None

    def acquire(self) -> None:
        """Take the lock, or raise :class:`ConfigError` naming the process that holds it."""
        if self._handle is not None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # O_NOFOLLOW: a symlink planted at the lock's name is refused, never written through.
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            handle = os.fdopen(fd, "r+")
        except OSError as exc:  # a read-only run directory: say so before anything is written
            if exc.errno == errno.ELOOP:
                raise ConfigError(f"{self.path} is a symlink; a run's lock file must be a plain file: remove the "
                                  "link, then run the command again") from None
            raise ConfigError(f"cannot write in {self.path.parent} ({exc.strerror}); a writer needs the run directory "
                              "writable: fix its permissions or copy it somewhere writable (inspect and memory "
                              "commands read it as it is)") from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise ConfigError(f"{self.path.parent} is being written by {holder}; wait for it to finish or stop it, "
                              "then run the command again (inspect and memory commands work meanwhile)") from None
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "command": " ".join(os.path.basename(a) for a in sys.argv[:3]),
                                 "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}))
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        if self._handle is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None


__all__ = ["LOCK_FILE", "RunLock"]
