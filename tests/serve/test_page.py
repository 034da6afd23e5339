"""The page at ``/``, in a real (headless) browser: it lists the models, translates what is typed when the button is
pressed, and shows the server's error in one line."""
import pytest

from nmtkit.decoding import Decoder, DecodeSettings
from tests.serve.browser import Browser, chromium_path
from tests.serve.test_app import served


@pytest.fixture(scope="module")
def page(trained_ckpt):
    executable = chromium_path()
    if executable is None:
        pytest.skip("no Chromium on PATH: 'make browser' installs Debian's (make test does)")
    decoder = Decoder(DecodeSettings(models=(str(trained_ckpt),), beam=3))
    with served({"tiny": decoder, "other": decoder}) as (url, _):
        browser = Browser(f"{url}/", executable)
        try:
            browser.wait_for("document.getElementById('model').options.length === 2")
            yield browser, decoder
        finally:
            browser.close()


def test_the_page_lists_the_models_with_the_default_chosen(page):
    browser, _ = page
    assert browser.evaluate("[...document.getElementById('model').options].map(o => o.value)") == ["tiny", "other"]
    assert browser.evaluate("document.getElementById('model').value") == "tiny"
    assert browser.evaluate("document.getElementById('beam').value") == "3"


def test_typing_text_and_pressing_translate_shows_the_translations(page):
    browser, decoder = page
    browser.evaluate("document.getElementById('input').value = 'forty-two\\nseven hundred'; "
                     "document.getElementById('model').value = 'other'; "
                     "document.getElementById('translate').click(); true")
    status = browser.wait_for("document.getElementById('status').textContent.startsWith('done') && "
                              "document.getElementById('status').textContent")
    shown = browser.evaluate("document.getElementById('output').textContent")
    assert shown.split("\n") == [r.texts[0] for r in decoder.translate_texts(["forty-two", "seven hundred"])]
    assert status.startswith("done: 2 line(s), mean confidence -")


def test_an_error_from_the_server_is_shown_in_one_line(page):
    browser, _ = page
    browser.evaluate("document.getElementById('beam').value = '0'; document.getElementById('translate').click(); true")
    shown = browser.wait_for("document.getElementById('status').className === 'error' && "
                             "document.getElementById('status').textContent")
    assert shown == "error: beam: Input should be greater than or equal to 1"
