"""The trash's folders and files, opened so that a link or a planted folder is never followed.

Anything that can write beside the store (a sync tool, a backup restored over it, another local
user in a shared folder) can replace `.hermes-tui-trash` or a folder in it by a link; retention
and `empty` then deleted folders wherever the link pointed. So every folder below the one the user
chose (the store's folder, the data folder) is opened by descriptor with `O_NOFOLLOW`, must be
ours (owner and not writable by others), and every name in it is resolved against that
descriptor: a folder swapped for a link between two calls is still never entered. Files are
opened the same way, must be regular files (a FIFO would block a listing forever) and are read
up to a bound.

The link key (`trash.key` in the user data folder, 0600) lets a restore tell the parent links the
entry's own delete removed from forged ones: each such link is written with an HMAC under it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import json
import os
import secrets
import shutil
import stat
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from .errors import StoreError
from .paths import user_data_dir

TRASH_DIR_NAME = ".hermes-tui-trash"
KEY_NAME = "trash.key"
KEY_BYTES = 32
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class UnsafeFile(StoreError):
    """A trash folder or file that is not read: a link, not a folder or regular file, another
    user's, or too large. The message is the reason, for a report."""


def beside_root(db_path: Path) -> Path:
    return db_path.parent / TRASH_DIR_NAME / db_path.name


def fallback_root(db_path: Path, data_dir: Path | None = None) -> Path:
    """The store's trash in the user data folder (used when its own folder is not writable)."""
    digest = hashlib.sha256(str(db_path.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return (data_dir or user_data_dir()) / "trash" / f"{db_path.name}-{digest}"


def new_entry_id(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def _refuse_open(exc: OSError, path: Path, what: str, dir_fd: int | None = None) -> UnsafeFile:
    link = exc.errno == errno.ELOOP
    if exc.errno == errno.ENOTDIR:  # O_DIRECTORY on a link says ENOTDIR, not ELOOP
        with contextlib.suppress(OSError):
            st = os.stat(path.name if dir_fd is not None else path, dir_fd=dir_fd, follow_symlinks=False)
            link = stat.S_ISLNK(st.st_mode)
    if link:
        return UnsafeFile(f"{path} is a link, not a {what}: never followed")
    if exc.errno == errno.ENOTDIR:
        return UnsafeFile(f"{path} is not a {what}")
    return UnsafeFile(f"{path} cannot be opened: {exc.strerror or exc}")


class TrashDir:
    """A trash folder held open by descriptor; names in it never follow links."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path

    # ------------------------------------------------------------ opening
    @classmethod
    def walk(cls, base: Path, parts: Sequence[str], *, create: bool) -> TrashDir | None:
        """`base` (chosen by the user: links followed), then each of `parts` below it, each
        opened without following a link and checked to be ours. None when a folder is missing
        (and not `create`); `UnsafeFile` when one is not a private folder of ours."""
        if create:
            base.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _refuse_open(exc, base, "folder") from exc
        here = cls(fd, base)
        try:
            for part in parts:
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o700, dir_fd=here.fd)
                nxt = here.sub(part)
                if nxt is None:
                    here.close()
                    return None
                here.close()
                here = nxt
                here.check_private()
        except BaseException:
            here.close()
            raise
        return here

    def sub(self, name: str) -> TrashDir | None:
        """The folder `name` in this one (None when missing); a link raises `UnsafeFile`."""
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=self.fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _refuse_open(exc, self.path / name, "folder", self.fd) from exc
        return TrashDir(fd, self.path / name)

    def check_private(self) -> None:
        st = os.fstat(self.fd)
        if st.st_uid != os.geteuid():
            raise UnsafeFile(f"{self.path} belongs to another user (uid {st.st_uid}): not used")
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise UnsafeFile(f"{self.path} is writable by other users: not used")

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> TrashDir:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ------------------------------------------------------------ names
    def names(self) -> list[str]:
        return sorted(os.listdir(self.fd))

    def lstat(self, name: str) -> os.stat_result | None:
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def size(self) -> int:
        """Bytes of the regular files directly in this folder (an entry has no subfolders)."""
        total = 0
        with contextlib.suppress(OSError):
            for name in os.listdir(self.fd):
                with contextlib.suppress(OSError):
                    st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
                    if stat.S_ISREG(st.st_mode):
                        total += st.st_size
        return total

    # ------------------------------------------------------------ files
    def open_regular(self, name: str, flags: int = _FILE_FLAGS) -> int:
        """A descriptor on the regular file `name` (`FileNotFoundError` when missing)."""
        try:
            fd = os.open(name, flags, dir_fd=self.fd)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise _refuse_open(exc, self.path / name, "file", self.fd) from exc
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise UnsafeFile(f"{self.path / name} is not a regular file")
        os.set_blocking(fd, True)
        return fd

    def read(self, name: str, limit: int) -> bytes:
        fd = self.open_regular(name)
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(limit + 1)
        if len(data) > limit:
            raise UnsafeFile(f"{self.path / name} is larger than {limit:,} bytes")
        return data

    def create(self, name: str, *, append: bool = False) -> int:
        """A descriptor to write `name`: created new (0600), or appended to (an existing regular file)."""
        if append:
            return self.open_regular(name, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600, dir_fd=self.fd)

    def write_new(self, name: str, text: str) -> None:
        """Write `name` (0600, created new), fsync it; a failed write leaves no file."""
        fd = self.create(name)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=self.fd)
            raise

    def replace(self, name: str, text: str) -> None:
        """Atomically replace `name` with `text` (0600), file and folder fsynced."""
        tmp = f".{name}.{secrets.token_hex(4)}.tmp"
        self.write_new(tmp, text)
        try:
            os.replace(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=self.fd)
            raise
        self.fsync()

    def mkdir(self, name: str) -> None:
        os.mkdir(name, 0o700, dir_fd=self.fd)

    def fsync(self) -> None:
        os.fsync(self.fd)

    def remove(self, name: str) -> None:
        """Remove the entry `name` for good: a link or file is unlinked (never followed), a folder
        loses its manifest first (it is then `incomplete`, never half a restorable entry), then
        the rest, through this folder's descriptor."""
        st = self.lstat(name)
        if st is None:
            return
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(name, dir_fd=self.fd)
        else:
            sub = self.sub(name)
            if sub is not None:
                with sub, contextlib.suppress(FileNotFoundError):
                    os.unlink("manifest.json", dir_fd=sub.fd)
            shutil.rmtree(name, dir_fd=self.fd)
        with contextlib.suppress(OSError):
            self.fsync()


# ---------------------------------------------------------------- the link key
def link_key(*, create: bool, data_dir: Path | None = None) -> bytes | None:
    """This user's secret for link tags (None when there is none and it cannot be made)."""
    base = data_dir or user_data_dir()
    try:
        folder = TrashDir.walk(base, (), create=create)
    except (OSError, UnsafeFile):
        return None
    if folder is None:
        return None
    with folder:
        key = _read_key(folder)
        if key is not None or not create:
            return key
        fresh = secrets.token_bytes(KEY_BYTES)
        tmp = f".{KEY_NAME}.{secrets.token_hex(4)}.tmp"
        try:
            folder.write_new(tmp, fresh.hex())
            try:
                os.link(tmp, KEY_NAME, src_dir_fd=folder.fd, dst_dir_fd=folder.fd, follow_symlinks=False)
            except FileExistsError:  # another process made one meanwhile, or a bad one is there
                if _read_key(folder) is None:
                    os.replace(tmp, KEY_NAME, src_dir_fd=folder.fd, dst_dir_fd=folder.fd)
            folder.fsync()
        except OSError:
            return None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=folder.fd)
        return _read_key(folder)


def _read_key(folder: TrashDir) -> bytes | None:
    try:
        fd = folder.open_regular(KEY_NAME)
    except (OSError, UnsafeFile):
        return None
    with os.fdopen(fd, "rb") as fh:
        if os.fstat(fh.fileno()).st_uid != os.geteuid():
            return None
        raw = fh.read(KEY_BYTES * 2 + 1)
    try:
        key = bytes.fromhex(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return None
    return key if len(key) == KEY_BYTES else None


def link_tag(key: bytes, entry_id: str, child: Any, parent: Any) -> str:
    """The tag of "the delete of `entry_id` removed `child`'s link to `parent`" (JSON-encoded
    values, so any id a store holds can be tagged)."""
    msg = json.dumps(["hermes-tui trash link", entry_id, child, parent], separators=(",", ":"))
    return hmac.new(key, msg.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def tag_ok(key: bytes | None, entry_id: str, child: Any, parent: Any, tag: Any) -> bool:
    return (
        key is not None
        and isinstance(tag, str)
        and hmac.compare_digest(
            tag.encode("ascii", "replace"), link_tag(key, entry_id, child, parent).encode()
        )
    )
