# The two commands a reader needs:
#   make book   builds the website (sets itself up on first use) and prints where to open it
#   make test   runs every test: library, every notebook, the website build, the student edition
# and, for instructors and authors:
#   make student     the student edition (notebooks and website without solutions)
#   make benchmark   time and peak memory of every chapter, run in a fresh kernel
#   make seeds       every hidden check of every chapter for training seeds 0-4 (SEEDS=0-1 CHAPTERS=ch05 to narrow)
#   make screenshot  PNG screenshots of the built chapters (headless Chromium)
#   make release VERSION=x.y.z [DRY_RUN=1]   bump the version everywhere, commit and tag vx.y.z
#   make grader      Otter-Grader assignments of every chapter in _build/grader (instructors)
# and for the Chinese edition (see the README, "The Chinese edition"):
#   make book-zh     the Chinese website (reuses the English build's execution cache)
#   make student-zh  the Chinese student edition (after make book-zh)
#   make translate-status  which translations are missing or stale

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
GRADER_STAMP := $(VENV)/.grader-installed
MATHJAX := book/_static/mathjax/tex-chtml.js
# Colab's ipywidgets 7.7.1, beside the local 8.x, for tests/test_widgets.py (one interpreter can
# import only one of them, so it lives in its own folder and the test runs it in a subprocess).
WIDGETS7 := .cache/ipywidgets7/ipywidgets/__init__.py
# Pages rendered without a kernel get the static twin of every interactive figure. One thread per
# kernel, as in `make test`: with two threads, a build that shares the two cores with anything else
# (another notebook, a test run) slows down many times over instead of by half.
BUILD_ENV := SEQBOOK_STATIC=1 SEQBOOK_QUIET=1 OMP_NUM_THREADS=1

.PHONY: book test student benchmark seeds screenshot grader release clean setup book-zh student-zh translate-status

setup: $(STAMP) $(MATHJAX) $(WIDGETS7)

# The package's version lives in _version.py: a release re-installs it, so its metadata agrees.
$(STAMP): requirements.txt pyproject.toml book/lib/_version.py
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

# Otter-Grader, for instructors only (students never install it): on top of the book's packages.
$(GRADER_STAMP): $(STAMP) requirements-grader.txt
	$(BIN)/pip install --quiet -r requirements-grader.txt
	touch $(GRADER_STAMP)

book: setup
	$(BUILD_ENV) $(BIN)/jupyter-book build . -W -n --keep-going
	@echo
	@echo "The book is built. Open file://$(CURDIR)/_build/html/index.html"

# One thread per test worker: two processes with two threads each on two cores slow each other down.
test: setup $(GRADER_STAMP)
	SEQBOOK_QUIET=1 OMP_NUM_THREADS=1 $(BIN)/pytest -n 2 --dist loadfile --nbval-lax tests book

student: setup
	$(BIN)/python -m seqbook.authoring.student_edition --out _build/student
	@echo "Student notebooks: $(CURDIR)/_build/student/notebooks/"
	@echo "Student website:   file://$(CURDIR)/_build/student/site/_build/html/index.html"

book-zh: setup
	$(BUILD_ENV) $(BIN)/python -m seqbook.authoring.book_zh

student-zh: setup
	$(BIN)/python -m seqbook.authoring.student_edition --zh
	@echo "Chinese student notebooks: $(CURDIR)/_build/zh/student/notebooks/"
	@echo "Chinese student website:   file://$(CURDIR)/_build/zh/student/site/_build/html/index.html"

translate-status: setup
	$(BIN)/python -m seqbook.authoring.translate status

# For each chapter: _build/grader/chNN/student (the assignment) and _build/grader/chNN/autograder
# (the solutions notebook and autograder.zip for Gradescope or `otter run`).
grader: setup $(GRADER_STAMP)
	$(BIN)/python -m seqbook.authoring.grader --out _build/grader

benchmark: setup
	$(BIN)/python -m seqbook.authoring.benchmark --readme README.md

# A claim about a trained model must hold for every training seed: run each chapter once per
# SEQBOOK_SEED, in parallel with one thread per kernel, and tabulate every hidden check.
SEEDS ?= 0-4
seeds: setup
	$(BIN)/python -m seqbook.authoring.seed_sweep --seeds $(SEEDS) $(if $(JOBS),--jobs $(JOBS)) --json _build/seeds/report.json $(CHAPTERS)

screenshot: setup
	$(BIN)/python -m seqbook.authoring.screenshot _build/html _build/screenshots

# A release: the version in every place that names it, the set-up cells installing its tag, the
# changelog's section; then a commit and the tag (see book/lib/authoring/release.py). DRY_RUN=1
# prints what would change and changes nothing.
release: $(STAMP)
	@test -n "$(VERSION)" || { echo "usage: make release VERSION=x.y.z [DRY_RUN=1]"; exit 2; }
	$(BIN)/python -m seqbook.authoring.release $(VERSION) --root $(CURDIR) $(if $(DRY_RUN),--dry-run)

clean:
	rm -rf _build .jupyter_cache
