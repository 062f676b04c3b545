# The two front-door commands: `make run` (everything) and `make test` (the suite).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
# `make run` serves DEBUG pages (settings, the whole URLconf): on loopback only, unless HOST (or WEB_BIND) says
# otherwise, e.g. `make run HOST=0.0.0.0` to reach it from another machine of a trusted network.
HOST ?= 127.0.0.1
WEB_BIND ?= $(HOST):$(PORT)
# Two web workers on a laptop; a deployment's default is one per core plus one (config/gunicorn.py).
WEB_CONCURRENCY ?= 2
# Printed addresses and links (invitations, docs) follow PORT unless SITE_URL is given.
SITE_URL ?= http://localhost:$(PORT)
export SITE_URL

.PHONY: run test venv migrate demo check clean cli

$(VENV)/.installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed requirements-test.txt
	$(PY) -m pip install --quiet -r requirements-test.txt
	touch $@

venv: $(VENV)/.installed

migrate: venv
	$(PY) manage.py migrate --noinput

demo: migrate
	$(PY) manage.py demo_data

## run: install, migrate, load demo data, start web + workers (builds, codes) + beat (+ agent)
run: demo
	WEB_BIND=$(WEB_BIND) WEB_PORT=$(PORT) DEPLOY_PORT=$(PORT) WEB_CONCURRENCY=$(WEB_CONCURRENCY) $(VENV)/bin/honcho start -f Procfile

## test: install and run the test suite (SQLite, or DATABASE_URL)
test: $(VENV)/.installed-test
	$(VENV)/bin/pytest -q $(PYTEST_ARGS)

check: venv
	$(PY) manage.py makemigrations --check --dry-run
	$(PY) manage.py check

clean:
	rm -rf $(VENV) data

## cli: install the command-line client `svc` into the venv (pyproject.toml)
cli: venv
	$(PY) -m pip install --quiet -e .
