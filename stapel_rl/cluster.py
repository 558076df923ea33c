"""Ray set-up shared by distributed self-play (``train.distributed``) and tournaments (``eval.tournament``).

Ray is the optional extra ``ray``: it is imported only when a caller asks for it.
"""

from __future__ import annotations

import socket
import urllib.parse


def _check_reachable(address: str, timeout: float) -> None:
    """Fail fast with a clear message when a cluster address does not answer (Ray would retry for minutes)."""
    if address == "auto":
        return
    parsed = urllib.parse.urlsplit(address if "://" in address else f"gcs://{address}")
    host, port = parsed.hostname, parsed.port
    if not host or not port:
        raise ValueError(f"distributed.address must be 'auto', 'host:port' or 'ray://host:port', got {address!r}")
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as error:
        raise ConnectionError(f"cannot reach the Ray cluster at {address!r}: {error}") from None


def init_ray(address: str | None, num_cpus: int | None = None, timeout: float = 10.0) -> bool:
    """Connect to Ray (or start a local one); returns True if this call started it (and should shut it down)."""
    import ray

    if ray.is_initialized():
        return False
    if address:
        _check_reachable(address, timeout)
    try:
        ray.init(
            address=address or None,
            num_cpus=None if address else num_cpus,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
            ignore_reinit_error=True,
        )
    except ConnectionError as error:
        raise ConnectionError(f"cannot connect to a Ray cluster at {address!r}: {error}") from None
    return True
