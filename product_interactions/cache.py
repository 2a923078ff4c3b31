"""Where the project caches files on disk: one folder per kind (``so3`` tables, compiled ``kernels``).

The root is ``$PRODUCT_INTERACTIONS_CACHE`` when that environment variable is set (the value ``off``, or an empty
value, switches the disk cache off), else ``$XDG_CACHE_HOME/product-interactions``, else
``~/.cache/product-interactions`` (None, no disk cache, where the home folder is unknown).  Folders are not created
here.

>>> import os
>>> before = os.environ.get("PRODUCT_INTERACTIONS_CACHE")
>>> os.environ["PRODUCT_INTERACTIONS_CACHE"] = "/somewhere"
>>> str(folder("so3"))
'/somewhere/so3'
>>> os.environ["PRODUCT_INTERACTIONS_CACHE"] = "off"
>>> folder("so3") is None
True
>>> _ = os.environ.pop("PRODUCT_INTERACTIONS_CACHE") if before is None else os.environ.update(
...     PRODUCT_INTERACTIONS_CACHE=before)
"""
from __future__ import annotations

import os
from pathlib import Path


def folder(kind: str) -> Path | None:
    """The cache folder for files of `kind`, or None when the disk cache is switched off."""
    configured = os.environ.get("PRODUCT_INTERACTIONS_CACHE")
    if configured is not None:
        return None if configured.strip().lower() in ("", "off") else Path(configured) / kind
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:                      # no HOME and no password entry (some containers)
            return None
    return Path(base) / "product-interactions" / kind
