"""Whether the Hugging Face hub can be reached from here, asked once per process. Before a
hub id is looked up: where it cannot, a model missing from the local cache is refused at
once, and one in the cache is read from it alone, rather than after half a minute of the
hub client's retries (five, 1 to 8 s apart)."""

from __future__ import annotations

import functools
import os
import socket
from urllib.parse import urlsplit

DEFAULT_ENDPOINT = "https://huggingface.co"
# Seconds to wait for the hub's TCP handshake: a reachable hub answers in well under one.
CONNECT_TIMEOUT = 3.0
_TRUE = {"1", "on", "yes", "true"}
_PROXIES = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")


def endpoint() -> str:
    """The hub's address: ``HF_ENDPOINT`` where set (a mirror), else huggingface.co."""
    return os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT


@functools.cache
def hub_unreachable() -> str | None:
    """Why the hub cannot be reached (``HF_HUB_OFFLINE`` set, its name not resolved, its
    port not answering), or None where it can, or where a proxy stands between, which only
    the hub client itself can try."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE:
        return "HF_HUB_OFFLINE is set"
    if any(os.environ.get(name) for name in _PROXIES):
        return None
    address = urlsplit(endpoint())
    port = address.port or (80 if address.scheme == "http" else 443)
    try:
        socket.create_connection((address.hostname, port), timeout=CONNECT_TIMEOUT).close()
    except OSError as error:
        return f"{address.hostname}:{port}: {error.strerror or error}"
    return None
