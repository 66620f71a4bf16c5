"""The page at ``/`` in a real browser: headless Chromium (the system's, Debian's ``chromium`` package; no browser
download) driven by Playwright, against a server on 127.0.0.1. ``.ci/run`` installs Chromium; where it is missing
the test says so and skips."""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("fastapi")
sync_api = pytest.importorskip("playwright.sync_api", reason="the test extra's playwright is not installed")

from tests.mluke.serve_fixtures import EMOJI_TEXTS, make_app, running_server  # noqa: E402

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no system Chromium (apt-get install chromium; .ci/run installs it)"
)


@pytest.fixture(scope="module")
def page_url(tiny_demo, embedded_db_path):
    with running_server(make_app(tiny_demo, embedded_db_path)) as (url, _):
        yield url


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


def _link(page, lang: str, text: str) -> list[dict]:
    page.select_option("#lang", lang)
    page.fill("#text", text)
    page.click("#link-btn")
    page.wait_for_function(  # a function, not a string: the page's policy forbids eval
        "() => document.querySelectorAll('#linked .m').length > 0 || document.querySelector('#link-error').textContent"
    )
    return page.eval_on_selector_all(
        "#linked .m", "els => els.map(e => ({text: e.textContent, kind: e.dataset.kind, dir: e.parentElement.dir}))"
    )


@pytest.mark.parametrize("lang", ["en", "ja", "ar"])
def test_highlights_fall_on_the_mentions_after_an_emoji(browser, page_url, lang):
    page = browser.new_page()
    page.goto(page_url + "/")
    text = EMOJI_TEXTS[lang]
    marks = _link(page, lang, text)
    assert marks, page.text_content("#link-error")
    expected = page.evaluate(
        "async ([text, lang]) => (await (await fetch('/link', {method: 'POST', headers: {'Content-Type': "
        "'application/json'}, body: JSON.stringify({text, lang})})).json()).results[0].mentions.map(m => m.surface)",
        [text, lang],
    )
    assert [m["text"] for m in marks] == expected  # each highlight holds exactly its mention's characters
    assert page.text_content("#linked") == text  # nothing lost or doubled around them
    assert marks[0]["dir"] == ("rtl" if lang == "ar" else "ltr")
    page.close()


def test_selecting_a_mention_shows_its_details(browser, page_url):
    page = browser.new_page()
    page.goto(page_url + "/")
    _link(page, "en", EMOJI_TEXTS["en"])
    japan = page.locator("#linked .m", has_text="Japan")
    japan.focus()
    page.keyboard.press("Enter")  # keyboard, not only the mouse
    details = page.locator("#details")
    details.locator("#candidates").wait_for()
    assert "Japan" in details.text_content()
    assert "Confidence" in details.text_content() and "country" in details.text_content()
    assert details.locator("#candidates tr").count() >= 2  # a header and at least the chosen candidate
    page.close()


def test_an_empty_text_shows_the_error(browser, page_url):
    page = browser.new_page()
    page.goto(page_url + "/")
    page.fill("#text", "")
    page.click("#link-btn")
    page.wait_for_function("() => document.querySelector('#link-error').textContent.length > 0")
    assert "empty text" in page.text_content("#link-error")
    page.close()


def test_the_second_tab_asks_a_cloze_question(browser, page_url):
    page = browser.new_page()
    page.goto(page_url + "/")
    page.focus("#tab-link")
    page.keyboard.press("ArrowRight")
    assert page.get_attribute("#tab-ask", "aria-selected") == "true"
    page.click("#ask-btn")
    page.wait_for_function(
        "() => document.querySelectorAll('#answers li').length > 0 || document.querySelector('#ask-error').textContent"
    )
    assert page.locator("#answers li").count() >= 1, page.text_content("#ask-error")
    page.close()
