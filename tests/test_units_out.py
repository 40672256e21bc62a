"""The mail telling a host's admin that a unit of theirs was taken out: Buildbot's reporters' generator, on the
leader alone; and the unit's settings for it (docs/hardware-failures.md)."""

from __future__ import annotations

from types import SimpleNamespace

from crcr.buildmaster.services.units_out import UNIT_PAUSED, UnitPausedGenerator, pause_reason, unit_mailers
from crcr.config.settings import load_settings
from crcr.names import LEADERSHIP_SERVICE

PAUSED = {"name": "lab-spyre-2", "workerid": 7, "host": "lab", "admin": "Spyre Lab <lab@example.com>",
          "backend": "spyre", "card": "0000:3b:00.0 SN1234", "failure": "RAS::VFIO::DeviceOpenFail on lab-spyre-2",
          "reason": pause_reason(3, "RAS::VFIO::DeviceOpenFail on lab-spyre-2", "lab-spyre-2"),
          "log_url": "http://relay/#/builders/3/builds/12/steps/4/logs/infrastructure_failure"}


def master(leading: bool):
    return SimpleNamespace(service_manager=SimpleNamespace(
        namedServices={LEADERSHIP_SERVICE: SimpleNamespace(leading=leading)}))


def test_the_leader_mails_the_hosts_admin_naming_the_unit_its_card_what_it_hit_the_backend_and_the_log():
    report = UnitPausedGenerator().generate(master(True), None, UNIT_PAUSED, PAUSED)

    assert (report["users"], report["worker"]) == (["lab@example.com"], "lab-spyre-2")
    assert report["subject"] == "crcr: unit lab-spyre-2 taken out (RAS::VFIO::DeviceOpenFail on lab-spyre-2)"
    body = report["body"].decode()
    assert body.startswith("The relay took unit lab-spyre-2 of host lab out: 3 infrastructure failures in a row, "
                           "the last RAS::VFIO::DeviceOpenFail on lab-spyre-2; after a look at its card: "
                           "crcr worker resume lab-spyre-2.")
    assert ("Card: 0000:3b:00.0 SN1234\nBackend: spyre\nThe log of the last build it failed: "
            "http://relay/#/builders/3/builds/12/steps/4/logs/infrastructure_failure") in body
    unidentified = UnitPausedGenerator().generate(master(True), None, UNIT_PAUSED, {**PAUSED, "card": None})
    assert "Card: not identified (no identify command for its device)\n" in unidentified["body"].decode()


def test_no_mail_from_another_master_nor_to_an_admin_without_an_address():
    assert UnitPausedGenerator().generate(master(False), None, UNIT_PAUSED, PAUSED) is None
    assert UnitPausedGenerator().generate(master(True), None, UNIT_PAUSED, {**PAUSED, "admin": "Spyre Lab"}) is None


def test_the_mail_goes_through_the_smtp_relay_the_settings_name_and_none_without_one():
    assert unit_mailers(load_settings(environ={})) == []
    (mailer,) = unit_mailers(load_settings(environ={"CRCR_SMTP_RELAY": "smtp.lab.example.com:2525",
                                                    "CRCR_MAIL_FROM": "relay@lab.example.com"}))
    given = mailer._config_kwargs  # what Buildbot configures the service with at its start
    assert (given["relayhost"], given["smtpPort"], given["fromaddr"]) == ("smtp.lab.example.com", 2525,
                                                                          "relay@lab.example.com")
