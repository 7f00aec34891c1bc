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


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loopback_interface() -> str | None:
    """The loopback interface's name (lo on Linux, lo0 on macOS), for GLOO_SOCKET_IFNAME."""
    names = [name for _, name in socket.if_nameindex()]
    return next((n for n in ("lo", "lo0") if n in names), None)
