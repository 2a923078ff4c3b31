"""The README's Python examples run as written."""
import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index):
    exec(compile(BLOCKS[index], f"README.md block {index}", "exec"), {})


def test_readme_has_the_two_commands():
    text = README.read_text()
    for marker in ("<!-- main-command -->", "<!-- test-command -->"):
        block = text.split(marker, 1)[1].split("```bash\n", 1)[1].split("```", 1)[0].strip()
        assert block.count("\n") == 0 and block.startswith("pip install")


def test_readme_examples_leave_the_committed_results_alone():
    """Only full runs write into results/; the README's quick runs write to a path of the user's."""
    commands = re.findall(r"product-interactions experiment [^\n`]*", README.read_text())
    assert commands and [command for command in commands if "--quick" in command and "results/" in command] == []
