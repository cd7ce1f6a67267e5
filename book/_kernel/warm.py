"""Kernels forked from a process that has already imported torch.

Every executed page of the book gets a fresh kernel, and a fresh Python spends
seconds importing torch before its first cell runs: with 17 pages, about half
of the build's execution time. The Makefile runs the English edition's Sphinx
(the one that executes) as

    python book/_kernel/warm.py python -m sphinx ...

which starts the command, then imports torch, Matplotlib and IPython once.
For that command's kernels, ``python3`` names this file (a kernelspec in a
temporary folder put first on ``JUPYTER_PATH``): the kernel manager starts
``warm.py kernel -f <connection file>``, which hands its arguments, folder,
environment and standard streams to the warm process over a Unix socket. That
process forks; the child takes them and becomes the ipykernel that
``python -m ipykernel_launcher`` would have started. Each page still gets its
own process, its own state and fresh random seeds; the build reads, executes
and caches exactly what it did before (``make repro`` compares the outputs).

The launcher stays in between, since the kernel manager signals and waits for
the process it started: it forwards signals to the kernel and exits when the
kernel does, and the kernel exits if the launcher is killed. If it finds no
warm process (not yet: the warm process listens only once it has imported
torch), or one that can't fork safely (it has a thread, which the child
would lack), it becomes ``ipykernel_launcher`` itself. Off Linux,
``warm.py`` just runs the command. Outside the build nothing changes: a
notebook run by hand gets the usual kernel.

A launcher never waits for the imports. The kernel manager picks its
kernel's TCP ports before it starts the launcher, and any other process may
take one of them until the kernel binds it: a launcher that waited seconds
for the imports lost that race on CI, when two builds ran at once (the
stale test's). So the build's first kernels start cold, as they would
without warm.py.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback

SOCKET = "ATTENTION_WARM_KERNELS"  # the environment variable naming the socket
# What the pages' kernels import, but not ipykernel itself, which reads
# JPY_PARENT_PID (set by the kernel manager) when imported. Matplotlib reads
# MPLBACKEND when imported: the warm process sets what ipykernel would set.
PRELOAD = (
    "torch",
    "torch.utils.benchmark",
    "numpy",
    "matplotlib.pyplot",
    "IPython",
    "jupyter_client.session",
    "tornado.ioloop",
    # What some pages pull in, a second or more for each kernel otherwise:
    # torch.broadcast_shapes imports SymPy; the meta device and
    # FlopCounterMode, torch._dynamo. Imported before the socket listens,
    # like the rest: a launcher that connected during an import would wait.
    "sympy",
    "torch._dynamo",
)
INLINE = "module://matplotlib_inline.backend_inline"  # ipykernel's MPLBACKEND
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def kernel(argv: list[str]) -> None:
    """The kernelspec's command: a kernel forked by the warm process, or a new one."""
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        conn.connect(os.environ[SOCKET])
        request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}
        socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
        pid = int(conn.recv(32) or 0)  # 0: the warm process cannot fork
    except (KeyError, OSError, ValueError):
        pid = 0
    if not pid:
        os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *argv])

    def forward(signum: int, _frame: object) -> None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for signum in FORWARDED:
        signal.signal(signum, forward)
    while conn.recv(1):  # the kernel holds the other end until it exits
        pass


def _become_kernel(conn: socket.socket, request: dict, fds: list[int]) -> None:
    """In the forked process: take the launcher's place and run ipykernel."""
    os.setsid()  # out of make's process group, as the kernel manager does
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = ["ipykernel_launcher", *request["argv"]]
    import random

    import numpy
    import torch  # all three imported already

    random.seed(), numpy.random.seed(), torch.seed()  # as a new process would
    conn.send(str(os.getpid()).encode())
    # If the launcher is killed, its end of the socket closes: exit too.
    threading.Thread(target=lambda: conn.recv(1) or os._exit(1), daemon=True).start()
    from ipykernel import kernelapp

    kernelapp.launch_new_instance(argv=request["argv"])


def _fork(conn: socket.socket) -> int:
    """Fork a kernel for the launcher at ``conn``; 0 if none was forked."""
    message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    if threading.active_count() > 1 or len(os.listdir("/proc/self/task")) > 1:
        conn.send(b"0")  # a thread (OpenBLAS's, say) would be missing in the child
        pid = 0
    elif (pid := os.fork()) == 0:
        code = 1
        try:
            _become_kernel(conn, json.loads(message), fds)
            code = 0
        except SystemExit as exit:  # sys.exit(None) is a success
            code = 0 if exit.code is None else exit.code
            code = code if isinstance(code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush(), sys.stderr.flush()
            os._exit(code)  # never back into the warm process's frames
    for fd in fds:
        os.close(fd)
    conn.close()
    return pid


def _kernelspec(folder: str) -> None:
    """``folder/kernels/python3``: this file's ``kernel``, for ``JUPYTER_PATH``."""
    os.makedirs(spec := os.path.join(folder, "kernels", "python3"))
    argv = [sys.executable, os.path.abspath(__file__), "kernel"]
    with open(os.path.join(spec, "kernel.json"), "w") as out:
        json.dump(
            {
                "argv": [*argv, "-f", "{connection_file}"],
                "display_name": "Python 3 (ipykernel)",
                "language": "python",
                "metadata": {"debugger": True},
            },
            out,
        )


def run(command: list[str]) -> int:
    """Run ``command`` with warm kernels; its exit status."""
    if sys.platform != "linux":  # Unix sockets of packets, /proc
        os.execvp(command[0], command)
    if sys.path[0] == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]  # as ipykernel_launcher removes its own folder
    kernels: set[int] = set()
    with tempfile.TemporaryDirectory(prefix="warm-kernels-") as folder:
        _kernelspec(folder)
        paths = [folder, os.environ.get("JUPYTER_PATH", "")]
        os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, paths))
        os.environ[SOCKET] = path = os.path.join(folder, "socket")
        proc = subprocess.Popen(command)
        try:
            os.environ.setdefault("MPLBACKEND", INLINE)
            for name in PRELOAD:  # while the command starts up
                __import__(name)
            # Only now (see the module's docstring): a launcher that finds
            # no socket starts its kernel at once, as usual.
            server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            server.bind(path)
            server.listen(8)
            server.settimeout(0.2)
            while proc.poll() is None:
                kernels -= {pid for pid in kernels if os.waitpid(pid, os.WNOHANG)[0]}
                try:
                    conn, _ = server.accept()
                except TimeoutError:
                    continue
                with conn:  # closed: that launcher starts a kernel of its own
                    try:
                        if pid := _fork(conn):
                            kernels.add(pid)
                    except (OSError, ValueError) as error:
                        print(f"warm.py: {error}", file=sys.stderr)
        finally:
            if proc.poll() is None:
                proc.terminate()
            proc.wait()
            for pid in kernels:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    return proc.returncode


if __name__ == "__main__":
    if sys.argv[1:2] == ["kernel"]:
        kernel(sys.argv[2:])
    else:
        status = run(sys.argv[1:])
        sys.stdout.flush(), sys.stderr.flush()
        # Without tearing down torch and the rest (a second, after the build).
        os._exit(status if status >= 0 else 128 - status)
