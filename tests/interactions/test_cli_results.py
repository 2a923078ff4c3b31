"""The command line keeps its results: `--out` and `--seed` are checked before any work, the table is printed before
the file is written, and the file is replaced atomically."""
import json
import os
import stat

import pytest

from product_interactions.interactions import __main__ as cli
from product_interactions.interactions.experiments import run
from product_interactions.interactions.experiments.report import check_setting, report, row, write


@pytest.fixture
def fake_run(monkeypatch):
    """Replace the experiment by an instant one; returns the list of its calls."""
    calls = []

    def instant(name, quick, seed, engine, threads, device=None):
        calls.append(name)
        return report(name, quick=quick, seed=seed, config={}, rows=[row("R = 1", 0.5, paper=0.36)])
    monkeypatch.setattr(cli, "run", instant)
    return calls


def test_out_an_existing_directory_is_refused_before_the_run(tmp_path, capsys, fake_run):
    with pytest.raises(SystemExit):
        cli.main(["experiment", "symmetry", "--out", str(tmp_path)])
    assert "--out: expected a file path, got the existing directory" in capsys.readouterr().err and not fake_run


def test_out_under_a_file_is_refused_before_the_run(tmp_path, capsys, fake_run):
    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit):
        cli.main(["experiment", "symmetry", "--out", str(tmp_path / "file" / "result.json")])
    assert "is not a directory" in capsys.readouterr().err and not fake_run


def test_out_under_a_missing_directory_is_refused_and_nothing_is_created(tmp_path, capsys, fake_run):
    with pytest.raises(SystemExit):
        cli.main(["experiment", "symmetry", "--out", str(tmp_path / "missing" / "result.json")])
    assert "does not exist (create it first)" in capsys.readouterr().err and not fake_run
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("argv", [["experiment", "symmetry", "--seed", "-1"], ["tour", "--seed", "-1"],
                                  ["tour", "--seed", "1.5"]])
def test_a_negative_or_fractional_seed_is_refused_by_name(argv, capsys, fake_run):
    with pytest.raises(SystemExit):
        cli.main(argv)
    assert "argument --seed: expected a non-negative int, got" in capsys.readouterr().err and not fake_run


def test_the_table_is_printed_even_when_writing_fails(tmp_path, capsys, monkeypatch, fake_run):
    def failing(result, path):
        raise OSError("disk full")
    monkeypatch.setattr(cli, "write", failing)
    assert cli.main(["experiment", "symmetry", "--out", str(tmp_path / "result.json")]) == 1
    captured = capsys.readouterr()
    assert "symmetry (full, seed 0)" in captured.out and "R = 1" in captured.out
    assert "could not write" in captured.err and "disk full" in captured.err


def test_the_command_writes_the_result_after_printing_it(tmp_path, capsys, fake_run):
    out = tmp_path / "result.json"
    assert cli.main(["experiment", "copy", "--quick", "--seed", "2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.index("copy (quick, seed 2)") < printed.index(f"written to {out}")
    assert json.loads(out.read_text())["seed"] == 2


def test_write_is_atomic_a_failure_leaves_the_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "result.json"
    write({"figure": 1}, path)
    with pytest.raises(TypeError):
        write({"figure": object()}, path)                    # not JSON: fails before anything is written
    def interrupted(source, target):
        raise OSError("interrupted")
    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(OSError, match="interrupted"):
        write({"figure": 2}, path)
    assert json.loads(path.read_text()) == {"figure": 1} and os.listdir(tmp_path) == ["result.json"]


def test_write_gives_an_ordinary_file_mode(tmp_path):
    mask = os.umask(0o022)
    try:
        assert os.stat(write({}, tmp_path / "result.json")).st_mode & 0o777 == 0o644
    finally:
        os.umask(mask)


def test_write_and_run_refuse_a_bad_out_by_name(tmp_path):
    with pytest.raises(ValueError, match="out: expected a file path, got the existing directory"):
        write({}, tmp_path)
    with pytest.raises(ValueError, match="out: the parent .* does not exist"):
        run("symmetry", quick=True, out=tmp_path / "missing" / "result.json")


def test_check_setting_refuses_a_negative_seed():
    with pytest.raises(ValueError, match="seed: expected a non-negative int, got -1"):
        check_setting(True, -1)
    with pytest.raises(ValueError, match="seed: expected a non-negative int"):
        run("symmetry", quick=True, seed=-3)


@pytest.mark.parametrize("argv, message", [
    (["experiment", "copy", "--steps", "0"], "argument --steps: expected a positive int, got '0'"),
    (["experiment", "copy", "--steps", "1e3"], "argument --steps: expected a positive int, got '1e3'"),
    (["experiment", "symmetry", "--steps", "10"], "--steps: only copy, dynamical takes it, not symmetry"),
    (["experiment", "seq2tens", "--checkpoint", "."], "--checkpoint: only copy, dynamical takes it, not seq2tens"),
    (["experiment", "copy", "--setting", "patches"], "--setting: only dynamical, symmetry takes it, not copy"),
    (["experiment", "dynamical", "--setting", "rows"],
     "--setting: expected one of ['pixels', 'patches'] for dynamical, got 'rows'"),
    (["experiment", "symmetry", "--setting", "patches"],
     "--setting: expected one of ['paper', 'ablations'] for symmetry, got 'patches'"),
    (["experiment", "copy", "--checkpoint", "/nonexistent/directory"],
     "--checkpoint: expected an existing directory, got '/nonexistent/directory'")])
def test_steps_and_checkpoint_are_checked_before_the_run(argv, message, capsys, fake_run):
    with pytest.raises(SystemExit):
        cli.main(argv)
    assert message in capsys.readouterr().err and not fake_run


def test_a_checkpoint_of_another_run_is_refused_without_a_traceback(tmp_path, capsys):
    assert cli.main(["experiment", "copy", "--quick", "--engine", "numpy", "--steps", "1",
                     "--checkpoint", str(tmp_path)]) == 0
    with pytest.raises(SystemExit):
        cli.main(["experiment", "copy", "--quick", "--engine", "numpy", "--steps", "2", "--checkpoint", str(tmp_path)])
    err = capsys.readouterr().err
    assert "--checkpoint: " in err and "was saved with another configuration" in err


def test_a_quick_run_does_not_replace_a_full_result(tmp_path, capsys, fake_run):
    full = tmp_path / "copy.json"
    write(report("copy", quick=False, seed=0, config={}, rows=[]), full)
    kept = full.read_text()
    with pytest.raises(SystemExit) as exit_code:
        cli.main(["experiment", "copy", "--quick", "--out", str(full)])
    assert exit_code.value.code == 2 and not fake_run and full.read_text() == kept
    assert f"--out: {str(full)!r} holds a full run's result" in capsys.readouterr().err
    with pytest.raises(ValueError, match="holds a full run's result, which a quick run does not replace"):
        run("copy", quick=True, out=full)
    assert cli.main(["experiment", "copy", "--out", str(full)]) == 0 and fake_run == ["copy"]   # a full run may
    quick = tmp_path / "quick.json"
    for _ in range(2):                                                    # a quick result may be replaced
        assert cli.main(["experiment", "copy", "--quick", "--out", str(quick)]) == 0


def _special(kind, tmp_path):
    """An existing path that is not a regular file, of `kind`; None where it cannot be made here."""
    if kind == "character device":                          # a /dev/full of the test's own, never the real one
        try:
            os.mknod(tmp_path / "full", 0o666 | stat.S_IFCHR, os.makedev(1, 7))
        except OSError:
            return None
        return str(tmp_path / "full")
    if kind == "FIFO":
        os.mkfifo(tmp_path / "fifo")
        return str(tmp_path / "fifo")
    if kind == "socket":
        import socket
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(tmp_path / "socket"))
        return str(tmp_path / "socket")
    if kind == "symbolic link":
        (tmp_path / "target.json").write_text("{}")
        (tmp_path / "link.json").symlink_to(tmp_path / "target.json")
        return str(tmp_path / "link.json")
    (tmp_path / "dangling.json").symlink_to(tmp_path / "nowhere.json")
    return str(tmp_path / "dangling.json")


@pytest.mark.parametrize("kind", ["character device", "FIFO", "socket", "symbolic link", "dangling link"])
@pytest.mark.parametrize("quick", [False, True])
def test_out_onto_a_device_fifo_socket_or_link_is_a_usage_error_and_nothing_is_written(tmp_path, capsys, fake_run,
                                                                                        kind, quick):
    """Issue 36, item 4: run as root, `--out /dev/full` had replaced the device with a JSON file and exited 0 (and a
    FIFO or /dev/zero with --quick would block or read forever while looking for a full run's result)."""
    out = _special(kind, tmp_path)
    if out is None:
        pytest.skip("making a device node needs root")
    before = os.lstat(out)
    with pytest.raises(SystemExit) as exit:
        cli.main(["experiment", "symmetry", "--out", out] + (["--quick"] if quick else []))
    expected = "symbolic link" if "link" in kind else kind
    assert exit.value.code == 2 and not fake_run
    assert f"--out: expected a file path, got the {expected} {out!r}" in capsys.readouterr().err
    after = os.lstat(out)
    assert (after.st_mode, after.st_ino, after.st_rdev) == (before.st_mode, before.st_ino, before.st_rdev)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []      # no temporary file either
    with pytest.raises(ValueError, match=f"out: expected a file path, got the {expected}"):
        write({"a": 1}, out)


def test_out_that_becomes_a_device_during_the_run_is_not_written_and_exits_1(tmp_path, capsys, monkeypatch):
    out = tmp_path / "result.json"

    def instant(name, quick, seed, engine, threads, device=None):
        os.mkfifo(out)                                        # the path changes while the experiment runs
        return report(name, quick=quick, seed=seed, config={}, rows=[row("R = 1", 0.5, paper=0.36)])
    monkeypatch.setattr(cli, "run", instant)
    assert cli.main(["experiment", "symmetry", "--out", str(out)]) == 1
    captured = capsys.readouterr()
    assert "R = 1" in captured.out and "could not write" in captured.err and "FIFO" in captured.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]


@pytest.mark.parametrize("when", ["during the run", "while writing"])
def test_ctrl_c_exits_130_with_one_line_and_no_file(tmp_path, capsys, monkeypatch, when):
    """Issue 36: Ctrl-C during `experiment` printed a traceback and died by signal in half the runs."""
    out = tmp_path / "result.json"

    def interrupted(name, quick, seed, engine, threads, device=None):
        if when == "during the run":
            raise KeyboardInterrupt
        return report(name, quick=quick, seed=seed, config={}, rows=[row("R = 1", 0.5, paper=0.36)])
    monkeypatch.setattr(cli, "run", interrupted)
    if when == "while writing":
        from product_interactions.interactions.experiments import report as reporting

        def fill_then_stop(file):
            file.write(b'{"partial": ')
            raise KeyboardInterrupt
        monkeypatch.setattr(cli, "write", lambda result, path: reporting.replace_atomically(path, fill_then_stop))
    assert cli.main(["experiment", "symmetry", "--out", str(out)]) == 130
    assert capsys.readouterr().err == "product-interactions: interrupted (Ctrl-C): stopped, no file half-written\n"
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_in_a_real_run_exits_130_without_a_traceback(tmp_path):
    import signal
    import subprocess
    import sys
    import time
    out = tmp_path / "copy.json"
    process = subprocess.Popen([sys.executable, "-m", "product_interactions", "experiment", "copy", "--quick",
                                "--engine", "numpy", "--out", str(out)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    seen, deadline = "", time.monotonic() + 60
    while "it/s" not in seen and time.monotonic() < deadline and process.poll() is None:
        seen += process.stderr.read(1)                 # up to the first progress figures: the run is under way
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    if process.returncode == 0:
        pytest.skip("the run finished before the interrupt")
    assert process.returncode == 130, (process.returncode, stderr[-2000:])
    assert "Traceback" not in stderr and stderr.strip().endswith("no file half-written")
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == []
