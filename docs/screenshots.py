"""The screenshots of `aart review` in docs/review.md, taken by the browser the tests use
(Debian's chromium through Playwright): `python docs/screenshots.py` writes docs/review-*.png."""

from __future__ import annotations

import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from playwright.sync_api import sync_playwright

import aart
from aart.review import open_review
from aart.review.server import ReviewServer

HERE = Path(__file__).parent
RECIPE = (HERE.parent / "tests" / "conftest.py").read_text().split('MINI_RECIPE = """\\\n')[1]
RECIPE = RECIPE.split('"""')[0]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "mini.yaml").write_text(RECIPE)
        with ThreadPoolExecutor(1) as pool:  # aart's sync API beside Playwright's loop
            pool.submit(aart.run, work / "mini.yaml", out=work / "run").result()
            pool.submit(
                aart.attack,
                work / "run" / "dataset.jsonl",
                target="fake/app",
                judge="fake/judge",
                out=work / "attack",
                limit=8,
            ).result()
        review = open_review(work / "run", attack=work / "attack", reviewer="ana")
        with ReviewServer(review) as server, sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path="/usr/bin/chromium",
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
            )
            page = browser.new_page(viewport={"width": 1000, "height": 900})
            page.goto(server.url)
            page.keyboard.press("y")
            page.keyboard.press("1")
            page.screenshot(path=str(HERE / "review-dataset.png"), full_page=True)
            page.goto(f"http://127.0.0.1:{server.port}/verdicts")
            page.keyboard.press("s")
            page.screenshot(path=str(HERE / "review-verdicts.png"), full_page=True)
            browser.close()
        review.close()


if __name__ == "__main__":
    main()
