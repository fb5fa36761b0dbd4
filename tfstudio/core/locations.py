"""Where run folders live: local paths, or URLs (``gs://``, ``s3://``, ...) on other file systems.

A local path stays a :class:`pathlib.Path` and is handled by ``os`` exactly as
before. A location with a scheme (``scheme://...``) is a :class:`UrlPath` and goes
through a *gfile* module: TensorBoard's TensorFlow-free one in the window
(``tensorboard.compat.tensorflow_stub.io.gfile``: local, ``s3://`` with boto3, and
any fsspec protocol when fsspec and its plugin are installed, e.g. gcsfs for
``gs://``), or ``tf.io.gfile`` in the worker, passed in by the engine (TensorFlow's
own file systems). Nothing here imports TensorFlow.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")


def scheme_of(location: object) -> str:
    """The ``scheme`` of ``scheme://...`` (empty for a local path)."""
    m = _SCHEME.match(str(location)) if isinstance(location, str | UrlPath) else None
    return m.group(1).lower() if m else ""


class UrlPath:
    """A file or folder named by a URL, with the bits of :class:`~pathlib.Path` runs need.

    ``UrlPath("gs://bucket/runs") / "mlp-20260101-000000"`` joins with ``/``;
    ``name``, ``parent`` and ``with_name`` work on the part after the scheme.
    """

    __slots__ = ("url",)

    def __init__(self, url: str | UrlPath) -> None:
        url = str(url)
        if not scheme_of(url):
            raise ValueError(f"not a URL (scheme://...): {url!r}")
        head, _, rest = url.partition("://")
        self.url = f"{head}://{rest.rstrip('/')}"

    def __truediv__(self, name: str) -> UrlPath:
        return UrlPath(f"{self.url}/{name}")

    def __str__(self) -> str:
        return self.url

    def __repr__(self) -> str:
        return f"UrlPath({self.url!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UrlPath) and other.url == self.url

    def __hash__(self) -> int:
        return hash(self.url)

    def __lt__(self, other: UrlPath) -> bool:
        return self.url < other.url

    @property
    def scheme(self) -> str:
        """``gs``, ``s3``, ``file``, ..."""
        return scheme_of(self.url)

    @property
    def name(self) -> str:
        """The last part of the path (empty for a bare ``scheme://bucket``)."""
        rest = self.url.partition("://")[2]
        return rest.rsplit("/", 1)[1] if "/" in rest else ""

    @property
    def parent(self) -> UrlPath:
        """The folder holding this one."""
        head, _, rest = self.url.partition("://")
        return UrlPath(f"{head}://{rest.rsplit('/', 1)[0]}") if "/" in rest else self

    def with_name(self, name: str) -> UrlPath:
        """The same folder's sibling called ``name``."""
        return self.parent / name


Location = Path | UrlPath


def location(where: str | os.PathLike[str] | UrlPath, resolve: bool = False) -> Location:
    """``where`` as a :class:`UrlPath` when it has a scheme, else a :class:`Path`.

    ``resolve`` makes a local path absolute (``~`` expanded).
    """
    if isinstance(where, UrlPath):
        return where
    if isinstance(where, str) and scheme_of(where):
        return UrlPath(where)
    p = Path(where)
    return p.expanduser().resolve() if resolve else p


class UnsupportedLocation(OSError):
    """A URL whose scheme no file system in this process reads or writes."""


class LocalFS:
    """Local files through ``os`` (what every path without a scheme uses)."""

    def exists(self, p: Path) -> bool:
        """Whether ``p`` exists."""
        return p.exists()

    def isdir(self, p: Path) -> bool:
        """Whether ``p`` is a folder."""
        return p.is_dir()

    def isfile(self, p: Path) -> bool:
        """Whether ``p`` is a file."""
        return p.is_file()

    def listdir(self, p: Path) -> list[str]:
        """Names in folder ``p`` (OSError when it cannot be listed)."""
        return os.listdir(p)

    def makedirs(self, p: Path) -> None:
        """Create ``p`` and its parents (fine if it exists)."""
        p.mkdir(parents=True, exist_ok=True)

    def mkdir_new(self, p: Path) -> None:
        """Create ``p`` (parents too); FileExistsError when it exists."""
        p.mkdir(parents=True, exist_ok=False)

    def read_bytes(self, p: Path) -> bytes:
        """The content of file ``p``."""
        return p.read_bytes()

    def read_range(self, p: Path, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes of file ``p`` from byte ``offset`` on."""
        with open(p, "rb") as f:
            f.seek(offset)
            return f.read(length)

    def write_bytes(self, p: Path, data: bytes) -> None:
        """Replace file ``p`` atomically (a reader never sees half a file)."""
        tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, p)

    def size(self, p: Path) -> int:
        """Bytes in file ``p`` (OSError when missing)."""
        return p.stat().st_size

    def rename(self, src: Path, dst: Path) -> None:
        """Rename ``src`` to ``dst``."""
        src.rename(dst)

    def rmtree(self, p: Path) -> None:
        """Delete folder ``p`` and everything in it."""
        shutil.rmtree(p)


class GFileFS:
    """Files named by URLs through a gfile module (TensorBoard's stub, or ``tf.io.gfile``).

    Args:
        gfile: the module; its errors for an unknown scheme become
            :class:`UnsupportedLocation`.
        who: which file layer this is, for error messages.
    """

    def __init__(self, gfile: Any, who: str) -> None:
        self.gfile = gfile
        self.who = who

    def _call(self, what: str, p: UrlPath, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except (ValueError, NotImplementedError, ImportError) as exc:
            # TensorBoard: "No recognized filesystem"; fsspec: "Protocol not known",
            # or ImportError "Install gcsfs to access Google Storage"
            raise self.unsupported(p, exc) from exc
        except Exception as exc:
            # tf.errors.UnimplementedError ("File system scheme 'x' not implemented")
            if type(exc).__name__ == "UnimplementedError":
                raise self.unsupported(p, exc) from exc
            if isinstance(exc, OSError):
                raise
            raise OSError(f"{what} {p}: {exc}") from exc

    def unsupported(self, p: UrlPath, exc: BaseException) -> UnsupportedLocation:
        """The error for a scheme this side cannot reach, saying what would help."""
        if self.who == READER:
            hint = (
                "tfstudio reads runs without TensorFlow, through TensorBoard's file layer: "
                "local paths, s3:// (with boto3), and other schemes through fsspec and the "
                "scheme's plugin (gs://: pip install fsspec gcsfs)"
            )
        else:
            hint = f"{self.who} has no file system for it"
        return UnsupportedLocation(f"{p}: cannot reach '{p.scheme}://' here ({exc}); {hint}")

    def exists(self, p: UrlPath) -> bool:
        """Whether ``p`` exists."""
        return bool(self._call("exists", p, self.gfile.exists, str(p)))

    def isdir(self, p: UrlPath) -> bool:
        """Whether ``p`` is a folder."""
        return bool(self._call("isdir", p, self.gfile.isdir, str(p)))

    def isfile(self, p: UrlPath) -> bool:
        """Whether ``p`` is a file."""
        return self.exists(p) and not self.isdir(p)

    def listdir(self, p: UrlPath) -> list[str]:
        """Names in folder ``p`` (sub-folder names without a trailing ``/``)."""
        names = self._call("listdir", p, self.gfile.listdir, str(p))
        return [str(n).rstrip("/") for n in names]

    def makedirs(self, p: UrlPath) -> None:
        """Create ``p`` and its parents (fine if it exists)."""
        self._call("makedirs", p, self.gfile.makedirs, str(p))

    def mkdir_new(self, p: UrlPath) -> None:
        """Create ``p``; FileExistsError when it exists."""
        if self.exists(p):
            raise FileExistsError(str(p))
        self.makedirs(p)

    def read_bytes(self, p: UrlPath) -> bytes:
        """The content of file ``p``."""

        def read() -> bytes:
            with self.gfile.GFile(str(p), "rb") as f:
                return f.read()

        return self._call("read", p, read)

    def read_range(self, p: UrlPath, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes of file ``p`` from byte ``offset`` on (a ranged read)."""

        def read() -> bytes:
            get_filesystem = getattr(self.gfile, "get_filesystem", None)
            if get_filesystem is not None:  # TensorBoard's stub: its file systems read ranges
                # local and fsspec file systems take "opaque_offset", S3's "byte_offset"
                token = {"opaque_offset": offset, "byte_offset": offset}
                data, _ = get_filesystem(str(p)).read(str(p), True, length, token)
                return bytes(data)
            with self.gfile.GFile(str(p), "rb") as f:  # tf.io.gfile: seekable files
                f.seek(offset)
                return f.read(length)

        return self._call("read", p, read)

    def write_bytes(self, p: UrlPath, data: bytes) -> None:
        """Replace file ``p`` (object stores replace a whole object at once)."""

        def write() -> None:
            if p.scheme == "ram" and self.gfile.exists(str(p)):
                # TensorFlow's in-memory file system appends on "wb" (TF 2.21, measured)
                self.gfile.remove(str(p))
            with self.gfile.GFile(str(p), "wb") as f:
                f.write(data)

        self._call("write", p, write)

    def size(self, p: UrlPath) -> int:
        """Bytes in file ``p``."""
        return int(self._call("stat", p, self.gfile.stat, str(p)).length)

    def rename(self, src: UrlPath, dst: UrlPath) -> None:
        """Rename ``src`` to ``dst`` (needs a gfile with ``rename``: TensorFlow's)."""
        fn = getattr(self.gfile, "rename", None)
        if fn is None:
            raise UnsupportedLocation(f"{src}: {self.who} cannot rename on '{src.scheme}://'")
        self._call("rename", src, fn, str(src), str(dst))

    def rmtree(self, p: UrlPath) -> None:
        """Delete folder ``p`` (needs a gfile with ``rmtree``: TensorFlow's)."""
        fn = getattr(self.gfile, "rmtree", None)
        if fn is None:
            raise UnsupportedLocation(f"{p}: {self.who} cannot delete on '{p.scheme}://'")
        self._call("delete", p, fn, str(p))


LOCAL = LocalFS()
READER = "TensorBoard's file layer"
_reader_fs: GFileFS | None = None


def reader_fs() -> GFileFS:
    """URL access for the window: TensorBoard's TensorFlow-free gfile."""
    global _reader_fs
    if _reader_fs is None:
        from tensorboard.compat.tensorflow_stub.io import gfile

        _reader_fs = GFileFS(gfile, READER)
    return _reader_fs


def fs_for(p: Location, writer: GFileFS | None = None) -> LocalFS | GFileFS:
    """The file system of ``p``: local, else ``writer`` (the worker's) or the reader's."""
    if isinstance(p, UrlPath):
        return writer if writer is not None else reader_fs()
    return LOCAL


# -- where a user's data goes --------------------------------------------------
APP_DIR = "tfstudio"


def user_data_dir() -> Path:
    """The per-user data folder: ``$XDG_DATA_HOME/tfstudio`` (``~/.local/share/tfstudio``).

    On Windows ``%LOCALAPPDATA%\\tfstudio``. Not created here.
    """
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / APP_DIR
    base = os.environ.get("XDG_DATA_HOME", "").strip()
    if not base or not os.path.isabs(base):  # the spec says: ignore a relative one
        base = os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / APP_DIR


def _installed_roots() -> list[Path]:
    """Folders that hold installed code: tfstudio's own package and resources, site-packages."""
    import site
    import sysconfig

    package = Path(__file__).resolve().parents[1]
    roots = [package, package.parent / "resources"]  # a checkout's bundled resources
    paths = sysconfig.get_paths()
    candidates = [paths.get("purelib"), paths.get("platlib")]
    try:
        candidates += site.getsitepackages()
    except AttributeError:  # pragma: no cover - some virtualenvs' site module
        pass
    candidates.append(site.getusersitepackages())
    for c in candidates:
        if c:
            roots.append(Path(c).resolve())
    return roots


def is_installed_code(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` lies inside tfstudio's package, its bundled resources, or a
    site-packages folder: installed code, where no user data belongs."""
    p = Path(folder).expanduser().resolve()
    return any(p == root or root in p.parents for root in _installed_roots())


def own_data_folder(folder: str | os.PathLike[str]) -> bool:
    """Whether user data (runs, checkpoints) may be written in ``folder``: it is not
    installed code (see :func:`is_installed_code`) and it exists and is writable."""
    p = Path(folder).expanduser()
    if is_installed_code(p):
        return False
    return p.is_dir() and os.access(p, os.W_OK | os.X_OK)


def data_folder_for(folder: str | os.PathLike[str], name: str, user_sub: str) -> Path:
    """``<folder>/<name>`` when ``folder`` is the user's own (:func:`own_data_folder`),
    else ``<user data dir>/<user_sub>`` (a bundled example, a read-only folder)."""
    if own_data_folder(folder):
        return Path(folder).expanduser().resolve() / name
    return user_data_dir() / user_sub
