"""Following twistd.log as crcr master reconfig does: only new lines, whole lines, across a rotation."""

from __future__ import annotations

from crcr.cli.twistdlog import LogFollower


def append(path, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


def test_new_whole_lines_only_and_on_across_a_rotation(tmp_path):
    log = tmp_path / "twistd.log"
    log.write_text("before the follower\n")
    with LogFollower(log) as follower:
        assert follower.new_lines() == []
        append(log, "first\nsecond, half")
        assert follower.new_lines() == ["first"]
        append(log, " and its end\n")
        assert follower.new_lines() == ["second, half and its end"]
        # twistd's rotation: the full log is renamed and a new one started.
        append(log, "last of the old file\n")
        log.rename(tmp_path / "twistd.log.1")
        assert follower.new_lines() == ["last of the old file"]
        log.write_text("first of the new file\n")
        assert follower.new_lines() == ["first of the new file"]
        assert follower.new_lines() == []
