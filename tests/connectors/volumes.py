"""What a test's copy-on-write volume left behind: mounts and loop devices of images under a directory (a leaked
mount keeps its loop device, and so its image, alive after the directory is deleted)."""

import subprocess
from pathlib import Path


def left_behind(under: Path, *mount_points: Path) -> list[str]:
    """The loop devices (``losetup -a`` lines) whose image lies under ``under`` and the mounts at ``mount_points``
    or under ``under``: empty when the volumes made there were all released."""
    loops = [line for line in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout.splitlines()
             if str(under) in line]
    points = {str(p) for p in mount_points}
    mounts = [line for line in Path("/proc/self/mounts").read_text().splitlines()
              if len(line.split()) > 1 and (line.split()[1] in points or str(under) in line.split()[1])]
    return loops + mounts
