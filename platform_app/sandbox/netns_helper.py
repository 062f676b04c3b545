"""Runs as its own small process (`python -I -S netns_helper.py <pid> <fd>`): joins the user and network
namespaces of sandbox process <pid> and makes sockets there for the node, passing them back over the socket
<fd> (SCM_RIGHTS). A socket keeps the namespace it was made in, so the node then listens and connects inside
the sandbox's own loopback while its relays stay outside, out of the sandboxed code's reach.

Requests, one per line: `listen <port>` (a TCP socket listening on 127.0.0.1:<port>) and `socket` (an
unconnected TCP socket). Answers: `ok` with the descriptor, or `error <reason>`. Standard library only: no
project import, so nothing of the platform is loaded into a process that joins a sandbox.
"""
import ctypes
import os
import signal
import socket
import sys

CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000
PR_SET_PDEATHSIG = 1


def _setns(fd: int, kind: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, kind) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def main(pid: int, fd: int) -> None:
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # never outlive the node
    channel = socket.socket(fileno=fd)
    try:
        userns = os.open(f"/proc/{pid}/ns/user", os.O_RDONLY)
        netns = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
        if os.geteuid() != 0:  # root already holds CAP_SYS_ADMIN over every namespace below its own
            _setns(userns, CLONE_NEWUSER)
        _setns(netns, CLONE_NEWNET)
    except OSError as exc:
        channel.sendall(f"error {exc}\n".encode())
        return
    channel.sendall(b"ready\n")
    for line in channel.makefile("r"):
        words = line.split()
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            if words[:1] == ["listen"]:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("127.0.0.1", int(words[1])))
                sock.listen(128)
            elif words != ["socket"]:
                raise ValueError(f"unknown request {line.strip()!r}")
        except (OSError, ValueError, IndexError) as exc:
            channel.sendall(f"error {exc}\n".encode())
            continue
        socket.send_fds(channel, [b"ok\n"], [sock.fileno()])
        sock.close()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
