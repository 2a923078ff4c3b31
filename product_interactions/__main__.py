"""``python -m product_interactions`` and the ``product-interactions`` command: tour, derive, experiment."""
import sys

from .interactions.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
