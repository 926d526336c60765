# The two commands: `make run` (the whole platform on one machine) and `make test` (the suite).
# Both do all their own set-up on a fresh machine: virtualenv, packages, system packages, services.

SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)
APT_PACKAGES := clickhouse-server clickhouse-client snmpd snmp chromium
PYTEST_ARGS ?=

.PHONY: run test venv system-packages lint services-up services-down clean

run: $(STAMP)
	$(VENV)/bin/rocewatch up

test: $(STAMP) system-packages
	tests/services/run-tests.sh $(PYTEST_ARGS)

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip wheel setuptools
	$(VENV)/bin/pip install -q -e '.[test]'
	rm -f $(VENV)/.installed-*
	touch $@

# Debian packages the tests use (a real ClickHouse server, net-snmp's snmpd, Chromium).
system-packages:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y -q $$missing >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q $$missing >/dev/null; }; \
	fi

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy rocewatch collectors pipeline detectors remediation ui lab

services-up: $(STAMP) system-packages
	tests/services/services.sh start

services-down:
	tests/services/services.sh stop

clean:
	tests/services/services.sh stop || true
	rm -rf var .pytest_cache .mypy_cache .ruff_cache
