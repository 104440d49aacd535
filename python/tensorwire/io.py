"""Writing output files safely: never leave a half-written file behind, never replace
anything but a regular file, and say in one line (an :class:`InputError` naming the option)
why a path cannot be written.

The rules (docs/formats.md, "Output files"):

- the data goes to a temporary file beside the target, which is then renamed over it, so a
  reader sees the old file or the new one, never a part;
- a target that exists must be a regular file: a directory, device node (``/dev/null``),
  FIFO or socket is refused, never replaced;
- a symbolic link is followed: the file it points to is replaced and the link stays (a
  link to something that is not a regular file is refused, as above);
- missing parent directories are created;
- :func:`check_output` finds most unwritable paths (empty, a directory, a parent that is a
  file, a read-only file system, ``/proc``) before a long computation starts; a write that
  still fails (a full disk) is refused saying that nothing was written.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
import zlib
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from tensorwire._core import InputError

PathLike = Union[str, "os.PathLike[str]"]


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _reason(e: OSError) -> str:
    if e.errno == errno.ENOTDIR or isinstance(e, FileExistsError):
        return "a parent directory is a file"
    return e.strerror or str(e)


def _target(path: PathLike, field: str) -> Path:
    """Where the data goes: ``path`` with symbolic links resolved, after refusing an empty
    path and an existing target that is not a regular file."""
    text = os.fspath(path)
    if not text:
        raise InputError(field, "the file name is empty; give a path such as out.json")
    try:
        st: Optional[os.stat_result] = os.stat(text)  # follows symbolic links
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise InputError(field, f"cannot write {text}: {_reason(e)}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise InputError(
            field,
            f"cannot write {text}: it is {_kind(st.st_mode)}, not a regular file (only regular files are written)",
        )
    return Path(os.path.realpath(text))


def check_output(path: PathLike, field: str = "out", inputs: Optional[Mapping[str, Sequence[PathLike]]] = None) -> Path:
    """Refuses, before any work is done, an output path that :func:`write_atomic` could not
    write, or that is one of the command's ``inputs`` (what each is, e.g. ``"logs"``, to the
    paths given; written over, the input would be lost): :class:`InputError` naming
    ``field``. Returns ``path`` as a :class:`Path`.

    Creates nothing: a probe file is made and removed in the nearest existing directory."""
    text = os.fspath(path)
    for what, paths in (inputs or {}).items():
        for given in paths:
            if _same_file(text, os.fspath(given)):
                raise InputError(field, f"{text} is one of the {what}; write the output elsewhere")
    target = _target(text, field)
    parent = target.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(field, f"cannot write {text}: a parent directory is a file")
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent)
    except OSError as e:
        raise InputError(field, f"cannot write {text}: {_reason(e)}") from None
    os.close(fd)
    os.unlink(probe)
    return Path(text)


def _same_file(a: str, b: str) -> bool:
    """``a`` and ``b`` name the same existing file (through links and relative paths too)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def check_workload_output(
    path: PathLike, field: str = "out", inputs: Optional[Mapping[str, Sequence[PathLike]]] = None
) -> Path:
    """:func:`check_output` for a workload file, which is JSON: a path not ending in
    ``.json`` (any case) is refused too, so that no ``.csv`` holds JSON."""
    p = check_output(path, field, inputs)
    if p.suffix.lower() != ".json":
        raise InputError(field, f"{os.fspath(path)!r}: choose a file ending in .json (a tensorwire-workload/1 file)")
    return p


def write_atomic(path: PathLike, data: Union[str, bytes], field: str = "out") -> None:
    """Writes ``data`` to a temporary file beside ``path``, then renames it over ``path``
    (over the file a symbolic link points to, keeping the link); :class:`InputError` naming
    ``field`` when that cannot be done, in which case nothing was written."""
    write_atomic_all({path: data}, field)


def write_atomic_all(files: Mapping[PathLike, Union[str, bytes]], field: str = "out") -> None:
    """Writes every file of ``files`` (path: data) or none (``validate --out``'s three
    results): each to a temporary file beside its path, then, once all are written, renames
    them over their paths (over the file a symbolic link points to, keeping the link).
    :class:`InputError` naming ``field`` when that cannot be done: nothing was written, or,
    where a rename failed after others (rare: the temporaries are beside their targets), the
    message says which were."""
    temporaries: list[tuple[str, Path, str]] = []
    done: list[str] = []
    text = ""
    try:
        # mkstemp makes the file private (0600); give it the usual mode for new files.
        umask = os.umask(0)
        os.umask(umask)
        for path, data in files.items():
            text = os.fspath(path)
            target = _target(text, field)
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            temporaries.append((tmp, target, text))
            os.fchmod(fd, 0o666 & ~umask)
            with os.fdopen(fd, "wb") as f:
                f.write(data.encode() if isinstance(data, str) else data)
        for tmp, target, text in temporaries:
            _target(text, field)  # still a regular file (or nothing) just before the rename
            os.replace(tmp, target)
            done.append(text)
    except BaseException as e:
        for tmp, _, _ in temporaries:
            Path(tmp).unlink(missing_ok=True)  # gone already where renamed
        if not isinstance(e, OSError):
            raise
        written = f"only {', '.join(done)} written" if done else "nothing was written"
        raise InputError(field, f"cannot write {text}: {_reason(e)}; {written}") from None


# -- reading input files ------------------------------------------------------------------


class InputWarning(UserWarning):
    """An input file does not say something, and a default was assumed (the message names
    the default and how to give the value). The CLI shows it as one line,
    ``tensorwire: warning: ...``."""


#: Largest workload file (tensorwire JSON or five-attribute trace) read, bytes.
WORKLOAD_FILE_LIMIT = 64 * 2**20
#: Largest trace read (a Kineto trace after decompression, a Chakra file), bytes.
TRACE_FILE_LIMIT = 1024 * 2**20


def _size(n: int) -> str:
    return f"{n // 2**20} MiB"


def read_start(path: PathLike, field: str, size: int, pipe_error: Optional[InputError] = None) -> bytes:
    """At most the first ``size`` bytes of an input file (devices refused).

    The file is opened without blocking: a named pipe (FIFO) that no process writes to
    would otherwise wait for ever in ``open``; once open, a pipe is read as a file is
    (``<(command)`` works), and one without a writer reads as empty. ``pipe_error``: raised
    instead where the file is a pipe (a reader that must look at the start first, and
    would leave the pipe empty for the real read)."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(fd, "rb") as f:
            mode = os.fstat(fd).st_mode
            if pipe_error is not None and stat.S_ISFIFO(mode):
                raise pipe_error
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
                raise InputError(field, f"{str(p)!r} is a device, not a file")
            os.set_blocking(fd, True)
            return f.read(size)
    except OSError as e:
        raise InputError(field, f"cannot read {str(p)!r}: {e.strerror or e}") from None


def read_input(path: PathLike, field: str, limit: int) -> bytes:
    """The bytes of an input file, read no further than ``limit`` (so ``/dev/zero`` or a
    huge file is refused after reading ``limit`` bytes, not after filling memory), opened
    as :func:`read_start` opens it."""
    p = Path(path)
    data = read_start(p, field, limit + 1)
    if len(data) > limit:
        raise InputError(field, f"{p.name}: larger than the {_size(limit)} this reader takes (docs/formats.md)")
    return data


def gunzip(data: bytes, name: str, field: str, limit: int) -> bytes:
    """Decompresses gzip data (every member) to at most ``limit`` bytes; a file that would
    decompress to more (a "gzip bomb") is refused without decompressing the rest."""
    out: list[bytes] = []
    total = 0
    rest = data
    while rest:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            chunk = d.decompress(rest, limit + 1 - total)
        except zlib.error as e:
            raise InputError(field, f"{name}: not a complete gzip file ({e})") from None
        total += len(chunk)
        out.append(chunk)
        if total > limit or d.unconsumed_tail:
            raise InputError(
                field, f"{name}: decompresses to more than the {_size(limit)} this reader takes (docs/formats.md)"
            )
        if not d.eof:
            raise InputError(field, f"{name}: not a complete gzip file (it ends early)")
        rest = d.unused_data
        if rest and rest[:2] != b"\x1f\x8b":
            break  # trailing bytes after the last member are ignored, as gzip does
    return b"".join(out)


#: Encodings a text file is read in besides UTF-8: those a byte-order mark announces.
_MARKED = ("utf-8-sig", "utf-16", "utf-32")


def text_encoding(data: bytes) -> str:
    """The encoding of text ``data``: UTF-16 or UTF-32 where it starts with their byte-order
    mark (Windows PowerShell's ``>`` writes UTF-16 with one), else UTF-8 (its mark, if any,
    dropped). The marks are told as JSON's reader tells them (:func:`json.detect_encoding`,
    which ``json.loads`` applies to the cluster file's bytes); its guess for text without a
    mark (from zero bytes) is not taken, as it would read a binary file as UTF-16.

    >>> text_encoding("x".encode("utf-16")), text_encoding(b"0.5 1.5"), text_encoding(bytes([0, 255, 254]))
    ('utf-16', 'utf-8', 'utf-8')
    """
    encoding = json.detect_encoding(data)
    return encoding if encoding in _MARKED else "utf-8"


def decode_text(data: bytes, path: PathLike, field: str) -> str:
    """``data`` as text in its encoding (:func:`text_encoding`; a leading byte-order mark,
    which some Windows editors and PowerShell write, dropped); a file that is not text in it
    is refused naming the byte offset (a Latin-1 file is not UTF-8)."""
    encoding = text_encoding(data)
    try:
        return data.decode(encoding).removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        shown = encoding.upper().removesuffix("-SIG").replace("-BE", "").replace("-LE", "")
        raise InputError(
            field, f"{Path(path).name}: not {shown} text (byte {e.start}); expected a text file in UTF-8"
        ) from None


def clip(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters (with ``...``) for quoting in an error message:
    a log or file can carry a line of megabytes, and the message stays one short line."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def loads_json(
    text: Union[str, bytes],
    path: PathLike,
    field: str,
    expected: str = "a JSON file",
    invalid: str = "",
    *,
    unique_keys: bool = False,
) -> Any:
    """Parsed JSON; invalid or too deeply nested JSON, and integers longer than Python
    converts (4,300 digits), are refused in one line naming the file and ``expected``
    (``invalid`` is added to the message for JSON that does not parse). ``unique_keys``:
    a key given twice in one object is refused too (:func:`key_given_twice`)."""
    name = Path(path).name
    try:
        return json.loads(text, object_pairs_hook=_pairs_of(name, field) if unique_keys else None)
    except UnicodeDecodeError as e:
        raise InputError(field, f"{name}: not UTF-8 text (byte {e.start}); expected {expected}") from None
    except json.JSONDecodeError as e:
        raise InputError(field, f"{name}: not valid JSON (line {e.lineno}: {e.msg}){invalid}") from None
    except RecursionError:
        raise InputError(field, f"{name}: JSON nested too deeply; expected {expected}") from None
    except InputError:  # (a ValueError: a key given twice)
        raise
    except ValueError:
        # Python's limit on integer string conversion (sys.get_int_max_str_digits()).
        raise InputError(field, f"{name}: an integer of more than 4,300 digits; expected {expected}") from None


def key_given_twice(items: Sequence[tuple[str, Any]]) -> Optional[str]:
    """The first key of a JSON object's ``items`` (``json.loads``'s ``object_pairs_hook``
    gets them) that is given twice, if any: a parser keeps one (Python's the last), so the
    other, edited in, would be read as if it were not there.

    >>> key_given_twice([("a", 1), ("b", 2), ("a", 3)]), key_given_twice([("a", 1)])
    ('a', None)
    """
    seen: set[str] = set()
    for key, _ in items:
        if key in seen:
            return key
        seen.add(key)
    return None


def _pairs_of(name: str, field: str) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    """An ``object_pairs_hook`` refusing a key given twice in file ``name``."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        key = key_given_twice(items)
        if key is not None:
            raise InputError(
                field, f"{name}: the key {clip(json.dumps(key))} is given twice in one object; give it once"
            )
        return dict(items)

    return pairs
