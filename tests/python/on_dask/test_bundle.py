"""The precompiled-bundle format and its installer (no cluster): every entry checked, nothing
that is not jitexpr's ever replaced or removed, links never followed."""
import os
import stat

import pytest

from jitexpr import IOError as JxIOError
from jitexpr.dask import bundle

KEYS = ["%064x" % (0xabc0 + k) for k in range(5)]


def cache_with_entries(root, version=3):
    root.mkdir(parents=True, exist_ok=True)
    for k, key in enumerate(KEYS):
        d = root / f"v{version}" / key[:2]
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        (d / f"{key}.bin").write_bytes(bundle.make_record(key, b"image %d" % k * 50, version))
    os.chmod(root / f"v{version}", 0o700)
    return root


def test_pack_then_read_gives_the_same_entries(tmp_path):
    src = cache_with_entries(tmp_path / "src")
    (src / "v3" / KEYS[0][:2] / ".jitexpr-1-0123456789abcdef.tmp").write_bytes(b"half written")
    n = bundle.pack(src, tmp_path / "k.jxb", {"arch": "sm_90"})
    assert n == len(KEYS)
    entries = bundle.read(tmp_path / "k.jxb")
    assert sorted(e.key for e in entries) == sorted(KEYS)
    assert bundle.describe(tmp_path / "k.jxb")["arch"] == "sm_90"
    assert (tmp_path / "k.jxb").read_bytes() == bundle.to_bytes(bundle.read(src), {"arch": "sm_90"})


@pytest.mark.parametrize("version", [1, 2, 3])
def test_install_writes_entries_byte_for_byte(tmp_path, version):
    src = cache_with_entries(tmp_path / "src", version)
    r = bundle.install(src, tmp_path / "dst")
    assert len(r.installed) == len(KEYS) and not r.left
    for key in KEYS:
        a = (src / f"v{version}" / key[:2] / f"{key}.bin").read_bytes()
        dst = tmp_path / "dst" / f"v{version}" / key[:2] / f"{key}.bin"
        assert dst.read_bytes() == a
        assert stat.S_IMODE(dst.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "dst" / f"v{version}").stat().st_mode) == 0o700
    assert not [p for p in (tmp_path / "dst").rglob("*.tmp")] and not [p for p in (tmp_path / "dst").rglob(".tmp-*")]
    again = bundle.install(src, tmp_path / "dst")
    assert not again.installed and len(again.present) == len(KEYS)


@pytest.mark.parametrize("damage", ["flip", "truncate", "extend", "key"])
def test_a_damaged_entry_installs_nothing(tmp_path, damage):
    src = cache_with_entries(tmp_path / "src")
    f = src / "v3" / KEYS[3][:2] / f"{KEYS[3]}.bin"
    b = bytearray(f.read_bytes())
    if damage == "flip":
        b[-3] ^= 1
    elif damage == "truncate":
        b = b[:-1]
    elif damage == "extend":
        b += b"x"
    else:
        b[70] = ord("0") if b[70] != ord("0") else ord("1")
    f.write_bytes(bytes(b))
    with pytest.raises(JxIOError, match=KEYS[3]):
        bundle.install(src, tmp_path / "dst")
    assert not (tmp_path / "dst").exists() or not list((tmp_path / "dst").rglob("*.bin"))


def test_a_damaged_archive_is_refused(tmp_path):
    src = cache_with_entries(tmp_path / "src")
    bundle.pack(src, tmp_path / "k.jxb")
    data = bytearray((tmp_path / "k.jxb").read_bytes())
    for cut in (len(data) - 1, 100, 40):
        with pytest.raises(JxIOError):
            bundle.read(bytes(data[:cut]))
    data[200] ^= 0xFF
    with pytest.raises(JxIOError, match="entry"):
        bundle.read(bytes(data))
    with pytest.raises(JxIOError, match="not a jitexpr bundle"):
        bundle.read(b"PK\x03\x04" + b"\0" * 100)


def test_files_that_are_not_jitexprs_are_never_replaced_or_removed(tmp_path):
    src = cache_with_entries(tmp_path / "src")
    dst = tmp_path / "dst"
    shard = dst / "v3" / KEYS[0][:2]
    shard.mkdir(parents=True, mode=0o700)
    os.chmod(dst / "v3", 0o700)
    foreign = shard / f"{KEYS[0]}.bin"
    foreign.write_bytes(b"my notes, not a kernel")
    other = shard / "README"
    other.write_bytes(b"keep me")
    os.mkfifo(shard / f"{KEYS[1]}.bin")
    r = bundle.install(src, dst)
    assert foreign.read_bytes() == b"my notes, not a kernel" and other.read_bytes() == b"keep me"
    assert stat.S_ISFIFO(os.lstat(shard / f"{KEYS[1]}.bin").st_mode)
    assert {p for p, _ in r.left} == {str(foreign), str(shard / f"{KEYS[1]}.bin")}
    assert len(r.installed) == len(KEYS) - 2


def test_links_below_the_cache_are_never_followed(tmp_path):
    src = cache_with_entries(tmp_path / "src")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    dst = tmp_path / "dst"
    (dst / "v3").mkdir(parents=True, mode=0o700)
    os.chmod(dst / "v3", 0o700)
    os.symlink(elsewhere, dst / "v3" / KEYS[0][:2])
    r = bundle.install(src, dst)
    assert not list(elsewhere.iterdir())
    assert all(KEYS[0][:2] in p for p, _ in r.left) and r.left
    # a version folder that is a link: nothing installed
    dst2 = tmp_path / "dst2"
    dst2.mkdir()
    os.symlink(elsewhere, dst2 / "v3")
    with pytest.raises(JxIOError, match="symbolic link"):
        bundle.install(src, dst2)
    assert not list(elsewhere.iterdir())


def test_a_version_folder_others_can_write_is_refused(tmp_path):
    src = cache_with_entries(tmp_path / "src")
    dst = tmp_path / "dst"
    (dst / "v3").mkdir(parents=True)
    os.chmod(dst / "v3", 0o777)
    with pytest.raises(JxIOError, match="writable by other users"):
        bundle.install(src, dst)


def test_pack_replaces_only_a_bundle(tmp_path):
    src = cache_with_entries(tmp_path / "src")
    notes = tmp_path / "notes.txt"
    notes.write_text("important")
    with pytest.raises(JxIOError, match="not a jitexpr bundle"):
        bundle.pack(src, notes)
    assert notes.read_text() == "important"
    bundle.pack(src, tmp_path / "k.jxb")
    bundle.pack(src, tmp_path / "k.jxb")  # a bundle may be replaced by a bundle


def test_real_precompiled_entries_round_trip(tmp_path):
    """With the jitexpr CLI and NVRTC (no GPU needed): `jitexpr precompile --arch` fills a cache
    directory; the bundle of it installs the very same files."""
    cli = os.environ.get("JITEXPR_CLI") or os.path.join(os.path.dirname(__file__), "../../../build/tools/jitexpr")
    if not os.access(cli, os.X_OK):
        pytest.skip("the jitexpr CLI is not built (build/tools/jitexpr)")
    import subprocess
    progs = tmp_path / "progs.txt"
    progs.write_text("c = a * 2 + b ; a: float64[N], b: float64[N]\nsum(a * b) ; a: float64[N], b: float64[N]\n")
    env = dict(os.environ, JITEXPR_DISK_CACHE="1")
    p = subprocess.run([cli, "precompile", str(progs), "--arch", "sm_90", "--cache-dir", str(tmp_path / "src")],
                       capture_output=True, text=True, env=env, timeout=300)
    if p.returncode != 0 and ("NVRTC" in p.stderr or "nvrtc" in p.stderr):
        pytest.skip("NVRTC is not available: " + p.stderr.strip()[:200])
    assert p.returncode == 0, p.stderr
    entries = bundle.read(tmp_path / "src")
    assert entries
    bundle.pack(tmp_path / "src", tmp_path / "k.jxb")
    r = bundle.install(tmp_path / "k.jxb", tmp_path / "dst")
    assert len(r.installed) == len(entries)
    for e in entries:
        assert (tmp_path / "dst" / e.relpath).read_bytes() == (tmp_path / "src" / e.relpath).read_bytes()


@pytest.mark.parametrize("algorithm", [1, 2])
def test_version3_records_check_with_the_caches_own_checksum(algorithm):
    from jitexpr import _jitexpr
    if algorithm == 2 and _jitexpr._cache_default_checksum() != 2:
        pytest.skip("built without xxhash.h: XXH3-128 is not computed here")
    rec = bundle.make_record(KEYS[0], b"cubin" * 100, 3, algorithm)
    assert rec[14] == algorithm and rec[15] == (32 if algorithm == 1 else 16)
    assert bundle.parse_record(rec, expect_key=KEYS[0]).version == 3
    bad = bytearray(rec)
    bad[-1] ^= 1
    with pytest.raises(JxIOError, match="checksum mismatch"):
        bundle.parse_record(bytes(bad))
