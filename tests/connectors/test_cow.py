"""Copy-on-write directories (connectors.cow) on this machine's real filesystems: /tmp is ext4 (no reflinks), so a
loopback XFS volume is made, reused, cloned into, and released without a mount or loop device left behind."""

import os
import subprocess
from pathlib import Path

import pytest

from connectors import cow

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a loopback volume needs root")


def _mounts() -> str:
    return Path("/proc/self/mounts").read_text()


def _loops(image: Path) -> str:
    return subprocess.run(["losetup", "-j", str(image)], capture_output=True, text=True).stdout.strip()


def test_a_volume_is_made_where_the_filesystem_cannot_clone_reused_and_released(tmp_path):
    base = tmp_path / "vol"
    assert not cow.supports_reflink(tmp_path)  # ext4
    said = []
    where = cow.cow_dir(base, 10 * 2**20, said.append, mount_at=tmp_path / "mnt")
    try:
        assert where == tmp_path / "mnt" and cow.supports_reflink(where)
        assert "loopback XFS volume" in said[0]
        assert cow.cow_dir(base, 10 * 2**20, said.append) == where and len(said) == 1  # found, not made again
        (where / "a").mkdir()
        (where / "a" / "f").write_bytes(os.urandom(1 << 20))
        cow.reflink_copy(where / "a", where / "b")
        assert (where / "b" / "f").read_bytes() == (where / "a" / "f").read_bytes()
        with pytest.raises(cow.CowUnavailable):  # a reflink cannot leave its filesystem
            cow.reflink_copy(where / "a", tmp_path / "elsewhere")
        assert _loops(base / cow.IMAGE)
    finally:
        cow.release(base)
    assert str(where) not in _mounts() and not _loops(base / cow.IMAGE)
    cow.release(base)  # idempotent
    again = cow.cow_dir(base, 10 * 2**20, said.append)  # the image is mounted again (after a reboot, say)
    try:
        assert (again / "b" / "f").exists() and len(said) == 1
    finally:
        cow.release(base)
    assert not _loops(base / cow.IMAGE)


def test_release_leaves_no_mount_or_loop_of_a_volume_mounted_twice(tmp_path):
    """A second mount of the volume (stacked on its mount point, and of its loop device elsewhere) is released with
    the first: no mount of it and no loop device of its image is left (a leaked one outlives its deleted image)."""
    base = tmp_path / "vol"
    where = cow.cow_dir(base, 10 * 2**20, mount_at=tmp_path / "mnt")
    try:
        subprocess.run(["mount", "--bind", str(where), str(where)], check=True)
        (tmp_path / "elsewhere").mkdir()
        device = _loops(base / cow.IMAGE).split(":", 1)[0]
        subprocess.run(["mount", device, str(tmp_path / "elsewhere")], check=True)
        assert _mounts().count(str(tmp_path)) == 3
    finally:
        cow.release(base)
    assert str(tmp_path) not in _mounts() and not _loops(base / cow.IMAGE)
