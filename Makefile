# Every target installs what it needs from nothing: Python packages into .venv,
# dynalite from the npm registry (package-lock.json pins it).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
NODE_STAMP := node_modules/.installed-stamp

.PHONY: install constraints demo test stress unit integration property lint docs doctest examples bench deep exhaustive traced plants mutants screenshots compat clean

install: $(STAMP) $(NODE_STAMP)

# constraints.txt pins every package of the dev environment to the versions make test last
# passed with: an unpinned install took moto 5.2.6 the day it came out, and its changed
# routing failed 820 tests of an unchanged main.
$(STAMP): setup.cfg pyproject.toml constraints.txt
	@echo "Installing shardmodel and its dev tools into $(VENV) (pip, about a minute the first time)..."
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev,async]'
	touch $(STAMP)

# The newest versions setup.cfg allows, into .venv, written to constraints.txt: run make
# test after it, and commit the file with the run that passed.
constraints: $(STAMP)
	$(PY) -m pip install --quiet --upgrade --upgrade-strategy eager -e '.[dev,async]'
	@{ sed -n '1,3p' constraints.txt; $(PY) -m pip freeze --exclude-editable; } > constraints.new
	mv constraints.new constraints.txt
	touch $(STAMP)

$(NODE_STAMP): package.json package-lock.json
	@echo "Installing dynalite into node_modules (npm ci)..."
	npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

demo: $(STAMP)
	$(PY) -m shardmodel demo

lint: $(STAMP)
	$(VENV)/bin/ruff check shardmodel tests examples benchmarks docs/conf.py docs/charts.py
	$(VENV)/bin/ruff format --check shardmodel tests examples benchmarks docs/conf.py docs/charts.py
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache

docs: $(STAMP)
	$(VENV)/bin/sphinx-build -W --keep-going -q -b html docs docs/_build/html

doctest: $(STAMP)
	$(VENV)/bin/sphinx-build -W --keep-going -q -b doctest docs docs/_build/doctest

examples: $(STAMP)
	@set -e; for f in examples/*.py; do echo "== $$f"; $(PY) $$f; done

# builds no docs: the built-site checks skip (under make test, a missing build fails them)
unit: $(STAMP)
	SHARDMODEL_NO_DOCS_BUILD=1 $(PY) -m pytest tests/unit tests/property $(PYTEST_FLAGS)

# the unit and property tests with 150 Hypothesis examples each instead of 40
deep:
	HYPOTHESIS_PROFILE=deep $(MAKE) unit

# every case of the migration interleavings (make test runs a fixed slice and a seeded draw)
exhaustive: $(STAMP)
	SHARDMODEL_EXHAUSTIVE=1 $(PY) -m pytest tests/unit/test_phase_interleavings.py $(PYTEST_FLAGS)

# the unit and property tests with shardmodel's OpenTelemetry spans and metrics on: the
# traced connections and iterators must change no result (tests/traced_everywhere.py)
traced: $(STAMP)
	SHARDMODEL_NO_DOCS_BUILD=1 $(PY) -m pytest -p tests.traced_everywhere tests/unit tests/property --ignore=tests/unit/test_phase_interleavings.py --ignore=tests/unit/test_plants.py $(PYTEST_FLAGS)

# every bug of tests/plants.toml planted in a copy of the checkout, its make test tests run
# there: each must fail (PLANTS="name ..." for some)
plants: $(STAMP) $(NODE_STAMP)
	$(PY) -m tests.plants $(PLANTS)

integration: $(STAMP) $(NODE_STAMP)
	$(PY) -m pytest tests/integration $(PYTEST_FLAGS)

# One pytest worker per core (pytest-xdist), each with its own moto and dynalite servers;
# --maxschedchunk 1 hands each worker its next test when it is nearly out, in collection
# order (tests marked slow first), instead of a quarter of the suite up front, which gave
# one worker every slow test; -v names every test as it finishes, --durations lists the
# slowest at the end.
PYTEST_FLAGS ?= -n auto --maxschedchunk 1 -v --durations=15

# The tier CI runs: lint, docs, doctest, examples and every test that guards behaviour at
# sizes that fit in minutes (tests/tier.py); it ends by printing its wall time and the load
# average at its start and end. Nothing fails on time: a slow machine is not a failure.
# The four checks start at once (-j4): two at a time, the last one ran alone on one core
# for about a minute (134 s for the four, 111 s at once, on 2 cores).
test: $(STAMP) $(NODE_STAMP)
	@start=$$(date +%s); load=$$(cut -d' ' -f1-3 /proc/loadavg); \
	$(MAKE) --no-print-directory -j4 --output-sync=target lint docs doctest examples \
	&& $(PY) -m pytest $(PYTEST_FLAGS); status=$$?; \
	echo "make test: $$(( $$(date +%s) - start )) s wall; load average $$load at the start," \
	"$$(cut -d' ' -f1-3 /proc/loadavg) at the end; exit $$status"; exit $$status

# The long scenarios (SHARDMODEL_STRESS=1): the migrations and aborted changes under load
# at full size on both servers, every phase interleaving, and the property tests at the
# deep profile (150 examples); every test's time listed at the end. Run it before saying
# resolved on a change to the migration, the merge, cursors, placement or the transport.
stress: $(STAMP) $(NODE_STAMP)
	@start=$$(date +%s); load=$$(cut -d' ' -f1-3 /proc/loadavg); \
	SHARDMODEL_STRESS=1 $(PY) -m pytest -n auto --maxschedchunk 1 -v --durations=0 \
		--durations-min=1; status=$$?; \
	echo "make stress: $$(( $$(date +%s) - start )) s wall; load average $$load at the start," \
	"$$(cut -d' ' -f1-3 /proc/loadavg) at the end; exit $$status"; exit $$status

# The request-path candidates benchmarks/candidates.py measures: the `candidates` extra's
# packages alone (`pip install -e .[candidates]` would repoint the editable install), and
# awscrt in a directory of its own that only that benchmark puts on sys.path (importable
# beside botocore, awscrt makes botocore sign with it: every other test would change).
CANDIDATES_STAMP := $(VENV)/.candidates-stamp
EXTRA = $(PY) -c 'import configparser, sys; c = configparser.ConfigParser(); c.read("setup.cfg"); print(c["options.extras_require"][sys.argv[1]])'

$(CANDIDATES_STAMP): setup.cfg $(STAMP)
	@echo "Installing the request-path candidates the bench measures (httpx, aiohttp, msgspec, awscrt)..."
	$(PY) -m pip install --quiet $$($(EXTRA) candidates)
	$(PY) -m pip install --quiet --upgrade --target $(VENV)/candidates-crt $$($(EXTRA) candidates-crt)
	touch $@

# the output is kept in benchmarks/last_run.txt: the performance page draws its charts
# from it (docs/charts.py), so commit it with the numbers the page quotes
bench: $(STAMP) $(NODE_STAMP) $(CANDIDATES_STAMP)
	set -o pipefail; $(PY) -m benchmarks | tee benchmarks/last_run.txt

# Mutation testing (mutmut) of the modules [tool.mutmut] in pyproject.toml lists, with the
# tests of tests/unit and tests/property that run each mutated function; not part of `make
# test`. It starts afresh each time (mutants/ is mutmut's work directory), then prints the
# kill rate per module and every mutant left alive with the reason tests/mutants_surviving.txt
# records for it; it fails under 90% or on a survivor without a reason. Each test of a mutant
# stops after MUTANT_TEST_TIMEOUT seconds (pytest-timeout): a mutant that makes a merge wait
# forever fails there, instead of holding a worker for mutmut's own timeout (15 times the
# tests' time: minutes).
MUTATION_STAMP := $(VENV)/.mutation-stamp
MUTANT_CHILDREN ?= 2
MUTANT_TEST_TIMEOUT ?= 60

$(MUTATION_STAMP): setup.cfg $(STAMP)
	@echo "Installing mutmut (the mutation extra)..."
	$(PY) -m pip install --quiet -c constraints.txt $$($(EXTRA) mutation)
	touch $@

mutants: $(STAMP) $(MUTATION_STAMP)
	rm -rf mutants
	SHARDMODEL_NO_DOCS_BUILD=1 PYTEST_TIMEOUT=$(MUTANT_TEST_TIMEOUT) $(VENV)/bin/mutmut run --max-children $(MUTANT_CHILDREN)
	$(PY) -m tests.mutation_report --fail-under 90

# The main docs pages in headless Chromium at a 1280 px window: layout checks, and
# screenshots in docs/_build/screenshots. Installs Debian's chromium when it is missing
# (as root, or with sudo); make test runs the same checks where Chromium is installed.
screenshots: docs
	@command -v chromium >/dev/null || { command -v apt-get >/dev/null && \
		$$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y -q chromium; }
	$(PY) -m pytest -q -p no:randomly tests/unit/test_docs_screens.py

# The ends of the supported range, each in a venv of its own under .venv-compat: the lowest
# botocore and boto3 setup.cfg allows (where the lean path steps aside to botocore, saying
# why), the newest it allows (the pins are resolved together with the package, so its
# upper bound holds), and beside aioboto3 (which pins a botocore of its own).
# Each runs the conformance suites and the query tests; the line before each run names the
# versions it has. LeanFallbackWarning is expected where the lean path steps aside.
COMPAT_ENDS = low:botocore==1.34.0,boto3==1.34.0 newest:botocore,boto3 aioboto3:aioboto3
COMPAT_TESTS = tests/unit/test_lean_conformance.py tests/integration/test_lean_conformance.py \
	tests/unit/test_query.py tests/integration/test_query_equivalence.py
compat: $(NODE_STAMP)
	@set -e; for end in $(COMPAT_ENDS); do \
		name=$${end%%:*}; pins=$$(echo "$${end#*:}" | tr , ' '); venv=.venv-compat/$$name; \
		[ -x $$venv/bin/python ] || python3 -m venv $$venv; \
		$$venv/bin/pip install -q -e '.[dev,async]' && $$venv/bin/pip install -q --upgrade -e . $$pins; \
		echo "== compat $$name: $$($$venv/bin/python -c 'import botocore, boto3, pynamodb; \
			print("botocore", botocore.__version__, "boto3", boto3.__version__, "pynamodb", pynamodb.__version__)')"; \
		$$venv/bin/python -m pytest -q -p no:cacheprovider -n 2 \
			-W "ignore::shardmodel.lean.private.LeanFallbackWarning" $(COMPAT_TESTS); \
	done

clean:
	rm -rf $(VENV) .venv-compat node_modules mutants docs/_build docs/_generated .mypy_cache .ruff_cache .pytest_cache .hypothesis
