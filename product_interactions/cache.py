"""Where the project caches files on disk: one folder per kind (``so3`` tables, compiled ``kernels``).

The root is ``$PRODUCT_INTERACTIONS_CACHE`` when that environment variable is set (the value ``off``, or an empty
value, switches the disk cache off), else ``$XDG_CACHE_HOME/product-interactions``, else
``~/.cache/product-interactions``.  Folders are not created here.

>>> import os
>>> os.environ["PRODUCT_INTERACTIONS_CACHE"] = "/somewhere"
>>> str(folder("so3"))
'/somewhere/so3'
>>> os.environ["PRODUCT_INTERACTIONS_CACHE"] = "off"
>>> folder("so3") is None
True
>>> del os.environ["PRODUCT_INTERACTIONS_CACHE"]
"""
from __future__ import annotations

import os
from pathlib import Path


def folder(kind: str) -> Path | None:
    """The cache folder for files of `kind`, or None when the disk cache is switched off."""
    configured = os.environ.get("PRODUCT_INTERACTIONS_CACHE")
    if configured is not None:
        return None if configured.strip().lower() in ("", "off") else Path(configured) / kind
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "product-interactions" / kind
