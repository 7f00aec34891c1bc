"""The few names both sides of the sandbox use: gradlab's process, and the submission's, where gradlab binds only the
modules gradlab.practice.sandbox.files.SHARED names (this is one of them). Plain standard library, no torch, so that
gradlab.kit.exercise and gradlab.kit.distributed, which `gradlab --help` imports, import it as well as
gradlab.kit.harness does. Every sandbox binds it: it holds no reference, no known mistake and no model answer.
"""

from __future__ import annotations

import socket

# The outputs a harness adds beside the function's own, which are rules rather than values (gradlab.kit.exercise
# leaves them out of the comparison with the reference; gradlab.kit.harness measures them).
CHANGED = "inputs changed"  # one 0/1 per input the function must leave as it found it
GRAPH = "autograd graph"  # how many tensors autograd saved for a backward while the function ran


def loopback_listener(port: int = 0) -> socket.socket:
    """A TCP socket listening on 127.0.0.1:PORT; for 0, on a free port the kernel picks in the bind itself, so that
    nothing can take it before it is used (a port found free, closed and bound again later can be taken in between
    by any connection on the machine). Raises OSError where PORT is in use."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as torch's TCPStore sets its own
        s.bind(("127.0.0.1", port))
        s.listen()
    except BaseException:
        s.close()
        raise
    return s


def loopback_interface() -> str | None:
    """The loopback interface's name (lo on Linux, lo0 on macOS), for GLOO_SOCKET_IFNAME."""
    names = [name for _, name in socket.if_nameindex()]
    return next((n for n in ("lo", "lo0") if n in names), None)
