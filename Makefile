# The two commands a reader needs:
#   make book   builds the website (sets itself up on first use) and prints where to open it
#   make test   runs every test: library, every notebook, the website build, the student edition
# and, for instructors and authors:
#   make student     the student edition (notebooks and website without solutions)
#   make benchmark   time and peak memory of every chapter, run in a fresh kernel
#   make screenshot  PNG screenshots of the built chapters (headless Chromium)

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
MATHJAX := book/_static/mathjax/tex-chtml.js
# Colab's ipywidgets 7.7.1, beside the local 8.x, for tests/test_widgets.py (one interpreter can
# import only one of them, so it lives in its own folder and the test runs it in a subprocess).
WIDGETS7 := .cache/ipywidgets7/ipywidgets/__init__.py
# Pages rendered without a kernel get the static twin of every interactive figure. One thread per
# kernel, as in `make test`: with two threads, a build that shares the two cores with anything else
# (another notebook, a test run) slows down many times over instead of by half.
BUILD_ENV := SEQBOOK_STATIC=1 SEQBOOK_QUIET=1 OMP_NUM_THREADS=1

.PHONY: book test student benchmark screenshot clean setup

setup: $(STAMP) $(MATHJAX) $(WIDGETS7)

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 10), "Python 3.10 or newer is needed"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	touch $(STAMP)

$(WIDGETS7): | $(STAMP)
	rm -rf .cache/ipywidgets7
	$(BIN)/pip install --quiet --no-deps --target .cache/ipywidgets7 ipywidgets==7.7.1 ipython_genutils

# MathJax is served from the site itself, so pages show math offline (in a classroom, in CI).
$(MATHJAX):
	@command -v npm >/dev/null || { echo "npm is needed once, to fetch MathJax 3 for the website"; exit 1; }
	rm -rf .cache/npm book/_static/mathjax
	npm install --silent --no-save --no-audit --no-fund --prefix .cache/npm mathjax@3
	mkdir -p book/_static/mathjax
	cd .cache/npm/node_modules/mathjax/es5 && cp -r tex-chtml.js input output ui a11y $(CURDIR)/book/_static/mathjax/

book: setup
	$(BUILD_ENV) $(BIN)/jupyter-book build . -W -n --keep-going
	@echo
	@echo "The book is built. Open file://$(CURDIR)/_build/html/index.html"

# One thread per test worker: two processes with two threads each on two cores slow each other down.
test: setup
	SEQBOOK_QUIET=1 OMP_NUM_THREADS=1 $(BIN)/pytest -n 2 --dist loadfile --nbval-lax tests book

student: setup
	$(BIN)/python -m seqbook.authoring.student_edition --out _build/student
	@echo "Student notebooks: $(CURDIR)/_build/student/notebooks/"
	@echo "Student website:   file://$(CURDIR)/_build/student/site/_build/html/index.html"

benchmark: setup
	$(BIN)/python -m seqbook.authoring.benchmark --readme README.md

screenshot: setup
	$(BIN)/python -m seqbook.authoring.screenshot _build/html _build/screenshots

clean:
	rm -rf _build .jupyter_cache
