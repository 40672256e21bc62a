# The two commands a newcomer needs: `make demo` and `make test`.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv demo stop test check clean

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

demo: venv
	scripts/demo.sh

stop:
	scripts/stop.sh

check: venv
	$(VENV)/bin/crcr check

test: venv
	$(VENV)/bin/pytest $(PYTEST_ARGS)

clean: stop
	rm -rf .state
