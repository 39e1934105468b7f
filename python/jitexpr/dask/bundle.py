"""Precompiled bundles: jitexpr's disk-cache entries carried to other machines.

A bundle is what ``WarmCache`` installs on every worker so that a new GPU worker starts with its
kernels on disk and compiles nothing. It is either

* **a cache directory** made by ``jitexpr precompile FILE --arch sm_XY --cache-dir DIR`` (or by
  running the programs once with ``JITEXPR_CACHE_DIR=DIR``): its entry files
  ``DIR/v<N>/<kk>/<key>.bin`` are the bundle; or
* **one archive file** of such entries (``pack``), the format below.

Archive format (all integers little-endian)::

    offset  size  field
    0       8     magic "JITXBNDL"
    8       4     bundle format version (1)
    12      4     header length: where the first record starts (64 + description length)
    16      4     record count
    20      4     flags (0; reserved)
    24      8     records length in bytes
    32      32    SHA-256 of bytes 0..31 and the description
    64      ...   description: UTF-8 JSON ({"jitexpr": version, "arch": ..., "formats": [...]})
    ...     ...   the records: entry files of the disk cache, byte for byte, back to back;
                  the file ends exactly after the last one

Each record is a disk-cache entry file exactly as the cache writes it (docs/cache.md): it holds
its own format version, lengths, key and checksum, so it is checked here by the cache's own
rules, and installed under the name the cache looks for. Formats known: version 3 (the layout of
version 2, with the checksum XXH3-128, algorithm 2, or SHA-256, algorithm 1, computed by the
cache's own code in the extension), version 2 (magic, header with checksum algorithm and
lengths, SHA-256 over the header's first 32 bytes, the key and the payload) and version 1 (magic,
lengths, SHA-256 of the payload). A bundle keeps each entry's version; this jitexpr reads only
version 3 from its cache, so entries of older versions install but are not used here.

Installing (``install``) **validates every entry first** and installs nothing when one fails.
It then writes each entry as the cache does: a temporary file of jitexpr's in the key's folder,
synced, then linked under the entry's name only if that name is free (never replacing anything:
an existing entry of the same key is left as it is, identical or not; a file that is not
jitexpr's, a link or a FIFO under that name is left and reported). It never deletes a file it
did not just write, never follows a link below the cache directory, and refuses a version folder
that belongs to another user or that others may write (as the cache does). Several workers
installing into one shared directory at once is safe.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import pwd
import re
import secrets
import stat
import struct
import sys
from typing import NamedTuple

from .._errors import ArgumentError, IOError as JxIOError

__all__ = ["Entry", "InstallReport", "read", "pack", "install", "default_cache_dir", "disk_cache_enabled"]

BUNDLE_MAGIC = b"JITXBNDL"
BUNDLE_VERSION = 1
ENTRY_MAGIC = b"JITXCACH"
_KEY = re.compile(r"^[0-9a-f]{8,128}$")
_NAME = re.compile(r"^([0-9a-f]{8,128})\.bin$")
_MAX_RECORD = 1 << 31  # 2 GiB: no kernel image is near this; a header saying more is damage


class Entry(NamedTuple):
    """One disk-cache entry: its format ``version``, ``key`` and the whole record (``data``)."""
    version: int
    key: str
    data: bytes

    @property
    def relpath(self):
        return f"v{self.version}/{self.key[:2]}/{self.key}.bin"


class InstallReport(NamedTuple):
    """What ``install`` did: ``installed`` (paths written), ``present`` (the same entry was
    already there), ``left`` ([(path, why)]: names taken by something else, left untouched),
    ``cache_dir``."""
    cache_dir: str
    installed: list
    present: list
    left: list


# ------------------------------------------------------------------------------------- records

def _u16(b, o):
    return struct.unpack_from("<H", b, o)[0]


def _u32(b, o):
    return struct.unpack_from("<I", b, o)[0]


def _u64(b, o):
    return struct.unpack_from("<Q", b, o)[0]


def record_length(buf, at=0):
    """The length of the record starting at ``at`` from its header (no checksum checked)."""
    if len(buf) - at < 12 or bytes(buf[at:at + 8]) != ENTRY_MAGIC:
        raise JxIOError("not a jitexpr cache entry (it does not start with JITXCACH)")
    version = _u32(buf, at + 8)
    if version in (2, 3):
        if len(buf) - at < 64:
            raise JxIOError("truncated entry header")
        hl = _u16(buf, at + 12)
        if hl != 64:
            raise JxIOError(f"entry header length {hl}, expected 64")
        n = 64 + _u32(buf, at + 16) + _u64(buf, at + 24)
    elif version == 1:
        if len(buf) - at < 56:
            raise JxIOError("truncated entry header")
        n = 56 + _u32(buf, at + 12) + _u64(buf, at + 16)
    else:
        raise JxIOError(f"entry format version {version} is unknown to this jitexpr")
    if n > _MAX_RECORD:
        raise JxIOError(f"entry says it is {n} bytes long")
    return n


def parse_record(data, expect_key=None):
    """Checks one whole record by the disk cache's rules and returns its Entry; raises
    jitexpr.IOError saying what is wrong."""
    data = bytes(data)
    n = record_length(data)
    if n != len(data):
        raise JxIOError(f"length mismatch: the header says {n} bytes, the entry has {len(data)}")
    version = _u32(data, 8)
    if version in (2, 3):
        klen, plen = _u32(data, 16), _u64(data, 24)
        algorithm, sum_len, flags = data[14], data[15], _u32(data, 20)
        want = _checksum(version, algorithm, data[:32] + data[64:])
        if want is None or sum_len != len(want):
            raise JxIOError(f"checksum algorithm {algorithm} (length {sum_len}) is unknown to this jitexpr")
        if flags != 0:
            raise JxIOError(f"flags {flags:#x} this jitexpr does not know")
        key = data[64:64 + klen]
        payload = data[64 + klen:]
        if want + bytes(32 - len(want)) != data[32:64]:
            raise JxIOError("checksum mismatch")
    else:
        klen, plen = _u32(data, 12), _u64(data, 16)
        key = data[56:56 + klen]
        payload = data[56 + klen:]
        if hashlib.sha256(payload).digest() != data[24:56]:
            raise JxIOError("checksum mismatch")
    if len(payload) != plen:
        raise JxIOError("truncated payload")
    try:
        k = key.decode("ascii")
    except UnicodeDecodeError:
        raise JxIOError("the key is not lowercase hex") from None
    if not _KEY.match(k):
        raise JxIOError("the key is not 8 to 128 lowercase hex characters")
    if expect_key is not None and k != expect_key:
        raise JxIOError("the stored key differs from the file name")
    return Entry(version, k, data)


def _checksum(version, algorithm, covered):
    """The checksum of an entry of format ``version`` with ``algorithm`` over ``covered`` (bytes
    0..31, key, payload), unpadded; None for an algorithm unknown to this jitexpr."""
    if version == 2:
        return hashlib.sha256(covered).digest() if algorithm == 1 else None
    from .. import _jitexpr  # the cache's own code: XXH3-128 has no implementation in the stdlib

    sum_ = _jitexpr._cache_checksum(algorithm, bytes(covered))
    return sum_ or None


def make_record(key, payload, version=3, algorithm=None):
    """An entry record as the disk cache writes it (tests and tools; ``version`` 3, 2 or 1;
    ``algorithm`` for version 3: 2 XXH3-128, 1 SHA-256, default what this build's cache writes)."""
    if not _KEY.match(key):
        raise ArgumentError("a key is 8 to 128 lowercase hex characters")
    k = key.encode("ascii")
    payload = bytes(payload)
    if version == 3:
        if algorithm is None:
            from .. import _jitexpr

            algorithm = _jitexpr._cache_default_checksum()
        sum_len = {1: 32, 2: 16}.get(algorithm, 0)
        head = ENTRY_MAGIC + struct.pack("<IHBBIIQ", 3, 64, algorithm, sum_len, len(k), 0, len(payload))
        sum_ = _checksum(3, algorithm, head + k + payload) if sum_len else None
        if sum_ is None:
            raise ArgumentError(f"checksum algorithm {algorithm} is unknown to this jitexpr")
        return head + sum_ + bytes(32 - len(sum_)) + k + payload
    if version == 2:
        head = ENTRY_MAGIC + struct.pack("<IHBBIIQ", 2, 64, 1, 32, len(k), 0, len(payload))
        return head + hashlib.sha256(head + k + payload).digest() + k + payload
    if version == 1:
        return ENTRY_MAGIC + struct.pack("<IIQ", 1, len(k), len(payload)) + hashlib.sha256(payload).digest() + k + payload
    raise ArgumentError(f"entry format version {version} is not one jitexpr writes")


# ------------------------------------------------------------------------------------- reading

def _read_regular(dirfd, name, limit=_MAX_RECORD):
    """The bytes of a regular file, opened without following a link or blocking on a FIFO;
    None for anything else."""
    try:
        st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY, dir_fd=dirfd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        chunks, left = [], st.st_size
        while left > 0:
            b = os.read(fd, min(left, 1 << 24))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _open_dir(name, dirfd=None):
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dirfd)


def _read_directory(path):
    """Entries of a cache directory: every ``v<N>/<kk>/<key>.bin`` for the formats known, each
    checked in full. Never descends through a link. Temporary files and other names are not
    entries and are passed over."""
    entries, problems = [], []
    root = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for version in (1, 2, 3):
            try:
                vfd = _open_dir(f"v{version}", root)
            except FileNotFoundError:
                continue
            except OSError as e:
                problems.append((f"v{version}", f"not a folder that can be read ({e.strerror})"))
                continue
            try:
                for shard in sorted(os.listdir(vfd)):
                    if not re.match(r"^[0-9a-f]{2}$", shard):
                        continue
                    try:
                        sfd = _open_dir(shard, vfd)
                    except OSError:
                        problems.append((f"v{version}/{shard}", "a link or not a folder: not read"))
                        continue
                    try:
                        for name in sorted(os.listdir(sfd)):
                            m = _NAME.match(name)
                            if not m:
                                continue  # temporary files, anything else: not entries
                            rel = f"v{version}/{shard}/{name}"
                            if not m.group(1).startswith(shard):
                                problems.append((rel, "in the folder of another key"))
                                continue
                            data = _read_regular(sfd, name)
                            if data is None:
                                problems.append((rel, "not a regular file"))
                                continue
                            try:
                                e = parse_record(data, expect_key=m.group(1))
                            except JxIOError as err:
                                problems.append((rel, str(err)))
                                continue
                            if e.version != version:
                                problems.append((rel, f"format version {e.version} in the folder of version {version}"))
                                continue
                            entries.append(e)
                    finally:
                        os.close(sfd)
            finally:
                os.close(vfd)
    finally:
        os.close(root)
    return entries, problems


def _parse_archive(buf, where="the bundle"):
    if len(buf) < 64 or buf[:8] != BUNDLE_MAGIC:
        raise JxIOError(f"{where} is not a jitexpr bundle (it does not start with JITXBNDL)")
    version, hlen, count, flags, rlen = struct.unpack_from("<IIIIQ", buf, 8)
    if version != BUNDLE_VERSION:
        raise JxIOError(f"{where} has bundle format version {version}; this jitexpr reads version {BUNDLE_VERSION}")
    if flags != 0:
        raise JxIOError(f"{where} has flags {flags:#x} this jitexpr does not know")
    if hlen < 64 or hlen > len(buf):
        raise JxIOError(f"{where}: header length {hlen} does not fit the file")
    if hashlib.sha256(buf[:32] + buf[64:hlen]).digest() != buf[32:64]:
        raise JxIOError(f"{where}: the header's checksum does not match")
    if hlen + rlen != len(buf):
        raise JxIOError(f"{where}: the header says {hlen + rlen} bytes, the file has {len(buf)}")
    try:
        description = json.loads(buf[64:hlen].decode("utf-8")) if hlen > 64 else {}
    except (UnicodeDecodeError, ValueError):
        raise JxIOError(f"{where}: the description is not UTF-8 JSON") from None
    entries, at = [], hlen
    for k in range(count):
        try:
            n = record_length(buf, at)
            if at + n > len(buf):
                raise JxIOError("truncated")
            entries.append(parse_record(buf[at:at + n]))
        except JxIOError as err:
            raise JxIOError(f"{where}: entry {k} (at byte {at}): {err}") from None
        at += n
    if at != len(buf):
        raise JxIOError(f"{where}: {len(buf) - at} bytes after the last of its {count} entries")
    return entries, description


def read(source):
    """The entries of a bundle — a cache directory, an archive file, or an archive's bytes —
    each checked in full. Raises jitexpr.IOError naming the first bad entry (nothing is
    installed from a bundle with a bad entry)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _parse_archive(bytes(source), "the bundle's bytes")[0]
    path = os.fspath(source)
    if os.path.isdir(path):
        entries, problems = _read_directory(path)
        if problems:
            rel, why = problems[0]
            raise JxIOError(f"{os.path.join(path, rel)}: {why}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
        return entries
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise JxIOError(f"{path} is not a regular file or a folder")
    finally:
        os.close(fd)
    with open(path, "rb") as f:
        buf = f.read()
    return _parse_archive(buf, path)[0]


def describe(source):
    """The description stored in an archive (``{}`` for a cache directory)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _parse_archive(bytes(source))[1]
    path = os.fspath(source)
    if os.path.isdir(path):
        return {}
    with open(path, "rb") as f:
        return _parse_archive(f.read(), path)[1]


def to_bytes(entries, description=None):
    """An archive holding ``entries`` (sorted by key, so the same entries give the same bytes)."""
    from .. import __version__
    entries = sorted({(e.version, e.key): e for e in entries}.values(), key=lambda e: (e.version, e.key))
    desc = {"jitexpr": __version__, "formats": sorted({e.version for e in entries})}
    desc.update(description or {})
    d = json.dumps(desc, sort_keys=True).encode("utf-8")
    records = b"".join(e.data for e in entries)
    head = BUNDLE_MAGIC + struct.pack("<IIIIQ", BUNDLE_VERSION, 64 + len(d), len(entries), 0, len(records))
    return head + hashlib.sha256(head + d).digest() + d + records


def pack(cache_dir, out, description=None):
    """Writes the entries of the cache directory ``cache_dir`` (every one checked) into the
    archive file ``out``, atomically. An existing ``out`` is replaced only if it is a jitexpr
    bundle itself. Returns the number of entries."""
    entries = read(cache_dir)
    if not entries:
        raise JxIOError(f"{cache_dir} holds no jitexpr cache entries")
    data = to_bytes(entries, description)
    out = os.fspath(out)
    if os.path.lexists(out):
        st = os.lstat(out)
        if not stat.S_ISREG(st.st_mode):
            raise JxIOError(f"{out} exists and is not a regular file: not replaced")
        with open(out, "rb") as f:
            if f.read(8) != BUNDLE_MAGIC:
                raise JxIOError(f"{out} exists and is not a jitexpr bundle: not replaced")
    folder = os.path.dirname(os.path.abspath(out))
    tmp = os.path.join(folder, f".jitexpr-{os.getpid()}-{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    os.replace(tmp, out)
    return len(entries)


# ------------------------------------------------------------------------------------- installing

def disk_cache_enabled():
    v = os.environ.get("JITEXPR_DISK_CACHE")
    if v is None:
        return True
    low = v.strip().lower()
    if low in ("0", "false", "off", "no"):
        return False
    if low in ("1", "true", "on", "yes", ""):
        return True
    raise ArgumentError(f"JITEXPR_DISK_CACHE={v!r}: use 0/false/off/no or 1/true/on/yes")


def default_cache_dir():
    """The folder this process's jitexpr uses for its disk cache (docs/cache.md, "Where"):
    ``$JITEXPR_CACHE_DIR``, else ``$XDG_CACHE_HOME/jitexpr`` (absolute only), else
    ``$HOME/.cache/jitexpr`` (the password database's home when ``HOME`` is unset)."""
    d = os.environ.get("JITEXPR_CACHE_DIR")
    if d:
        return d
    x = os.environ.get("XDG_CACHE_HOME")
    if x and os.path.isabs(x):
        return os.path.join(x, "jitexpr")
    home = os.environ.get("HOME") or pwd.getpwuid(os.geteuid()).pw_dir
    return os.path.join(home, ".cache", "jitexpr")


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _safe_version_dir(rootfd, name, path):
    try:
        os.mkdir(name, 0o700, dir_fd=rootfd)
    except FileExistsError:
        pass
    try:
        vfd = _open_dir(name, rootfd)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            raise JxIOError(f"{path} is not a folder (a symbolic link or a file): nothing installed") from None
        raise JxIOError(f"cannot open {path}: {e.strerror}") from None
    st = os.fstat(vfd)
    why = None
    if st.st_uid != os.geteuid():
        why = f"belongs to another user (uid {st.st_uid})"
    elif st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        why = f"is writable by other users (mode {stat.S_IMODE(st.st_mode):04o})"
    if why:
        os.close(vfd)
        raise JxIOError(f"{path} {why}: jitexpr loads code from there and installs nothing into it")
    return vfd


def _install_one(sfd, e, path, report):
    name = f"{e.key}.bin"
    existing = None
    try:
        os.stat(name, dir_fd=sfd, follow_symlinks=False)
        existing = True
    except FileNotFoundError:
        existing = False
    if existing:
        _judge_existing(sfd, name, e, path, report)
        return
    tmp_name = f".jitexpr-{os.getpid()}-{secrets.token_hex(8)}.tmp" if e.version >= 2 else \
        f".tmp-{os.getpid()}-{secrets.token_hex(8)}"
    fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=sfd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a temporary file in use, as the cache's own (docs/cache.md)
        _write_all(fd, e.data)
        os.fsync(fd)
        try:
            os.link(tmp_name, name, src_dir_fd=sfd, dst_dir_fd=sfd, follow_symlinks=False)  # never replaces
            report.installed.append(path)
        except FileExistsError:
            _judge_existing(sfd, name, e, path, report)
    finally:
        os.close(fd)
        try:
            os.unlink(tmp_name, dir_fd=sfd)  # our own temporary file, always
        except FileNotFoundError:
            pass


def _judge_existing(sfd, name, e, path, report):
    data = _read_regular(sfd, name)
    if data is None:
        report.left.append((path, "something other than a regular file has the entry's name"))
    elif data == e.data:
        report.present.append(path)
    elif data[:8] == ENTRY_MAGIC:
        report.present.append(path)  # jitexpr's entry for the key: the cache checks and keeps its own
    else:
        report.left.append((path, "a file that is not jitexpr's has the entry's name: left as it is"))


def install(source, cache_dir=None):
    """Installs the bundle ``source`` (a cache directory, an archive file, or its bytes) into
    ``cache_dir`` (default: this process's jitexpr cache directory). Every entry is checked
    before anything is written; nothing that exists is replaced or removed. Returns an
    :class:`InstallReport`."""
    entries = read(source)
    if cache_dir is None:
        if not disk_cache_enabled():
            raise ArgumentError("the disk cache is off here (JITEXPR_DISK_CACHE): a bundle would never be read")
        cache_dir = default_cache_dir()
    cache_dir = os.fspath(cache_dir)
    os.makedirs(cache_dir, mode=0o700, exist_ok=True)
    report = InstallReport(cache_dir, [], [], [])
    root = os.open(cache_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        by_version = {}
        for e in entries:
            by_version.setdefault(e.version, []).append(e)
        for version, es in sorted(by_version.items()):
            vname = f"v{version}"
            vfd = _safe_version_dir(root, vname, os.path.join(cache_dir, vname))
            try:
                for e in sorted(es, key=lambda e: e.key):
                    shard = e.key[:2]
                    path = os.path.join(cache_dir, e.relpath)
                    try:
                        os.mkdir(shard, 0o700, dir_fd=vfd)
                    except FileExistsError:
                        pass
                    try:
                        sfd = _open_dir(shard, vfd)
                    except OSError:
                        report.left.append((path, f"{vname}/{shard} is a link or not a folder: not entered"))
                        continue
                    try:
                        _install_one(sfd, e, path, report)
                    finally:
                        try:
                            os.fsync(sfd)
                        except OSError:
                            pass
                        os.close(sfd)
            finally:
                os.close(vfd)
    finally:
        os.close(root)
    return report


def main(argv=None):
    """``python -m jitexpr.dask.bundle pack CACHE_DIR OUT [--arch sm_90]`` |
    ``install BUNDLE [--cache-dir DIR]`` | ``list BUNDLE``."""
    import argparse
    p = argparse.ArgumentParser(prog="python -m jitexpr.dask.bundle", description="jitexpr precompiled bundles")
    sub = p.add_subparsers(dest="cmd", required=True)
    pk = sub.add_parser("pack", help="one archive file of a cache directory's entries")
    pk.add_argument("cache_dir")
    pk.add_argument("out")
    pk.add_argument("--arch", help="recorded in the description (e.g. sm_90)")
    ins = sub.add_parser("install", help="install a bundle into a cache directory")
    ins.add_argument("bundle")
    ins.add_argument("--cache-dir")
    ls = sub.add_parser("list", help="check a bundle and list its entries")
    ls.add_argument("bundle")
    a = p.parse_args(argv)
    try:
        if a.cmd == "pack":
            n = pack(a.cache_dir, a.out, {"arch": a.arch} if a.arch else None)
            print(f"{a.out}: {n} entries")
        elif a.cmd == "install":
            r = install(a.bundle, a.cache_dir)
            print(f"{r.cache_dir}: {len(r.installed)} installed, {len(r.present)} already there, {len(r.left)} left")
            for path, why in r.left:
                print(f"  left {path}: {why}")
        else:
            for e in read(a.bundle):
                print(f"{e.relpath}  {len(e.data)} bytes")
            print(json.dumps(describe(a.bundle)))
    except (JxIOError, ArgumentError, OSError) as err:
        print(f"jitexpr bundle: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
