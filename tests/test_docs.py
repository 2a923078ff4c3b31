"""The documentation site builds with warnings as errors, and this build is where the notebooks run.

The build is the README's command, quiet and going on past the first warning to report them all
(``python -m sphinx -W --keep-going -q -b html docs OUT``), into a temporary directory.  A docstring that is not
valid reST, a page or notebook left out of the toctree, or any notebook cell that raises fails it (myst-nb
executes every notebook in notebooks/ and every code cell of the guides, in a fresh kernel of this interpreter),
and the failure shows the warnings with the cell's traceback.  The built HTML is read back: every formula of a
guide's or a notebook's Markdown must reach MathJax as written (no raw dollars, no emphasis tags inside a formula,
no backslash escape such as ``\\,`` read as a comma), and the engines page's strategy table must list the registry.
Skipped only when Sphinx is not installed:
``pip install -e ".[docs]"`` (or ``".[test]"``) brings everything the build needs.
"""
from __future__ import annotations

import html.parser
import json
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(path.stem for path in (ROOT / "notebooks").glob("*.ipynb"))
GUIDES = sorted(path.stem for path in (ROOT / "docs").glob("*.md"))

pytest.importorskip("sphinx", reason="building the docs needs sphinx: pip install -e '.[docs]'")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> pathlib.Path:
    """The built site (its HTML in ``html``; myst-nb keeps the executed notebooks beside it)."""
    html = tmp_path_factory.mktemp("docs") / "html"
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(ROOT / "docs"),
               str(html)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        log = re.sub(r"\x1b\[[0-9;]*m", "", result.stderr + result.stdout)        # without IPython's colours
        pytest.fail(f"the docs build failed (exit {result.returncode}):\n{log}", pytrace=False)
    return html


def test_the_notebook_kernel_is_this_python():
    """myst-nb starts the kernel spec ``python3``; a stale spec elsewhere would run the notebooks in another Python."""
    from jupyter_client.manager import KernelManager
    manager = KernelManager(kernel_name="python3")
    command = manager.format_kernel_cmd()
    assert command[0] == sys.executable, (f"the python3 kernel ({manager.kernel_spec.resource_dir}) would run "
                                          f"{command[0]}, not {sys.executable}")


def test_the_site_builds_without_a_warning(site):
    assert (site / "index.html").is_file()
    assert "MEMORY_LIMIT" in (site / "api" / "kernels.html").read_text()          # autodoc found the members


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_notebook_is_rendered_with_its_figures(site, name):
    page = (site / "notebooks" / f"{name}.html").read_text()
    assert re.search(r'<img [^>]*src="[^"]*\.png"', page), f"{name}: no figure on the rendered page"


class Rendered(html.parser.HTMLParser):
    """A built page: its prose (text outside code, scripts and formulas), its formulas (the text of elements of
    class ``math``, as MathJax reads it) and the tags found inside formulas."""

    VERBATIM = {"pre", "code", "script", "style", "textarea"}
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[tuple[str, str | None]] = []          # (tag, "math" / "verbatim" / None), outermost first
        self.prose: list[str] = []
        self.formulas: list[str] = []
        self.tags_in_formulas: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag, attrs):
        if any(kind == "math" for _, kind in self.open):
            self.tags_in_formulas.append(tag)
        if tag in self.VOID:
            return
        if "math" in (dict(attrs).get("class") or "").split():
            self.formulas.append("")
            self.open.append((tag, "math"))
        else:
            self.open.append((tag, "verbatim" if tag in self.VERBATIM else None))

    def handle_endtag(self, tag):
        while self.open and self.open.pop()[0] != tag:
            pass

    def handle_data(self, data):
        kinds = {kind for _, kind in self.open}
        if "math" in kinds:
            self.formulas[-1] += data
        elif "verbatim" not in kinds:
            self.prose.append(data)


def formula(text: str) -> str:
    """A formula without MathJax's delimiters, its white space collapsed."""
    text = " ".join(text.split())
    for left, right in (("\\(", "\\)"), ("\\[", "\\]")):
        if text.startswith(left) and text.endswith(right):
            text = text[len(left):-len(right)].strip()
    return text


def source_formulas(markdown: str) -> list[str]:
    """The $...$ and $$...$$ formulas of Markdown text, code left out."""
    markdown = re.sub(r"```.*?```|`[^`]*`", "", markdown, flags=re.S)
    display = re.findall(r"\$\$(.+?)\$\$", markdown, flags=re.S)
    inline = re.findall(r"\$((?:[^$\n]|\n(?!\n))+?)\$", re.sub(r"\$\$.+?\$\$", "", markdown, flags=re.S))
    return [formula(text) for text in display + inline]


def markdown_of(name: str) -> str:
    """The Markdown a page is built from: a guide's text, or a notebook's Markdown cells."""
    if name.startswith("notebooks/"):
        cells = json.loads((ROOT / f"{name}.ipynb").read_text())["cells"]
        return "\n\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")
    return (ROOT / "docs" / f"{name}.md").read_text()


def math_problems(page: str, markdown: str) -> list[str]:
    """What keeps a page's mathematics from rendering as written in `markdown`: raw dollars in its prose, tags
    inside formulas (Markdown's emphasis), and formulas of the source missing from the page or changed (a
    backslash escape such as \\, read as a comma, a quote made typographic)."""
    rendered = Rendered(page)
    prose = "".join(rendered.prose)
    problems = [f"raw dollar: ...{prose[max(0, i - 40):i + 40]!r}..." for i in
                [match.start() for match in re.finditer(r"\$", prose)]]
    problems += [f"<{tag}> inside a formula" for tag in rendered.tags_in_formulas]
    built = {formula(text) for text in rendered.formulas}
    problems += [f"not rendered as written: {text!r}" for text in source_formulas(markdown) if text not in built]
    return problems


@pytest.mark.parametrize("name", GUIDES + [f"notebooks/{name}" for name in NOTEBOOKS])
def test_the_mathematics_renders_as_written(site, name):
    assert math_problems((site / f"{name}.html").read_text(), markdown_of(name)) == []


def test_the_math_check_sees_what_the_markdown_pass_did_without_dollarmath():
    markdown = "Chen: $S(x|_{[0, L]}) = S(x|_{[0, t]})$ and $$e_i\\, e_j = \\sum_k e_k$$ with $p'(a)$."
    broken = ('<p>Chen: $S(x|<em>{[0, L]}) = S(x|</em>{[0, t]})$ and $$e_i, e_j = \\sum_k e_k$$ with '
              '$p’(a)$.</p>')
    rendered = ('<p>Chen: <span class="math notranslate">\\(S(x|_{[0, L]}) = S(x|_{[0, t]})\\)</span> and</p>'
                '<div class="math notranslate">\\[e_i\\, e_j = \\sum_k e_k\\]</div><p>with '
                '<span class="math">\\(p&#39;(a)\\)</span>.</p><pre>echo $HOME</pre>')
    assert math_problems(rendered, markdown) == []
    problems = math_problems(broken, markdown)
    assert sum(problem.startswith("raw dollar") for problem in problems) == 8                  # 2 + 4 + 2
    assert [problem for problem in problems if not problem.startswith("raw dollar")] == [
        f"not rendered as written: {text!r}" for text in source_formulas(markdown)]           # all three
    with_tags = rendered.replace("|_{[0, L]}) = S(x|_", "|<em>{[0, L]}) = S(x|</em>")
    assert math_problems(with_tags, markdown) == ["<em> inside a formula", f"not rendered as written: "
                                                  f"{source_formulas(markdown)[1]!r}"]


def test_the_strategy_table_lists_the_registry(site):
    from product_interactions.kernels import STRATEGIES
    page = (site / "engines.html").read_text()
    table = page[page.index("<table"):page.index("</table>")]
    first_cells = re.findall(r'<tr class="row-\w+"><td><p><code[^>]*><span class="pre">(\w+)</span>', table)
    assert first_cells == list(STRATEGIES)
