"""Which folders crcr masters of this repository run in on this machine (what `crcr worker register` prints in its
`crcr master reconfig --basedir` line), found from the processes as they are: each stand-in here is a real process
whose working directory is a master folder, as a twistd master's is."""

from __future__ import annotations

from crcr.cli.mastercontrol import running_basedirs
from masterfolders import master_folder, process_in  # noqa: F401 (a fixture)


def test_a_running_master_of_this_repository_is_found_by_its_folder(tmp_path, process_in):
    ours = master_folder(tmp_path / "ours")
    process_in(ours, tmp_path / "workers")

    assert running_basedirs(tmp_path / "workers") == [ours]


def test_a_master_reading_other_host_files_is_not_the_one_to_reconfigure(tmp_path, process_in):
    """Another relay of this checkout on the machine (a test's, a second demo) reads other host files."""
    process_in(master_folder(tmp_path / "other-relay"), tmp_path / "other-workers")

    assert running_basedirs(tmp_path / "workers") == []


def test_folders_of_other_masters_or_of_stale_pid_files_are_not_found(tmp_path, process_in):
    other_config = master_folder(tmp_path / "other-checkout", configfile=tmp_path / "elsewhere" / "master.cfg")
    workers = tmp_path / "workers"
    process_in(other_config, workers)
    stale = master_folder(tmp_path / "stale")
    process_in(stale, workers, pid_file=False)
    (stale / "twistd.pid").write_text("999999999\n")  # a dead master's; the process in it is something else
    no_tac = tmp_path / "no-tac"
    no_tac.mkdir()
    process_in(no_tac, workers)
    broken = master_folder(tmp_path / "broken")
    (broken / "buildbot.tac").write_text("configfile = (\n")
    process_in(broken, workers)

    found = running_basedirs(workers)

    assert not {other_config, stale, no_tac, broken} & set(found), found
