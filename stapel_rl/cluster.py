"""Ray set-up shared by distributed self-play (``train.distributed``) and tournaments (``eval.tournament``).

Ray is the optional extra ``ray``: it is imported only when a caller asks for it.
"""

from __future__ import annotations

import os
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
    # ray.exceptions.AuthenticationError: RAY_AUTH_MODE=token but no token on this machine.
    except (ConnectionError, ray.exceptions.RayError) as error:
        if not address:
            raise
        raise ConnectionError(f"cannot connect to a Ray cluster at {address!r}: {error}{_auth_hint(error)}") from None
    return True


def _auth_hint(error: BaseException) -> str:
    """What to do when the cluster turned down this process's token (Ray only says it could not connect).

    ``ray start --head`` turns on token authentication by itself when it finds a token
    (``~/.ray/auth_token``, which every local ``ray.init()`` writes). Ray sends the token to ``auto``
    but to an explicit address only under ``RAY_AUTH_MODE=token``, and when it is refused says no
    more than that it could not connect, after some 20 s of retries.
    """
    if "InvalidAuthToken" not in f"{error} {error.__cause__}":
        return ""
    where = "(on this machine in ~/.ray/auth_token, RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH); see docs/distributed.md"
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "token":
        return f"\nThe cluster rejected this machine's Ray token: use the head node's ~/.ray/auth_token {where}"
    return f"\nThe cluster uses token authentication: set RAY_AUTH_MODE=token, with the head node's token {where}"
