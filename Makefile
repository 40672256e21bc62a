# The two commands a newcomer needs: `make demo` and `make test`.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Crossbar.io, the router of several masters' message queue, in an environment of its own (crcr router start).
ROUTER_VENV := .venv-router
ROUTER_STAMP := $(ROUTER_VENV)/.installed

.PHONY: venv router-venv demo stop lint test unit check bench clean

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

# Pinned whole (router/requirements.txt): installed without resolving, in seconds rather than minutes.
router-venv: $(ROUTER_STAMP)

$(ROUTER_STAMP): router/requirements.txt
	test -x $(ROUTER_VENV)/bin/python || python3 -m venv $(ROUTER_VENV)
	$(ROUTER_VENV)/bin/python -m pip install --quiet --no-deps -r router/requirements.txt
	touch $@

demo: venv
	scripts/demo.sh

stop:
	scripts/stop.sh

check: venv
	$(VENV)/bin/crcr check

# The tests run in 4 pytest-xdist processes: a test waits much of its time (on polls, builds, workers connecting,
# subprocesses), so twice the cores pay. Each module runs whole in one process (--dist loadfile), so a module's relay
# starts once; in the order collected (tests/conftest.py puts the end-to-end modules first), not xdist's by number of
# tests, which would start the longest, one-test stories last.
# PYTEST_ARGS come last and win: `-n 0` runs the tests one at a time in pytest's own process (for --pdb, -s, or
# a test alone). pytest exits 5 when it collected no tests: that is a failure here, not a pass.
# Python may write its bytecode (in __pycache__, ignored by git) even where PYTHONDONTWRITEBYTECODE is set: every
# test process, master and worker would otherwise compile the relay's modules and the tests again.
define run_pytest
	env -u PYTHONDONTWRITEBYTECODE $(VENV)/bin/pytest -n 4 --dist loadfile --no-loadscope-reorder $(1) $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make: pytest collected no tests" >&2; exit 1; fi; exit $$rc
endef

# ruff over the whole tree (its rules and exclusions in pyproject.toml), before any test: seconds, not minutes.
lint: venv
	$(VENV)/bin/ruff check .

# Everything: unit tests, then real masters, workers and Chromium end to end (the cluster's with the router).
test: lint router-venv
	$(call run_pytest,)

# The unit tests alone (no master or worker processes).
unit: lint
	$(call run_pytest,-m "not e2e")

# Benchmarks, never asserted in tests: each compares, in one run, crcr with vanilla Buildbot doing the same
# work (day.py: queue: newest with queue: every; health.py: the health views with Buildbot's builders listing;
# cluster.py: one master with two on PostgreSQL and the router, then kill -9 of the leader; suite_rerun.py: a
# suite run as a worker runs it, failed tests run again in the same session, with plain pytest; artifacts.py: a
# 300 MB build artifact to the units of one host, Buildbot's FileDownload against HTTP into a host cache;
# suites_apart.py: a commit's suites fanned out over 4 units against one serial build; relevance.py: a day of
# upstream commits, a backend building each against one skipping docs and CI and telling a new failure while its
# suite runs; build_cost.py: a wheel of a compiled package built per commit from nothing against with ccache and
# reuse of the ancestor's wheel; pytorch_day.py: a day of PyTorch's main branch, scaled, through the shared CPU build
# cold against cached and reused) and prints the ratios beside the targets (this machine is shared and noisy). About
# three hours.
bench: venv router-venv
	$(PY) bench/checkout.py
	$(PY) bench/fanout.py
	$(PY) bench/builds.py
	$(PY) bench/day.py
	$(PY) bench/health.py
	$(PY) bench/suite_rerun.py
	$(PY) bench/artifacts.py
	$(PY) bench/suites_apart.py
	$(PY) bench/relevance.py
	$(PY) bench/build_cost.py
	$(PY) bench/pytorch_day.py
	$(PY) bench/cluster.py

# The demo stopped, its second hosts removed, its state deleted (scripts/stop.sh).
clean:
	scripts/stop.sh --clean
	rm -rf .state
