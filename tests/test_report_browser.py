"""mua-gym report in a real browser (Debian's chromium through Playwright): the page draws, a click on a task
opens its transcript, a message's script text stays text, and the console stays clean.

Without chromium or playwright the test skips, unless MUA_GYM_REQUIRE_BROWSER=1 (CI) makes that a failure.
``python tests/test_report_browser.py docs/report.png`` remakes the screenshot the README shows.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from mua_gym.eval.evaluate import EvalConfig, evaluate, read_run
from mua_gym.eval.report import write_report

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
SCRIPT = "<script>window.mua_pwned = 1</script>"


def _chromium() -> str:
    """The chromium executable, or a skip (a failure under MUA_GYM_REQUIRE_BROWSER=1) naming what is missing."""
    path = "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else shutil.which("chromium")
    missing = []
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the playwright package (pip install playwright)")
    if not path:
        missing.append("chromium (apt-get install chromium)")
    if missing:
        reason = "the browser test needs " + " and ".join(missing)
        if os.environ.get("MUA_GYM_REQUIRE_BROWSER") == "1":
            pytest.fail(reason + " (MUA_GYM_REQUIRE_BROWSER=1)")
        pytest.skip(reason)
    return str(path)


def realistic_run(folder: Path, num_tasks: int = 8, trials: int = 3, perturb: str | None = None) -> Path:
    """A real run that fails some tasks: the fair agent with the scripted user on Retail (it fails the two-request
    'multi' tasks) and Mock, a few trials each; ``perturb`` (tool faults, say) makes some tasks flip."""
    evaluate(EvalConfig(env_ids=["mua/Retail-v0", "mua/Mock-v0"], agent="fair", user="scripted", trials=trials,
                        num_tasks=num_tasks, perturb=perturb), out=folder)
    return folder


def _pixels(png: bytes):
    from matplotlib.image import imread

    return imread(io.BytesIO(png), format="png")


def test_the_report_draws_opens_transcripts_and_runs_nothing(tmp_path):
    executable = _chromium()
    from playwright.sync_api import sync_playwright

    folder = realistic_run(tmp_path / "run", num_tasks=6, trials=2)
    results = folder / "episodes.jsonl"
    lines = [json.loads(x) for x in results.read_text().splitlines()]
    hostile = next(x for x in lines if x["trial"] == 0)  # the episode its task's link opens
    hostile["trajectory"]["entries"][0]["message"]["content"] += " " + SCRIPT
    results.write_text("".join(json.dumps(x) + "\n" for x in lines))
    run = read_run(folder)
    page_path = write_report(folder)
    failing = sorted({r.task_id for r in run.results if not r.success})
    assert failing, "the run must fail some task"

    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1400})
            page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
            page.goto(page_path.resolve().as_uri())

            pixels = _pixels(page.screenshot(full_page=False))
            assert pixels.shape[:2] == (1400, 1280)
            rgb = pixels[..., :3].reshape(-1, 3)
            assert rgb.std() > 0.1 and len({tuple(c) for c in (rgb[::7] * 255).round().astype(int)}) > 100
            sections = page.locator("section.mua-ep")
            assert sections.count() == len(run.results)
            assert not any(sections.nth(i).is_visible() for i in range(sections.count()))
            assert page.locator("svg.mua-plot").count() == 3 and page.locator("svg.mua-plot").first.is_visible()

            page.get_by_role("link", name=failing[0], exact=True).click()
            opened = page.locator("section.mua-ep:target")
            assert opened.count() == 1 and opened.is_visible()
            assert failing[0] in opened.locator("h3").inner_text()
            assert opened.get_by_text("Final world against gold").is_visible()
            assert opened.locator("td.mua-was").first.is_visible()  # the failed episode's diff, on screen
            first = opened.get_attribute("id")

            page.locator("a.mua-cell.mua-c-p").first.click()
            assert page.locator("section.mua-ep:target").is_visible()
            assert page.locator("section.mua-ep:target").get_attribute("id") != first
            assert not page.locator(f"#{first}").is_visible()  # one transcript at a time

            page.get_by_role("link", name=hostile["task_id"], exact=True).click()
            user = page.locator("section.mua-ep:target .mua-user pre").first
            assert SCRIPT in user.inner_text()  # shown as text ...
            assert page.evaluate("typeof window.mua_pwned") == "undefined"  # ... and never run
        finally:
            browser.close()
    assert not problems, problems


def screenshot(out: Path) -> None:
    """Writes the screenshot of a realistic run's report (its top: overview, pass^k, categories, matrix)."""
    import tempfile

    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        page_path = write_report(realistic_run(Path(tmp) / "run", num_tasks=10, trials=4, perturb="tool_faults"))
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=_chromium(), headless=True, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1500})
            page.goto(page_path.resolve().as_uri())
            page.screenshot(path=str(out))
            browser.close()


if __name__ == "__main__":
    screenshot(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/report.png"))
