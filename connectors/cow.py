"""Copy-on-write directories for warm replicas and their thin clones.

A thin clone is a reflink copy of a stopped replica's data directory: its files share their blocks with the
replica's until one side writes, so a clone costs the same at 1 GB as at 100 GB. Reflinks need a filesystem that
has them (XFS made with ``reflink=1``, btrfs). ``cow_dir(base, size)`` gives a directory on one:

- ``base`` itself when its filesystem already clones files (FICLONE works there);
- else, when this process may (root, ``mkfs.xfs`` installed), a sparse loopback XFS volume of its own,
  ``base/volume.img`` mounted at ``base/volume`` or where ``mount_at`` says (a server that runs as another user
  must reach it: a path whose parents it may enter), said through ``say``; ``base/volume.at`` records where, so a
  second call finds the mount, or mounts the image again after a reboot;
- else ``CowUnavailable``, saying what to mount.

``release(base)`` unmounts what ``cow_dir`` mounted, every mount of it (stacked at its mount point, or of a loop
device of its image elsewhere), detaches its loop devices and leaves the image file to the caller (a replica's
``remove`` deletes the whole directory, after ``release``, on every path: an image deleted while mounted keeps its
loop device and mount until a reboot).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from advisor.core.errors import AdvisorError
from advisor.core.progress import Say, silent

FICLONE = 0x40049409  # ioctl(dest_fd, FICLONE, src_fd): linux/fs.h
IMAGE, MOUNT, MOUNTED_AT = "volume.img", "volume", "volume.at"
MIN_VOLUME_BYTES = 2 * 2**30  # the smallest loopback volume made (sparse: it costs only what is written)


class CowUnavailable(AdvisorError):
    """No copy-on-write filesystem can be had where a replica's data must live."""


def supports_reflink(path: Path) -> bool:
    """Whether files under the directory ``path`` can be cloned (FICLONE of a small temp file succeeds)."""
    try:
        with tempfile.NamedTemporaryFile(dir=path, prefix=".reflink-") as src, \
                tempfile.NamedTemporaryFile(dir=path, prefix=".reflink-") as dst:
            src.write(b"x" * 4096)
            src.flush()
            fcntl.ioctl(dst.fileno(), FICLONE, src.fileno())
            return True
    except OSError:
        return False


def _mounted(path: Path) -> bool:
    target = str(path.resolve())
    return any(at == target for _source, at in _mounts())


def _run(*args: str) -> None:
    try:
        subprocess.run(args, check=True, capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise CowUnavailable(f"{args[0]} is not installed: run `make bootstrap` (Debian's xfsprogs)") from None
    except subprocess.CalledProcessError as e:
        said = (e.stderr or e.stdout or "").strip().splitlines()
        raise CowUnavailable(f"{args[0]} failed: {said[-1] if said else f'exit {e.returncode}'}") from None


def _fix_line(base: Path) -> str:
    return (f"no copy-on-write filesystem at {base} and this process cannot make one (it needs root and mkfs.xfs): "
            f"mount an XFS volume made with `mkfs.xfs -m reflink=1` (or a btrfs volume) at {base}")


def _mount_point(base: Path) -> Path:
    try:
        return Path((base / MOUNTED_AT).read_text(encoding="utf-8").strip())
    except OSError:
        return base / MOUNT


def cow_dir(base: Path, size_bytes: int, say: Say = silent, mount_at: Path | None = None) -> Path:
    """A directory on a copy-on-write filesystem under ``base`` (made if missing), for data of about
    ``size_bytes``: ``base`` itself, or the mount of a loopback XFS volume of its own (see the module's text)."""
    base.mkdir(parents=True, exist_ok=True)
    image = base / IMAGE
    if mount_at is not None and not (base / MOUNTED_AT).exists():
        (base / MOUNTED_AT).write_text(str(mount_at), encoding="utf-8")
    mount = _mount_point(base)
    if _mounted(mount):
        return mount
    if not image.exists() and supports_reflink(base):
        return base
    if os.geteuid() != 0 or shutil.which("mkfs.xfs") is None:
        raise CowUnavailable(_fix_line(base))
    if not image.exists():
        size = max(MIN_VOLUME_BYTES, size_bytes)
        say(f"replica: no copy-on-write filesystem at {base}; making a loopback XFS volume of {size / 2**30:.1f} GiB "
            f"(sparse) at {mount}")
        with open(image, "wb") as f:
            f.truncate(size)
        try:
            _run("mkfs.xfs", "-q", "-m", "reflink=1", str(image))
        except CowUnavailable:
            image.unlink(missing_ok=True)
            raise
    mount.mkdir(parents=True, exist_ok=True)
    _run("mount", "-o", "loop", str(image), str(mount))
    if not supports_reflink(mount):
        release(base)
        raise CowUnavailable(f"the volume mounted at {mount} does not clone files: {_fix_line(base)}")
    return mount


def reflink_copy(src: Path, dst: Path) -> None:
    """The tree ``src`` copied to ``dst`` (which must not exist) with reflinks, owners and modes kept; CowUnavailable
    when a file cannot be cloned (``src`` and ``dst`` must be on one copy-on-write filesystem)."""
    _run("cp", "-a", "--reflink=always", str(src), str(dst))


def release(base: Path) -> None:
    """Unmount every mount of the volume ``cow_dir`` mounted under ``base`` (at its mount point, stacked or not, and
    wherever else a loop device of its image is mounted) and detach the image's loop devices; nothing when none is
    mounted. Safe to call again, and on every failure path of a build or a removal."""
    mount = _mount_point(base)
    image = base / IMAGE
    loops = _loops_of(image)
    for _ in range(8):  # stacked mounts unmount one at a time
        targets = [at for source, at in _mounts() if at == str(mount.resolve()) or source in loops]
        if not targets:
            break
        for at in targets:
            _unmount(Path(at))
    else:
        left = [at for source, at in _mounts() if at == str(mount.resolve()) or source in loops]
        if left:
            raise CowUnavailable(f"the volume under {base} is still mounted at {', '.join(left)} after 8 tries to "
                                 f"unmount it; run: umount -l {' '.join(left)}")
    for device in _loops_of(image):  # a loop device the kernel did not free with the unmount (mounted by hand)
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            subprocess.run(["losetup", "-d", device], capture_output=True, timeout=30)
    if mount != base / MOUNT and not _mounted(mount):
        with contextlib.suppress(OSError):
            mount.rmdir()


def _unmount(at: Path) -> None:
    try:
        _run("umount", str(at))
    except CowUnavailable:  # busy: a server still has files open there; a lazy unmount frees it once they close
        with contextlib.suppress(CowUnavailable):
            _run("umount", "-l", str(at))


def _mounts() -> list[tuple[str, str]]:
    """(source, mount point) of every mount this process sees."""
    with open("/proc/self/mounts", encoding="utf-8") as f:
        return [(parts[0], parts[1]) for parts in (line.split() for line in f) if len(parts) > 1]


def _loops_of(image: Path) -> set[str]:
    """The loop devices (``/dev/loopN``) whose backing file is ``image``, from the kernel's own record (found also
    once the image is deleted)."""
    target = str(image.resolve())
    found = set()
    for backing in Path("/sys/block").glob("loop*/loop/backing_file"):
        with contextlib.suppress(OSError):
            name = backing.read_text(encoding="utf-8").strip().removesuffix(" (deleted)")
            if name == target:
                found.add(f"/dev/{backing.parent.parent.name}")
    return found
