"""Sockets inside a sandbox's network namespace, made by a helper process (netns_helper.py) that joins it.

The node keeps the sockets and runs the relays itself, so the sandboxed code can neither reach nor change them:
a listening socket on the sandbox's loopback (the egress proxy, an opened endpoint) is accepted from by the
node; an unconnected one is connected by the node to the port an instance listens on.
"""
import socket
import subprocess
import sys
import threading
from pathlib import Path

from platform_app.sandbox.base import SandboxUnavailable

HELPER = Path(__file__).with_name("netns_helper.py")


class NetnsBridge:
    """The helper of one sandbox, while the sandbox runs."""

    def __init__(self, pid: int):
        ours, theirs = socket.socketpair()
        self.process = subprocess.Popen([sys.executable, "-I", "-S", str(HELPER), str(pid), str(theirs.fileno())],
                                        pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        theirs.close()
        self.channel, self.lock = ours, threading.Lock()
        self.channel.settimeout(10)
        greeting = self.channel.recv(256).decode(errors="replace").strip()
        if greeting != "ready":
            self.close()
            raise SandboxUnavailable(f"Could not join the sandbox's network namespace: {greeting or 'no answer'}")

    def _ask(self, request: str) -> socket.socket:
        with self.lock:
            self.channel.sendall(request.encode() + b"\n")
            message, fds, _, _ = socket.recv_fds(self.channel, 256, 1)
        if not fds:
            raise OSError(message.decode(errors="replace").strip() or "the namespace helper stopped")
        return socket.socket(fileno=fds[0])

    def listen(self, port: int) -> socket.socket:
        """A socket listening on 127.0.0.1:`port` inside the sandbox."""
        return self._ask(f"listen {port}")

    def socket(self) -> socket.socket:
        """An unconnected TCP socket inside the sandbox (connect it to 127.0.0.1:<port>)."""
        return self._ask("socket")

    def close(self) -> None:
        self.channel.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
