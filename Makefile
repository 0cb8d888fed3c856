# Two commands do all the set-up on a fresh machine with Python 3.11:
#   make demo   installs aart with the embedded model and runs the main job on it
#   make test   installs aart with the dev tools and runs the test suite
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check
# Built wheels live outside the work tree so every clone on this machine reuses them.
WHEELS ?= $(HOME)/.cache/aart-build/wheels
LLAMA_VERSION := 0.3.36
# A portable CPU build: -march=native pulls in AMX kernels that crash on some virtual CPUs.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
LLAMA_WHEEL_STAMP := $(WHEELS)/.llama-$(LLAMA_VERSION)
DEMO_OUT ?= runs/aart-demo-small
# The tools `aart export` writes for, run by the tests on the exports, each into a cache folder
# (once per machine). garak without its dependencies (about 100, pinning transformers against
# ours): its probe loader, test generator and detectors need only these five (28 MB, seconds).
# promptfoo from npm (about 1.4 GB, three minutes).
GARAK_VERSION := 0.17.1
GARAK_DIR := $(HOME)/.cache/aart-build/garak-$(GARAK_VERSION)
PROMPTFOO_VERSION := 0.121.20
PROMPTFOO_DIR := $(HOME)/.cache/aart-build/promptfoo-$(PROMPTFOO_VERSION)

.PHONY: demo test install interop-tools lint bench docs clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q pip==25.3

# llama-cpp-python compiles from source (several minutes on 2 cores); built once per machine.
$(LLAMA_WHEEL_STAMP): | $(PY)
	mkdir -p $(WHEELS)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP) wheel --no-deps --no-cache-dir -w $(WHEELS) \
		llama-cpp-python==$(LLAMA_VERSION)
	touch $@

$(VENV)/.installed: pyproject.toml constraints.txt $(LLAMA_WHEEL_STAMP) | $(PY)
	$(PIP) install -q -c constraints.txt --find-links $(WHEELS) -e '.[local,demo,embeddings,review,ray,interop,dev]'
	touch $@

# The review app's tests drive Debian's chromium with Playwright (no browser download).
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium

install: $(VENV)/.installed

$(GARAK_DIR)/.installed: | $(PY)
	$(PIP) install -q --no-deps --upgrade --target $(GARAK_DIR) garak==$(GARAK_VERSION) \
		xdg-base-dirs==6.0.3 colorama==0.4.6 nltk==3.10.4 langdetect==1.0.9 lorem==0.1.1
	touch $@

# promptfoo 0.121.x is the last line that runs on Node 20 (Debian's); without npm its tests skip.
$(PROMPTFOO_DIR)/.installed:
	if command -v npm >/dev/null; then \
		npm install --prefix $(PROMPTFOO_DIR) --no-audit --no-fund promptfoo@$(PROMPTFOO_VERSION) \
		&& touch $@ || echo "promptfoo did not install: the promptfoo export test will skip"; \
		else echo "npm not found: the promptfoo export test will skip"; fi

interop-tools: $(GARAK_DIR)/.installed $(PROMPTFOO_DIR)/.installed

# The demo's 18 cells on the embedded 1.5B: a cell or three may stay empty after the top-ups
# (docs/benchmarks.md); fewer than 80% filled still stops it with exit 5. A demo run of an
# earlier version of the recipe is moved to $(DEMO_OUT).old-N; an interrupted one resumes.
demo: install
	$(VENV)/bin/aart run aart-demo --size small --out $(DEMO_OUT) --min-fill 0.8 --set-aside-old
	$(VENV)/bin/aart evaluate $(DEMO_OUT)/dataset.jsonl --run $(DEMO_OUT) --report $(DEMO_OUT)/evaluation
	$(VENV)/bin/aart attack $(DEMO_OUT)/dataset.jsonl --target local/default --judge refusal \
		--sample 12 --max-tokens 120 --out $(DEMO_OUT)/attack

test: install $(CHROMIUM) interop-tools
	AART_GARAK_DIR=$(GARAK_DIR) AART_PROMPTFOO=$(PROMPTFOO_DIR)/node_modules/.bin/promptfoo \
		$(PY) -m pytest -q

lint: install
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/mypy src/aart

bench: install
	$(PY) bench/run_all.py

# The generated reference pages (docs/cli.md, docs/recipe-reference.md, docs/run-db.md);
# tests/test_docs.py fails when one is stale.
docs: install
	$(PY) tools/gen_docs.py

clean:
	rm -rf $(VENV) runs .pytest_cache
