# The two fresh-machine commands: `make demo` and `make test`.
# PYTHON and TORCH can be overridden, e.g. `make demo TORCH="torch==2.4.1+cu121"` on a GPU machine.
PYTHON ?= python3
TORCH ?= torch==2.13.0

.PHONY: install extras demo test lint cjk-font browser

install:
	$(PYTHON) -m pip install "$(TORCH)"
	$(PYTHON) -m pip install -e ".[test]"

demo: install
	bash recipes/demo.sh

# the optional extras, so that the tests exercise them (export to CTranslate2, images, the documentation site,
# the recipes' Moses tokenisation, the server)
extras: install
	$(PYTHON) -m pip install -e ".[test,ctranslate2,images,docs,recipes,serve]"

test: extras cjk-font browser lint
	$(PYTHON) -m pytest -q tests

# ruff (pyflakes, pycodestyle, bugbear, import order) everywhere; mypy on the interfaces (pyproject.toml)
lint:
	$(PYTHON) -m ruff check nmtkit tests bench
	$(PYTHON) -m mypy

# plot-attn's tests draw Chinese labels: they need a font covering CJK (Debian's WenQuanYi Micro Hei, 5 MB).
cjk-font:
	@if fc-list :lang=zh 2>/dev/null | grep -q .; then :; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-microhei >/dev/null; \
	else echo "note: no CJK font installed; install one (e.g. fonts-noto-cjk) for plot-attn's CJK test" >&2; fi

# serve's page is tested in a real browser: headless Chromium (Debian's), driven over its DevTools pipe.
browser:
	@if command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null; then :; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "note: no Chromium installed; install one (e.g. apt-get install chromium) for serve's browser test" >&2; fi
