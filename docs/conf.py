"""Sphinx configuration of the documentation site: the guides, the notebooks (executed at every build, so the
site shows their figures; a cell error is a warning, which -W makes an error) and the API reference from the
docstrings.

Build: ``python -m sphinx -W -b html docs docs/_build/html`` (``pip install -e ".[docs]"`` first).
"""
import product_interactions

project = "Product Interactions"
author = "The Product Interactions contributors"
copyright = author
release = version = product_interactions.__version__

extensions = ["sphinx.ext.autodoc", "myst_nb"]
exclude_patterns = ["_build"]

# Mathematics in the pages and the notebooks' Markdown: $...$, $$...$$ and AMS environments, passed to MathJax as
# written (without them the Markdown pass reads backslashes as escapes and underscores as emphasis).
myst_enable_extensions = ["dollarmath", "amsmath"]

# Docstrings write `name` for an object of the library: a link where Sphinx finds it, code text otherwise.
default_role = "py:obj"
# Members in each package's __all__ order (classes first, then builders), not alphabetically.
autodoc_member_order = "bysource"

# notebooks/ is linked in as docs/notebooks; every build executes them in a fresh kernel, in their own directory.
nb_execution_mode = "force"
nb_execution_timeout = 600
nb_execution_show_tb = True
# Progress bars and import-time warnings on stderr stay out of the rendered pages.
nb_output_stderr = "remove"

html_theme = "furo"
html_title = f"Product Interactions {release}"
