# Two commands do everything on a fresh machine: `make demo` and `make test`.
export UV_PYTHON_DOWNLOADS := never
export UV_COMPILE_BYTECODE := 1
export UV_PROJECT_ENVIRONMENT := .venv

UV := $(shell command -v uv 2>/dev/null || echo .tools/bin/uv)
PYTEST_ARGS ?=
# Three xdist workers on the 2-CPU machine, each with its own servers: most of the suite waits on
# subprocesses and servers (two workers kept the CPUs 59 % busy; a third cut a fresh-clone run from
# 14:52 to 13:40). `make test PYTEST_PARALLEL=` runs it in one process.
PYTEST_PARALLEL ?= -n 3 --dist worksteal

.PHONY: setup demo test lint clean i18n-extract i18n-compile

setup: .venv/.synced

# Debian and Ubuntu ship venv's pip apart (python3-venv): root installs it, as setup-system.sh the rest.
.tools/bin/uv:
	python3 -c 'import ensurepip' 2>/dev/null || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; }
	python3 -m venv .tools
	.tools/bin/pip install --quiet uv

.venv/.synced: pyproject.toml uv.lock | $(UV)
	scripts/setup-system.sh
	$(UV) sync --frozen
	touch $@

demo: setup
	$(UV) run --frozen videocopies demo

test: setup
	$(UV) run --frozen pytest $(PYTEST_PARALLEL) $(PYTEST_ARGS)

lint: setup
	$(UV) run --frozen ruff check src tests bench
	$(UV) run --frozen mypy
	$(UV) run --frozen lint-imports

# The bot's message catalogs: extract the messages into the template and merge it into every
# language's .po; compile the .po files into the .mo files the package ships (both committed).
LOCALE := src/videocopies/locale
i18n-extract: setup
	$(UV) run --frozen pybabel extract -F babel.cfg -k Nn_:1,2 --no-location --width 120 --project videocopies \
		-o $(LOCALE)/videocopies.pot .
	$(UV) run --frozen pybabel update -D videocopies -i $(LOCALE)/videocopies.pot -d $(LOCALE) \
		--width 120 --no-fuzzy-matching --ignore-obsolete --ignore-pot-creation-date

i18n-compile: setup
	$(UV) run --frozen pybabel compile -D videocopies -d $(LOCALE) --statistics

clean:
	rm -rf .venv .tools .pytest_cache .hypothesis
