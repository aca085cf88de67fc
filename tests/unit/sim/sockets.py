"""The TCP sockets a process tree listens on, read from /proc (Linux): for tests that check what a
started service exposes."""

from __future__ import annotations

import os
import socket
from pathlib import Path

LISTEN = "0A"


def _address(hex_address: str) -> str:
    """An address from /proc/net/tcp{,6} (hex, each 32-bit word in host byte order)."""
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, words)


def _listening_inodes() -> dict[str, tuple[str, int]]:
    """inode -> (address, port) of every listening TCP socket in this network namespace."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == LISTEN:
                host, port = fields[1].split(":")
                found[fields[9]] = (_address(host), int(port, 16))
    return found


def descendants(root: int) -> set[int]:
    """``root`` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    tree, todo = set(), [root]
    while todo:
        pid = todo.pop()
        tree.add(pid)
        todo.extend(children.get(pid, []))
    return tree


def process_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def listening(pids: set[int]) -> list[tuple[str, str, int]]:
    """``(process name, address, port)`` of each TCP socket the processes ``pids`` listen on."""
    inodes = _listening_inodes()
    out = []
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                out.append((process_name(pid), *inodes[target[8:-1]]))
    return sorted(set(out))
