"""Output files: only regular files are replaced; every path that cannot be written is one
line naming the option, exit 2, no traceback, no temporary file left, old content kept."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
from tensorwire._core import InputError
from tensorwire.cli import main
from tensorwire.io import check_output, write_atomic

SIM = ["simulate", "-m", "resnet50", "-n", "4", "-b", "25Gbps", "-s", "ring"]
TRACE = str(Path(__file__).resolve().parents[1] / "workloads" / "data" / "ddp_tiny_rank0.json.gz")


def _one_line(err: str, start: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(start), err
    assert "Traceback" not in err


def _no_temp(directory: Path) -> None:
    assert not [p for p in directory.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("kind", ["fifo", "directory", "socket"])
def test_non_regular_targets_are_refused_and_kept(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "t.json"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "directory":
        target.mkdir()
    else:
        import socket

        s = socket.socket(socket.AF_UNIX)
        s.bind(str(target))
    # (click answers for a directory: "Invalid value for '--trace': ... is a directory")
    assert main([*SIM, "--trace", str(target)]) == 2
    _one_line(
        capsys.readouterr().err,
        "tensorwire: error: " + ("Invalid value for '--trace'" if kind == "directory" else "trace: cannot write"),
    )
    assert main(["import-trace", TRACE, "-o", str(target)]) == 2
    _one_line(
        capsys.readouterr().err,
        "tensorwire: error: " + ("Invalid value for '--out'" if kind == "directory" else "out: cannot write"),
    )
    assert not target.is_file()  # still the FIFO, directory or socket
    _no_temp(tmp_path)


def test_a_device_is_never_replaced(capsys: pytest.CaptureFixture[str]) -> None:
    before = os.stat("/dev/null")
    assert main([*SIM, "--trace", "/dev/null"]) == 2
    _one_line(capsys.readouterr().err, "tensorwire: error: trace: cannot write /dev/null: it is a device")
    with pytest.raises(InputError):
        write_atomic("/dev/null", "x", field="out")
    after = os.stat("/dev/null")
    assert (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_a_symlink_is_written_through_and_kept(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "sub" / "created.json")
    write_atomic(dangling, "x")
    assert dangling.is_symlink() and (tmp_path / "sub" / "created.json").read_text() == "x"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    to_fifo = tmp_path / "to_fifo.json"
    to_fifo.symlink_to(fifo)
    with pytest.raises(InputError, match="FIFO"):
        write_atomic(to_fifo, "x")


@pytest.mark.parametrize(
    "path, reason",
    [
        ("", "the file name is empty"),
        ("/proc/tw_out.json", "cannot write /proc/tw_out.json"),
        ("{file}/x.json", "a parent directory is a file"),
        ("{dir}", "it is a directory"),
    ],
)
def test_unwritable_paths_are_one_line_before_the_run(
    tmp_path: Path, path: str, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("")
    (tmp_path / "d.json").mkdir()
    p = path.format(file=tmp_path / "file", dir=tmp_path / "d.json")
    for args, field in (
        ([*SIM, "--trace", p], "trace"),
        (["import-trace", TRACE, "-o", p], "out"),
        (["sweep", "-m", "resnet50", "-n", "4", "-s", "ring", "-j", "1", "-o", p or ".csv"], "out"),
    ):
        if (args[0] == "sweep") != p.endswith(".json") and path != "{file}/x.json":
            continue  # sweep's suffix check answers first; click answers for a directory
        assert main(args) == 2
        err = capsys.readouterr().err
        _one_line(err, f"tensorwire: error: {field}: ")
        assert reason in err
    _no_temp(tmp_path)


def test_missing_parent_directories_are_created(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "t.json"
    assert check_output(target) == target and not (tmp_path / "a").exists()  # the check creates nothing
    write_atomic(target, "{}")
    assert target.read_text() == "{}"


def test_a_full_disk_prints_the_result_then_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "t.json"
    target.write_text("old")
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, f: Any) -> None:
            self.f = f

        def __enter__(self) -> "Full":
            return self

        def __exit__(self, *exc: object) -> None:
            self.f.close()

        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fdopen", lambda fd, mode="r", *a, **k: Full(real_fdopen(fd, mode, *a, **k)))
    assert main([*SIM, "--trace", str(target), "--json"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["iteration_time_s"] > 0  # the result is not lost
    _one_line(err, f"tensorwire: error: trace: cannot write {target}: No space left on device; nothing was written")
    assert target.read_text() == "old"
    _no_temp(tmp_path)
