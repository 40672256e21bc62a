"""End to end: a backend whose suites fan out. One upstream commit gives one parent build on the relay's own worker,
which has the backend's build stage made once by a child build, whose artifacts the relay keeps, then triggers a
child build per suite (per shard of a suite in shards) on the device's units, several at once, each fetching the
artifacts through its host's cache; the parent draws each suite's verdict from its children's runs and posts the one
commit status."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from buildbot.process.results import CANCELLED, EXCEPTION, FAILURE, RETRY, SUCCESS
from selenium.webdriver.common.by import By

from conftest import (
    BUDGET_BRANCH,
    RELEASE_BRANCH,
    UNITS_BRANCH,
    backend,
    make_upstream,
    prepare_relay,
    running,
    suite,
    write_secret,
)
from crcr.buildmaster.steps.taking_out import pause_reason
from crcr.config.secretfiles import GITHUB_WEBHOOK_SECRET
from crcr.config.users import add_user, users_file
from crcr.github.status_text import FANNED_OUT, QUEUED
from crcr.names import (
    ARTIFACTS_PATH,
    BUILD_STAGE_STEP,
    CHILD_TAG,
    FAN_OUT_STEP,
    FETCH_STEP,
    RELAY_WORKER,
    SHARED_BUILDS_STEP,
    UPLOAD_STEP,
    build_child_name,
    child_builder_name,
    shared_builder_name,
    status_context,
    suite_step_name,
)
from harness import holding, kill_9, open_gate, wait_until
from pytorchrelay import PyTorchRelayStandIn
from smtp import smtp_server
from webhooks import WEBHOOK_SECRET, deliver_dispatch, relayed_push
from webui import (
    build_link,
    click_when_ready,
    clipped_header_names,
    open_page,
    page_errors,
    page_text,
    wait_for_element,
    wait_for_texts,
)

pytestmark = pytest.mark.e2e

WIDE_REPO = "acme/wide-gamma"  # the wide backend's repository, which reports to PyTorch's relay

UNITS = 3
WIDE, HELD, BISECT = "wide-gamma", "held-gamma", "bisect-gamma"
FLAG_TEST = ("from pathlib import Path\n\n\n"
             "def test_no_flag():\n    assert not (Path(__file__).parents[1] / 'FLAG').exists()\n")
ALICE, BOB = ("alice", "alice-pw"), ("bob", "bob-pw")
WHEEL = "torch-2.0-cp311-linux_x86_64.whl"
SHARED, TWIN, CPU_WHEEL = "torch-cpu", "twin-delta", "torch-cpu.whl"
# On RELEASE_BRANCH: a card failing once (one suite: a serial build), and a card failing every time (fanned out).
ONCE, DEAD = "card-once", "card-dead"
RAS = "RAS::VFIO::DeviceOpenFail"
# On RELEASE_BRANCH too: four suites on a host of two epsilon cards, the first of which fails whenever it is bad.
SICK, SICK_HOST, BUS_FENCE = "sick-epsilon", "host-eps", "RAS::PCI::BusFence"


def barrier(name: str, gates: Path) -> dict:
    """A suite that says it started, then waits (at most a minute) until 3 suites have started: it passes only if
    3 suites of the commit run at once, one per unit. Its JUnit XML is pytest's over test_pass.py."""
    wait = (f"touch {gates}/{name}; for i in $(seq 300); do [ $(ls {gates} | wc -l) -ge {UNITS} ] && break; "
            f"sleep 0.2; done; [ $(ls {gates} | wc -l) -ge {UNITS} ] || {{ echo 'ran alone'; exit 3; }}")
    return {"name": name, "command": f"{wait} && python -m pytest test/test_pass.py -q "
                                     f"--junitxml=$CRCR_RESULTS_DIR/{name}.xml", "timeout": 120}


def card_once(name: str, root: Path) -> dict:
    """A suite whose first run anywhere prints the device's RAS line (mkdir: once), and whose next passes."""
    return {"name": name, "command": f"if mkdir {root}/ras-{name} 2>/dev/null; then echo '{RAS} at 0000:3b:00.0'; "
                                     f"exit 1; fi; python -m pytest test/test_pass.py -q "
                                     f"--junitxml=$CRCR_RESULTS_DIR/{name}.xml"}


def http_status(url: str, headers: dict | None = None) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code


def on_a_bad_card(name: str, root: Path) -> dict:
    """A suite that hits the card while `bad-card-<its unit's index>` exists, waits while `sick-hold` does, then
    passes."""
    return {"name": name, "command": f"if [ -e {root}/bad-card-$CRCR_DEVICE_INDEX ]; then echo '{BUS_FENCE} at "
                                     f"0000:5e:00.0'; exit 1; fi; while [ -e {root}/sick-hold ]; do sleep 0.1; done; "
                                     f"python -m pytest test/test_pass.py -q --junitxml=$CRCR_RESULTS_DIR/{name}.xml"}


class Wide:
    def __init__(self, relay, upstream, root: Path, units: dict, mailbox):
        self.relay, self.upstream, self.root, self.units, self.mailbox = relay, upstream, root, units, mailbox
        self.gates = root  # where the held suites' gates are opened

    def held_children(self, sha: str, backend: str = HELD, suites: tuple[str, ...] = ("first", "second")):
        """The parent of `backend` at `sha` and its children held in `suites`, once each of those is."""
        def held():
            parents = self.relay.builds_of(backend, sha)
            children = self.relay.children(parents[0]) if parents else []
            running = [child for child in children if not child["complete"] and any(
                step["name"] in [suite_step_name(suite) for suite in suites] and step["started_at"]
                and not step["complete"] for step in self.relay.steps(child))]
            return len(running) == len(suites) and (parents[0], running)
        return wait_until(held, 90, f"the children of {backend} at {sha[:10]} held in {', '.join(suites)}")

    def final_statuses(self, github, sha: str) -> list[dict]:
        """Every status of `sha` that is not pending (any backend's), once there is one."""
        return wait_until(lambda: [s for s in github.statuses(sha) if s["state"] != "pending"], 30,
                          f"a final status on {sha[:10]}")

    def builder(self, build: dict) -> dict:
        return self.relay.get(f"builders/{build['builderid']}")["builders"][0]


@pytest.fixture(scope="module")
def pytorch_relay():
    """PyTorch's relay's callback endpoint, allowlisting the wide backend's repository at L2."""
    stand_in = PyTorchRelayStandIn(levels={WIDE_REPO: "L2"}).start()
    yield stand_in
    stand_in.stop()


@pytest.fixture(scope="module")
def wide(tmp_path_factory, github, pytorch_relay):
    with smtp_server() as mail:  # the labs' mail server
        yield from relay_of_wide_backends(tmp_path_factory.mktemp("fan-out"), github, mail, pytorch_relay)


def relay_of_wide_backends(root: Path, github, mail: tuple, pytorch_relay: PyTorchRelayStandIn):
    upstream = make_upstream(root / "upstream")
    gates = root / "gates"
    gates.mkdir()
    backends = {
        WIDE: {**backend("L2", "gamma", [
            barrier("one", gates), barrier("two", gates), barrier("three", gates),
            # PyTorch's test-level sharding: the failing test is in one of the two shards.
            {"name": "broken", "pytest": {"files": ["test/test_pass.py", "test/test_fail.py"]}, "shards": 2},
            # Multi-card: two units of one host at once, both indices seen.
            {"name": "pair", "units": 2, "command": f"echo $CRCR_DEVICE_INDEX > {root}/pair.txt && python -m pytest "
                                                    "test/test_pass.py -q --junitxml=$CRCR_RESULTS_DIR/pair.xml"},
        ], setup=["touch $CRCR_RESULTS_DIR/setup-done", f"cmp $CRCR_ARTIFACTS_DIR/{WHEEL} {root}/made.whl",
                  f"cmp $CRCR_ARTIFACTS_DIR/{CPU_WHEEL} {root}/{CPU_WHEEL}"],
            # Its own build (after the shared one, whose wheel it sees) makes a wheel: random bytes, kept aside for
            # the units to compare with.
            build={"steps": [f"cmp $CRCR_ARTIFACTS_DIR/{CPU_WHEEL} {root}/{CPU_WHEEL}",
                             f"mkdir -p dist && head -c 3000000 /dev/urandom > dist/{WHEEL}",
                             f"cp dist/{WHEEL} {root}/made.whl"], "artifacts": ["dist/*.whl"]},
            uses=[SHARED]), "maintainers": ["bob"], "repo": WIDE_REPO, "report_to_pytorch": True},
        # On another device, using the same shared build.
        TWIN: backend("L2", "delta", [{"name": "uses", "command": f"cmp $CRCR_ARTIFACTS_DIR/{CPU_WHEEL} "
                                                                 f"{root}/{CPU_WHEEL}"}], uses=[SHARED]),
        BISECT: {**backend("L2", "gamma", [suite("held", "test/test_held_b.py"), suite("flag", "test/test_flag.py"),
                                           suite("other", "test/test_pass.py")],
                           branches=[BUDGET_BRANCH], env={"GATES": str(root), "BACKEND": BISECT})},
        HELD: {**backend("L2", "gamma", [suite("first", "test/test_held.py"), suite("second", "test/test_held.py")],
                         branches=[UNITS_BRANCH], env={"GATES": str(root), "BACKEND": HELD}),
               "maintainers": ["alice"]},
        ONCE: backend("L2", "gamma", [card_once("ops", root)], branches=[RELEASE_BRANCH]),
        DEAD: backend("L2", "gamma", [card_once("lucky", root), {"name": "dead", "command": f"echo '{RAS}'; exit 1"}],
                      branches=[RELEASE_BRANCH], infra_failures={"tries": 2}),
        SICK: backend("L2", "epsilon", [on_a_bad_card(name, root) for name in ("one", "two", "three", "four")],
                      branches=[RELEASE_BRANCH]),
    }
    hosts = {"host-gamma": {"devices": {"gamma": UNITS, "cpu": 1, "delta": 1}, "admin": "Gamma Lab <gamma@example.com>"},
             SICK_HOST: {"devices": {"epsilon": 2}, "admin": "Eps Lab <eps@example.com>"}}
    relay, workers = prepare_relay(root / "relay", upstream, github, backends, hosts=hosts, CRCR_SMTP_RELAY=mail[1],
                                   CRCR_PYTORCH_RELAY_URL=pytorch_relay.url,
                                   CRCR_PYTORCH_RELAY_TOKEN_COMMAND=pytorch_relay.token_command(root))
    write_secret(root / "relay" / "secrets", GITHUB_WEBHOOK_SECRET, WEBHOOK_SECRET + "\n")
    # What tells a run hit a gamma or an epsilon card, for every backend on one, and which epsilon card it is.
    devices = root / "relay" / "workers" / "devices"
    devices.mkdir()
    (devices / "gamma.yaml").write_text("infra_failures:\n  patterns: ['RAS::\\w+::\\w+']\n")
    (devices / "epsilon.yaml").write_text("infra_failures:\n  patterns: ['RAS::\\w+::\\w+']\n"
                                          "identify: echo card-$CRCR_DEVICE_INDEX\n")
    # The shared build: a CPU wheel for every backend that uses it, made once per commit.
    (root / "relay" / "backends" / "builds").mkdir()
    (root / "relay" / "backends" / "builds" / f"{SHARED}.yaml").write_text(yaml.safe_dump({
        "steps": [f"mkdir -p dist && head -c 1000000 /dev/urandom > dist/{CPU_WHEEL}",
                  f"cp dist/{CPU_WHEEL} {root}/{CPU_WHEEL}"], "artifacts": [f"dist/{CPU_WHEEL}"]}))
    for name, password in (ALICE, BOB):
        add_user(users_file(root / "relay" / "secrets"), name, password)
    with running(relay, workers):
        yield Wide(relay, upstream, root, {worker.name: worker for worker in workers}, mail[0])


def test_one_commit_fans_its_suites_out_over_the_units_and_gets_one_verdict_from_its_parent(wide, github,
                                                                                            pytorch_relay):
    relay = wide.relay
    sha = wide.upstream.commit("An upstream change for a wide backend")
    # PyTorch's relay dispatched the push to the backend's repository, which hands it to crcr.
    pytorch_relay.dispatched("push-wide", WIDE_REPO)
    assert deliver_dispatch(relay, relayed_push(wide.upstream, sha), "push-wide", WIDE_REPO) == 200
    parent = relay.wait_for_finished_build(WIDE, sha)

    # The parent ran on the relay's own worker; a suite step per suite, each its verdict drawn from its child.
    assert relay.worker_name(parent) == RELAY_WORKER
    steps = {step["name"]: step for step in relay.steps(parent)}
    assert {name: steps[name]["results"] for name in map(suite_step_name, ["one", "two", "three", "broken"])} == {
        suite_step_name("one"): SUCCESS, suite_step_name("two"): SUCCESS, suite_step_name("three"): SUCCESS,
        suite_step_name("broken"): FAILURE,
    }, steps
    assert parent["results"] == FAILURE
    broken = steps[suite_step_name("broken")]
    assert broken["state_string"] == "broken: 2 passed, 1 failed (1 new)", broken
    linked = [url["name"] for url in broken["urls"]]
    assert "new failure: test/test_fail.py::test_upstream_broke_this" in linked, linked
    assert [name.split(" run on ")[0] for name in linked if " run on " in name] == ["shard 1/2", "shard 2/2"]
    fan_out = steps[FAN_OUT_STEP]
    assert fan_out["results"] == SUCCESS and fan_out["state_string"] == "6 child builds: 5 success, 1 failure", fan_out

    # The shared build, made once for the commit and both backends that use it, on the cpu unit; then the build
    # stage: made once, by a child build, its wheel kept by the relay.
    twin = relay.wait_for_finished_build(TWIN, sha)
    assert twin["results"] == SUCCESS
    [shared] = relay.get(f"builders/{relay.builder_id(shared_builder_name(SHARED))}/builds")["builds"]
    assert relay.worker_name(shared) == "host-gamma-cpu-0" and shared["results"] == SUCCESS
    made_here = {name: [s["state_string"] for s in relay.steps(build) if s["name"] == SHARED_BUILDS_STEP][0]
                 for name, build in ((WIDE, parent), (TWIN, twin))}
    assert sorted(made_here.values()) == ["torch-cpu built: 1.0 MB", "torch-cpu shared: 1.0 MB"], made_here
    assert steps[BUILD_STAGE_STEP]["results"] == SUCCESS
    assert steps[BUILD_STAGE_STEP]["state_string"] == "built: 1 artifact, 3.0 MB", steps[BUILD_STAGE_STEP]
    built, *children = wide.relay.children(parent)
    assert wide.builder(built)["name"] == build_child_name(WIDE) and built["results"] == SUCCESS
    assert relay.worker_name(built).startswith("host-gamma-gamma-")
    assert relay.step_log(built, UPLOAD_STEP).count(WHEEL) >= 1

    # Each suite's child: its own virtual builder named after its suite, tagged as a child, on a unit of gamma, its
    # JUnit XML linked; three of them ran at once (the barrier suites pass only so), one on each unit.
    assert sorted(wide.builder(child)["name"] for child in children) == sorted(
        [child_builder_name(WIDE, name) for name in ("one", "two", "three", "pair")]
        + [child_builder_name(WIDE, "broken", shard) for shard in ("1/2", "2/2")])
    for child in children:
        assert {CHILD_TAG, WIDE} <= set(wide.builder(child)["tags"])
        assert any(url["name"] == "junit.xml" for step in relay.steps(child) for url in step["urls"])
    # The shard with the failing test reads as its run did: red, naming the test; the others green.
    [red] = [child for child in children if child["results"] != SUCCESS]
    assert red["results"] == FAILURE and wide.builder(red)["name"].startswith(child_builder_name(WIDE, "broken"))
    assert "failing: test/test_fail.py::test_upstream_broke_this" in red["state_string"], red
    assert {relay.worker_name(child) for child in children} == {f"host-gamma-gamma-{n}" for n in range(UNITS)}
    # The suite on two units got two units of the host, its own first, and saw both indices.
    [pair] = [child for child in children if wide.builder(child)["name"] == child_builder_name(WIDE, "pair")]
    indices = (wide.root / "pair.txt").read_text().strip().split(",")
    assert len(set(indices)) == 2 and set(indices) <= {"0", "1", "2"}, indices
    assert relay.worker_name(pair) == f"host-gamma-gamma-{indices[0]}"

    # Each got the wheel byte for byte (its setup compares them); the host fetched it once, into its cache, which
    # its other units' children found it in.
    fetched = [relay.step_log(child, FETCH_STEP) for child in children]
    assert sum(f"{WHEEL}: downloaded, 3000000 bytes" in log for log in fetched) == 1, fetched
    assert sum(f"{WHEEL}: from the host cache" in log for log in fetched) == len(children) - 1, fetched
    # The shared wheel too, once for the host, by whichever child of either backend needed it first.
    fetched += [relay.step_log(child, FETCH_STEP) for child in [built, *relay.children(twin)]]
    assert sum(f"{CPU_WHEEL}: downloaded, 1000000 bytes" in log for log in fetched) == 1, fetched
    cache = wide.root / "relay" / "worker-hosts" / "host-gamma" / "cache" / "artifacts"
    cached = {path.read_bytes() for path in cache.glob("[0-9a-f]*[0-9a-f]")}
    assert cached == {(wide.root / name).read_bytes() for name in ("made.whl", CPU_WHEEL)}
    # Nor does its log show the token: no header, and no environment dumped before the output (logEnviron off).
    assert all("Bearer" not in log and "CRCR_ARTIFACTS_TOKEN" not in log for log in fetched), fetched[0]
    # Nor does any unit's twistd.log, which the host's builds can read: the token came on the fetcher's stdin, of
    # which the worker logs the length. A token is '<child's id>.<64 hex digits>'.
    unit_logs = [log.read_text(errors="replace") for log in cache.parent.parent.glob("*/twistd.log")]
    assert any(re.search(r"writing \d+ bytes to stdin", log) for log in unit_logs), unit_logs
    assert not any(re.search(r"\b\d+\.[0-9a-f]{64}\b", log) for log in unit_logs)

    # Not a public download: refused without a token, and with the token of a child that has ended.
    url = f"{relay.web_url}{ARTIFACTS_PATH}/{built['buildid']}/{WHEEL}"
    assert http_status(url) == 401
    assert http_status(url, {"Authorization": f"Bearer {children[0]['buildid']}.{'0' * 64}"}) == 403

    # One final status for the commit and the backend, from the parent, counting every child's tests.
    def final():
        posted = github.statuses(sha, status_context(WIDE))
        return posted and posted[-1]["state"] != "pending" and posted
    posted = wait_until(final, 30, "the final status")
    assert [s["state"] for s in posted if s["state"] != "pending"] == ["failure"], posted
    # Once the parent ran, the commit said so, and never queued again (its failing test was told early after it).
    pending = [s["description"] for s in posted if s["state"] == "pending"]
    assert FANNED_OUT in pending and QUEUED not in pending[pending.index(FANNED_OUT):], pending
    assert posted[-1]["description"] == "10 passed, 1 failed (1 new)", posted[-1]
    assert posted[-1]["target_url"].endswith(f"/builds/{parent['number']}")
    assert [s for s in github.statuses(sha) if s["context"] != status_context(TWIN)] == posted, "children post nothing"
    twin_final = wait_until(lambda: [s["state"] for s in github.statuses(sha, status_context(TWIN))
                                     if s["state"] != "pending"], 30, "the other backend's final status")
    assert twin_final == ["success"]

    # PyTorch's relay heard of each suite, and each shard, as a job of the parent's run: in_progress when its child
    # started, then completed once with its own counts; the failing shard with its failed test and a verdict.
    jobs = [child_builder_name(WIDE, name) for name in ("one", "two", "three", "pair")] + [
        child_builder_name(WIDE, "broken", shard) for shard in ("1/2", "2/2")]
    told = wait_until(lambda: (lambda c: len(c) == 2 * len(jobs) and c)(
        pytorch_relay.callbacks(WIDE_REPO, "push-wide")), 60, "both callbacks of each job")
    by_job = {name: [c["workflow"] for c in told if c["workflow"]["job_name"] == name] for name in jobs}
    assert {name: [w["status"] for w in said] for name, said in by_job.items()} == {
        name: ["in_progress", "completed"] for name in jobs}, told
    ended = {name: said[1] for name, said in by_job.items()}
    assert {w["run_id"] for w in ended.values()} == {str(parent["buildid"])}
    assert len({w["check_run_id"] for w in ended.values()}) == len(jobs)
    assert sum(w["test_results"]["passed"] + w["test_results"]["failed"] for w in ended.values()) == 11
    [failing] = [w for w in ended.values() if w["conclusion"] != "success"]
    assert (failing["conclusion"], failing["test_results"]["failed"]) == ("failure", 1), failing
    assert [t["name"] for t in failing["failed_tests"]] == ["test_upstream_broke_this"]
    assert failing["triage_verdict"]["category"] == "unknown", "the backend's first build: nothing to compare with"
    assert (pytorch_relay.dropped_verdicts, pytorch_relay.truncated) == ([], [])


def test_the_views_show_a_row_per_backend_and_the_parent_page_leads_to_each_suites_output(wide, browser, tmp_path):
    relay = wide.relay
    [parent] = [build for build in relay.builds(WIDE) if build["complete"]][-1:]
    page_errors(browser)  # what the pages of earlier tests logged
    open_page(browser, relay.web_url + "#/")
    click_when_ready(browser, "//div[@data-crcr='home']//a[text()='waterfall']", "the home page's waterfall link")
    wait_for_texts(browser, [WIDE], "the waterfall")
    browser.save_screenshot(str(tmp_path / "waterfall.png"))
    assert child_builder_name(WIDE, "one") not in page_text(browser), "the children's rows are left out"
    # Its tag filter offers the backends' tags, the children's shown as left out; Buildbot's own '_virtual_' is no
    # tag of theirs.
    tags = {tag.text: tag.get_attribute("class").split() for tag in
            browser.find_elements(By.CLASS_NAME, "bb-tag-filter-manager-tag")}
    assert "_virtual_" not in tags and {WIDE, CHILD_TAG} <= set(tags), tags
    assert "crcr-tag-excluded" in tags[CHILD_TAG] and "bb-tag-filter-manager-tag-filtered" not in tags[CHILD_TAG]
    # Every row, each builder's name whole above its column, the rightmost too ("wide-gamma / thr" was cut).
    open_page(browser, relay.web_url + "#/waterfall")
    wait_for_texts(browser, [child_builder_name(WIDE, "one")], "the waterfall of every builder")
    header = wait_for_element(browser, "//div[contains(@class, 'header-content')]", "the waterfall's header")
    assert header.value_of_css_property("width") == browser.execute_script(
        "return getComputedStyle(arguments[0].parentElement).width", header), "the chart fits the window"
    assert clipped_header_names(browser) == []
    browser.save_screenshot(str(tmp_path / "waterfall-all.png"))

    # The console, from the home page's link, has a column per backend too (Buildbot's reads no filter).
    open_page(browser, relay.web_url + "#/")
    click_when_ready(browser, "//div[@data-crcr='home']//a[text()='console']", "the home page's console link")
    columns = "//th//span[contains(@class, 'bb-console-table-builder')]/a"
    wait_for_element(browser, f"{columns}[text()='{WIDE}']", f"{WIDE}'s column in the console")
    assert not [a.text for a in browser.find_elements(By.XPATH, columns) if a.text.startswith(f"{WIDE} /")]
    browser.save_screenshot(str(tmp_path / "console.png"))

    open_page(browser, relay.web_url + build_link(parent))
    step = "//li[contains(@class, 'bb-build-summary-step-line')][contains(., '{}')]"
    wait_for_texts(browser, ["6 child builds"], "the parent's fan-out step")
    output = wait_for_element(browser, step.format("suite one") + "//a[starts-with(normalize-space(.), 'run on ')]",
                              "the link to suite one's output in its child, without a click")
    assert output.is_displayed() and output.get_attribute("href").endswith("/logs/stdio")
    browser.save_screenshot(str(tmp_path / "parent.png"))
    output.click()
    wait_for_texts(browser, ["passed"], "suite one's output in its child build")
    # No page asked for a file the relay does not serve (Buildbot's grid view has no stylesheet; its build pages
    # look for the icons at //icon.svg), and no script failed.
    assert page_errors(browser) == []


def test_commits_queued_behind_a_parent_are_covered_by_one_and_a_new_failure_is_bisected_running_its_suite_alone(
        wide, github):
    relay, upstream = wide.relay, wide.upstream
    first = upstream.commit("A held build", {"test/test_held_b.py": holding("bisect-gate"),
                                             "test/test_flag.py": FLAG_TEST}, branch=BUDGET_BRANCH)
    wide.held_children(first, BISECT, ("held",))
    noise = upstream.commit("Noise", {"NOTES.txt": "1\n"}, branch=BUDGET_BRANCH, push=False)
    culprit = upstream.commit("Flags it", {"FLAG": "on\n"}, branch=BUDGET_BRANCH, push=False)
    newest = upstream.commit("More noise", {"NOTES.txt": "2\n"}, branch=BUDGET_BRANCH, push=False)
    upstream.push(BUDGET_BRANCH)
    requests = f"buildrequests?builderid={relay.builder_id(BISECT)}"
    wait_until(lambda: len(relay.get(requests)["buildrequests"]) == 4, 60, "the three commits' parents asked for")
    open_gate(wide.gates, BISECT, "bisect-gate")

    parent = relay.wait_for_finished_build(BISECT, newest)
    steps = {step["name"]: step for step in relay.steps(parent)}
    assert steps["commits covered"]["state_string"] == "covers 2 earlier commits"
    assert relay.builds_of(BISECT, noise) == relay.builds_of(BISECT, culprit) == [], "covered, not built alone"

    def verdicts():
        last = {sha: github.statuses(sha, status_context(BISECT))[-1:] for sha in (noise, culprit, newest)}
        return all(posted and posted[0]["state"] != "pending" for posted in last.values()) and \
            {sha: (posted[0]["state"], posted[0]["description"]) for sha, posted in last.items()}
    found = wait_until(verdicts, 120, "the bisection's verdicts")
    assert found[culprit] == ("failure", "First bad commit: broke test_no_flag")
    assert found[noise] == ("success", f"Bisected: before {culprit[:10]}")
    assert found[newest] == ("failure", "3 passed, 1 failed (1 new)")

    bisection_builds = [build for build in relay.get(
        f"builders/{relay.builder_id(BISECT)}/builds?property=crcr_bisection")["builds"]
        if "crcr_bisection" in build["properties"]]
    assert bisection_builds, "the bisection built a commit"
    for build in bisection_builds:
        children = wide.relay.children(build)
        assert [wide.builder(child)["name"] for child in children] == [child_builder_name(BISECT, "flag")], \
            "a bisection step fans out only the suite with the new failure"
        suites = {step["name"]: step["state_string"] for step in relay.steps(build)}
        assert suites[suite_step_name("flag")].startswith("flag: 1 asked test: 1 "), suites


def test_a_child_whose_unit_dies_runs_again_on_another_and_stopping_the_parent_cancels_every_child(wide, github):
    """kill -9 of a unit in a child: that child alone runs again on a free unit and, through a reconfiguration of the
    master, the verdict is one and right. Then the maintainer of another backend may not stop a child, and the backend's maintainer stopping the parent
    cancels every child."""
    relay = wide.relay
    sha = wide.upstream.commit("Tests that hold", {"test/test_held.py": holding("first-gate")}, branch=UNITS_BRANCH)
    parent, (first, second) = wide.held_children(sha)
    # While its parent runs, the commit reads as running, fanned out: on GitHub, in its health and `crcr status`.
    wait_until(lambda: [s["description"] for s in github.statuses(sha, status_context(HELD))][-1:] == [FANNED_OUT],
               30, "the running parent's status")
    assert relay.plugin(f"api/health/{HELD}/commits/{sha}")["description"] == FANNED_OUT
    lost = relay.worker_name(first)
    kill_9(wide.units[lost].basedir)
    retried = wait_until(lambda: [child for child in wide.relay.children(parent) if child["buildid"] != first["buildid"]
                                  and child["buildrequestid"] == first["buildrequestid"] and not child["complete"]],
                         90, "the lost child's request built again")[0]
    assert relay.worker_name(retried) not in {lost, relay.worker_name(second)}
    # The unit lost mid-build is the hardware's doing: recorded against it.
    wait_until(lambda: [unit for unit in relay.plugin("api/units")["units"] if unit["name"] == lost
                        and unit["last_failure"] and unit["last_failure"]["what"] == "unit lost mid-build"],
               30, f"{lost} recorded lost mid-build")
    assert relay.get(f"builds/{second['buildid']}")["builds"][0]["complete"] is False, "the other child ran on"

    for child in (retried, second):
        reply = relay.rpc(f"builds/{child['buildid']}", "stop", as_user=BOB, reason="attempt by bob")
        assert reply.get("status") == 403, reply
    # A reconfiguration while the parent waits (a vendor's new backend file, say): the parent and its children go on.
    relay.crcr("master", "reconfig", "--basedir", relay.basedir)
    open_gate(wide.gates, HELD, "first-gate")
    parent = relay.wait_for_finished_build(HELD, sha)
    assert parent["results"] == SUCCESS, relay.steps(parent)
    assert [build["results"] for build in wide.relay.children(parent)] == [SUCCESS, SUCCESS]
    steps = {step["name"]: step for step in relay.steps(parent)}
    assert any(url["name"] == f"run on {relay.worker_name(retried)}" for url in steps[suite_step_name("first")]["urls"])
    final = wide.final_statuses(github, sha)
    assert [(s["state"], s["description"]) for s in final] == [("success", "2 passed")], final

    sha = wide.upstream.commit("Tests held again", {"test/test_held.py": holding("second-gate")}, branch=UNITS_BRANCH)
    parent, children = wide.held_children(sha)
    reply = relay.rpc(f"builds/{parent['buildid']}", "stop", as_user=ALICE, reason="done by alice")
    assert "result" in reply, reply
    assert relay.wait_for_finished_build(HELD, sha)["results"] == CANCELLED
    ended = wait_until(lambda: all(child["complete"] for child in wide.relay.children(parent)) and wide.relay.children(parent),
                       30, "the children to end")
    assert [child["results"] for child in ended] == [CANCELLED, CANCELLED], ended
    log = (relay.basedir / "twistd.log").read_text(errors="replace")
    assert "attempt by bob" not in log
    final = wide.final_statuses(github, sha)
    assert [(s["state"], s["description"]) for s in final] == [("error", "Cancelled by alice")], final


def test_a_run_that_hit_the_card_is_built_again_on_another_unit_and_a_card_failing_every_try_is_an_error(
        wide, github, browser):
    relay = wide.relay
    sha = wide.upstream.commit("A change the cards choke on", branch=RELEASE_BRANCH)

    # Serial: the build that hit the card ends RETRY; Buildbot builds it again, on another unit, and it passes.
    def verdict(name: str) -> list[tuple[str, str]]:
        return wait_until(lambda: [(s["state"], s["description"]) for s in github.statuses(sha, status_context(name))
                                   if s["state"] != "pending"], 90, f"{name}'s verdict")
    final = verdict(ONCE)
    hit, passed = relay.builds_of(ONCE, sha)
    failed_on = relay.worker_name(hit)
    assert (hit["results"], passed["results"]) == (RETRY, SUCCESS)
    assert relay.worker_name(passed) != failed_on, "never again on the unit it hit the card on"
    assert final == [("success", f"2 passed (after an infrastructure failure on {failed_on})")]
    assert f"infrastructure: {RAS} on {failed_on} (try 1 of 3); built again on another unit" in \
        relay.step_log(hit, suite_step_name("ops"), "infrastructure failure")

    # Fanned out: lucky's child passed on its second unit; dead's hit the card on both its tries, each on its own
    # unit: an error, no verdict.
    parent = relay.wait_for_finished_build(DEAD, sha)
    lucky = {step["name"]: step for step in relay.steps(parent)}[suite_step_name("lucky")]["state_string"]
    assert lucky.startswith("lucky: 2 passed (after an infrastructure failure on host-gamma-gamma-"), lucky
    tries = [child for child in relay.get(f"builders/{relay.builder_id(child_builder_name(DEAD, 'dead'))}/builds")
             ["builds"]]
    units = [relay.worker_name(child) for child in tries]
    assert [child["results"] for child in tries] == [RETRY, EXCEPTION] and len(set(units)) == 2, tries
    assert parent["results"] == EXCEPTION
    assert verdict(DEAD) == [("error", f"infrastructure: {RAS} on {', '.join(units)}, 2 tries")]
    tested = relay.get(f"builds/{parent['buildid']}?property=crcr_tests")["builds"][0]["properties"]["crcr_tests"][0]
    assert list(tested) == ["lucky"], "dead's tests are not judged: no failure counted, no baseline"
    # Its health: an infrastructure error, apart from test failures and out of the pass rate.
    health = wait_until(lambda: (found := relay.plugin(f"api/health/{DEAD}"))["latest"] and found, 30, "its health")
    assert (health["state"], health["latest"]["infrastructure"], health["verdicts"], health["pass_rate"]) == (
        "error", True, {"success": 0, "failure": 0, "error": 0, "infrastructure": 1, "not_relevant": 0}, None), health
    open_page(browser, f"{relay.web_url}#/health/{DEAD}")
    wait_for_texts(browser, ["1 infrastructure error, not counted"], "its health page counting the error apart")

    # The Units page, from the home page: the unit the card failed on, its state (paused should its last three
    # builds each have hit the card: which unit took which run varies), its worker page, the last run on it that hit
    # the card and that run's build.
    open_page(browser, relay.web_url + "#/")
    click_when_ready(browser, "//div[@data-crcr='home']//a[text()='units']", "the home page's units link")
    row = f"//div[@data-crcr='units']//tr[@data-unit='{failed_on}']"
    wait_for_element(browser, f"{row}/td[@data-figure='state']//*[@data-state='connected' or @data-state='paused']",
                     f"{failed_on} connected or paused")
    # Its builds are every build it ran (each child here), not Health's builds: the heading says which.
    wait_for_element(browser, "//table[@data-crcr='units-table']/thead//th[text()='builds run']",
                     "the Units page's 'builds run' heading")
    wait_for_element(browser, f"{row}//a[@href='#/workers/{hit['workerid']}']", f"{failed_on}'s worker page link")
    last = wait_for_element(browser, f"{row}/td[@data-figure='last-failure']//a", f"{failed_on}'s last failure")
    builderid, number = last.get_attribute("href").split("#/builders/")[1].split("/builds/")
    failed = relay.get(f"builders/{builderid}/builds/{number}")["builds"][0]
    assert (last.text, failed["workerid"], failed["results"] in (RETRY, EXCEPTION)) == (RAS, hit["workerid"], True)


def test_a_unit_hitting_the_hardware_three_times_in_a_row_is_taken_out_its_admin_mailed_and_it_is_resumed(
        wide, github):
    relay, root = wide.relay, wide.root
    bad, good = f"{SICK_HOST}-epsilon-0", f"{SICK_HOST}-epsilon-1"
    (root / "bad-card-0").touch()
    (root / "sick-hold").touch()
    sha = wide.upstream.commit("A change run while card 0 is bad", branch=RELEASE_BRANCH)

    # While card 1 holds its first child, card 0 takes the other three one after another and hits the card on each:
    # three in a row, so it is paused, with a reason that says so, and its host's admin gets one mail.
    def bad_unit() -> dict:
        return relay.get(f"workers?name={bad}")["workers"][0]
    paused = wait_until(lambda: bad_unit()["paused"] and bad_unit(), 120, f"{bad} taken out")
    assert paused["pause_reason"] == pause_reason(3, f"{BUS_FENCE} on {bad}", bad)
    def mails() -> list:  # a gamma card may have been taken out by the stories before: its lab's mail is not ours
        return [mail for to, mail in wide.mailbox.received() if to == ["eps@example.com"]]
    [mail] = wait_until(mails, 60, "the mail to the host's admin")
    assert mail["subject"] == f"crcr: unit {bad} taken out ({BUS_FENCE} on {bad})"
    assert (mail["To"], bool(mail["Date"]), bool(mail["Message-ID"])) == ("Eps Lab <eps@example.com>", True, True)
    body = mail.get_content().replace("\r\n", "\n")  # as SMTP carries it
    assert f"The relay took unit {bad} of host {SICK_HOST} out: 3 infrastructure failures in a row" in body, body
    assert f"Card: card-0\nBackend: {SICK}\n" in body, body
    log_url = body.split("The log of the last build it failed: ")[1].split()[0]
    builderid, number, step, slug = re.fullmatch(r".*#/builders/(\d+)/builds/(\d+)/steps/(\d+)/logs/(\w+)",
                                                 log_url).groups()
    log = relay.get(f"builders/{builderid}/builds/{number}/steps/{step}/logs/{slug}")["logs"][0]
    assert log["name"] == "infrastructure failure", log

    # Card 1 then runs every suite, the three retried ones too: the commit passes, its status noting the retry.
    (root / "sick-hold").unlink()
    parent = relay.wait_for_finished_build(SICK, sha)
    assert parent["results"] == SUCCESS, relay.steps(parent)
    final = wait_until(lambda: [(s["state"], s["description"]) for s in github.statuses(sha, status_context(SICK))
                                if s["state"] != "pending"], 30, "its verdict")
    assert final == [("success", f"8 passed (after an infrastructure failure on {bad})")]
    [recorded] = [unit for unit in relay.plugin("api/units")["units"] if unit["name"] == bad]
    assert (recorded["paused"], recorded["infra_failures"], recorded["card"]) == (True, 3, "card-0"), recorded
    assert recorded["last_failure"]["what"] == BUS_FENCE

    # The next commit's suites go to card 1 alone; no second mail.
    sha = wide.upstream.commit("The next change", branch=RELEASE_BRANCH)
    parent = relay.wait_for_finished_build(SICK, sha)
    assert parent["results"] == SUCCESS
    assert {relay.worker_name(child) for child in relay.children(parent)} == {good}
    assert len(mails()) == 1

    # Its card seen to, the lab admin puts it back.
    (root / "bad-card-0").unlink()
    resumed = relay.crcr("worker", "resume", bad, "--url", relay.web_url)
    assert resumed.stdout.startswith(f"{bad} resumed"), resumed.stdout
    assert bad_unit()["paused"] is False
    # A unit the relay does not have is refused, naming those it has.
    unknown = relay.crcr("worker", "resume", f"{SICK_HOST}-epsilon-9", "--url", relay.web_url, check=False)
    assert unknown.returncode != 0 and f"no unit '{SICK_HOST}-epsilon-9' on the relay" in unknown.stderr, unknown
    assert f"{bad}, {good}" in unknown.stderr and "ResultSpec" not in unknown.stderr, unknown.stderr
