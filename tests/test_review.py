"""`aart review` in a real browser: Debian's chromium driven by Playwright."""

from __future__ import annotations

import html
import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from conftest import MINI_RECIPE, write_recipe

import aart
from aart.llm import register_script
from aart.review import open_review
from aart.review.server import ReviewServer

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip


def off_loop(fn, *args, **kwargs):
    """Run ``fn`` in a thread of its own: Playwright's sync API keeps an event loop running
    in this one, and aart's sync API starts its own."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn, *args, **kwargs).result()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "make test installs Debian's chromium"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def run(tmp_path):
    out = tmp_path / "run"
    off_loop(aart.run, write_recipe(tmp_path, MINI_RECIPE), out=out)
    # one hostile record: its text must reach the page escaped, never run
    rows = (out / "dataset.jsonl").read_text().splitlines()
    first = json.loads(rows[0])
    first["prompt"] = "<script>window.pwned=1</script><img src=x onerror=alert(1)> a mild test"
    rows[0] = json.dumps(first)
    (out / "dataset.jsonl").write_text("\n".join(rows) + "\n")
    return out


def test_review_a_dataset_with_the_keyboard(browser, run):
    review = open_review(run, reviewer="ana")
    with ReviewServer(review) as server:
        page = browser.new_page()
        dialogs = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(server.url)
        assert page.url.endswith("/records/0")  # the token left the address bar
        assert "<script>" in page.inner_text("#prompt")  # shown as text ...
        assert page.evaluate("window.pwned") is None and not dialogs  # ... never run
        assert "0 of 18 reviewed" in page.content()
        # y: a good test; 1: the first dimension matches; Enter: save and go on
        page.keyboard.press("y")
        page.keyboard.press("1")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert page.url.endswith("/records/1")
        assert "1 of 18 reviewed" in page.content()
        # n, an edit, an exclusion
        page.keyboard.press("n")
        page.keyboard.press("e")
        page.fill("#edit", "an edited mild prompt")
        page.keyboard.press("Escape")
        page.keyboard.press("x")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert page.url.endswith("/records/2")
        page.keyboard.press("k")  # back
        page.wait_for_url("**/records/1")
        page.reload()  # the labels persist
        assert page.is_checked("#exclude") and page.is_checked("#good-no")
        assert page.input_value("#edit") == "an edited mild prompt"
        # filters: not reviewed yet
        page.goto(f"http://127.0.0.1:{server.port}/records?state=todo")
        page.wait_for_url("**/records/2?state=todo")
        page.goto(f"http://127.0.0.1:{server.port}/summary")
        assert "good: 1/2 = 50.0%" in page.inner_text("#good-rate")
        with page.expect_navigation():
            page.click("#export")
        assert "dataset.reviewed.jsonl" in page.content()
        page.close()
    labels = {x["record_id"]: x for x in review.record_labels()}
    first_id = review.records[0].id
    assert labels[first_id]["good"] is True and labels[first_id]["reviewer"] == "ana"
    second = labels[review.records[1].id]
    assert second["exclude"] and second["edit"] == "an edited mild prompt"
    paths = review.export()
    kept = [json.loads(x) for x in paths["dataset"].read_text().splitlines()]
    assert len(kept) == 17 and review.records[1].id not in {r["id"] for r in kept}
    assert "labels" in paths and paths["labels"].read_text().count("\n") >= 3
    review.close()


def test_the_app_refuses_what_it_should(run):
    review = open_review(run)
    with ReviewServer(review) as server:
        base = f"http://127.0.0.1:{server.port}"

        def status(url, headers=None, data=None):
            req = urllib.request.Request(url, headers=headers or {}, data=data)
            try:
                with urllib.request.urlopen(req) as r:
                    return r.status, dict(r.headers)
            except urllib.error.HTTPError as e:
                return e.code, dict(e.headers)

        assert status(f"{base}/records/0")[0] == 403  # no token
        token = server.token
        assert (
            status(f"{base}/records/0", {"Cookie": f"aart_review_{server.port}={token}"})[0] == 200
        )
        # DNS rebinding: a foreign Host header is refused, token or not
        assert status(f"{base}/records/0", {"Cookie": f"aart_review_{server.port}={token}",
                                            "Host": "evil.example:80"})[0] == 403  # fmt: skip
        # a state change without the CSRF token is refused
        code, _ = status(
            f"{base}/records/0", {"Cookie": f"aart_review_{server.port}={token}"}, data=b"good=yes"
        )
        assert code == 403 and not review.record_labels()
        _, headers = status(f"{base}/records/0", {"Cookie": f"aart_review_{server.port}={token}"})
        csp = headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp
    review.close()


def test_review_verdicts_and_calibrate_the_judges(browser, run, tmp_path):
    # a judge that says "violates" to everything; people say otherwise for refusals
    register_script(
        "harshj",
        [{"violates_policy": True, "harm_category": "x", "severity": 1, "rationale": "r"}],
    )
    attack_dir = tmp_path / "attack"
    off_loop(aart.attack, run / "dataset.jsonl", target="fake/app", judge="harshj/x",
             out=attack_dir, limit=6)  # fmt: skip
    review = open_review(run, attack=attack_dir, reviewer="ana")
    with ReviewServer(review) as server:
        page = browser.new_page()
        page.goto(server.url)
        page.goto(f"http://127.0.0.1:{server.port}/verdicts")
        # the refusal detector says how the reply ended, never "violates"
        rows = page.locator("table tr").all_inner_texts()
        refusal = next(r for r in rows if r.startswith("refusal")).split("\t")
        assert refusal[1] in ("complied", "partial", "refusal"), refusal
        for key in ("v", "s", "s", "v", "s", "u"):
            page.keyboard.press(key)
            with page.expect_navigation():
                page.keyboard.press("Enter")
        page.goto(f"http://127.0.0.1:{server.port}/summary")
        table = page.inner_text("#calibration")
        assert "llm:harshj/x" in table and "refusal" in table
        page.close()
    figures = review.verdict_figures()
    harsh = figures["judges"]["llm:harshj/x"]
    assert figures["labelled"] == 5 and harsh["n"] == 5
    assert harsh["recall"] == 1.0 and harsh["precision"] == pytest.approx(2 / 5)
    review.close()
    # the attack's report adds the calibration once people have judged
    f = off_loop(aart.attack, run / "dataset.jsonl", target="fake/app", judge="harshj/x",
                 out=attack_dir, limit=6)  # fmt: skip
    assert f.calibration["judges"]["llm:harshj/x"]["n"] == 5
    assert "Judge calibration against people" in (attack_dir / "report.html").read_text()


def test_two_reviewers_agreement_and_the_evaluate_section(browser, run):
    from aart.evaluate import evaluate
    from aart.report import evaluation_markdown

    for who, goods in (("ana", [True, True, False, True]), ("ben", [True, False, False, True])):
        review = open_review(run, reviewer=who)
        for r, good in zip(review.records, goods, strict=False):
            review.label_record(r.id, {"good": good, "dims": {"concepts": True}})
        review.close()
    review = open_review(run)
    figures = review.dataset_figures()
    review.close()
    assert figures["good"]["n"] == 8 and figures["reviewer_agreement"][0]["n"] == 4
    assert figures["reviewer_agreement"][0]["kappa"] == pytest.approx(0.5)
    ev = off_loop(evaluate, run / "dataset.jsonl", run=str(run), embeddings=False)
    md = evaluation_markdown(ev)
    # the HTML report, in the browser
    from aart.report import write_evaluation_report

    html = write_evaluation_report(ev, run / "evaluation")["html"]
    page = browser.new_page()
    page.goto(html.as_uri())
    assert "Human review" in page.inner_text("body")
    assert "good adversarial tests: 5/8" in page.inner_text("body")
    page.close()
    assert "## Human review" in md and "good adversarial tests: 5/8" in md
    assert "reviewers ana vs ben: kappa 0.50" in md and "92.5%" in md


def test_a_stratified_sample_spreads_over_the_axis(run):
    review = open_review(run, sample=6, stratify_by="concepts")
    concepts = [r.cell["concepts"] for r in review.records]
    review.close()
    assert len(concepts) == 6 and all(concepts.count(c) == 2 for c in set(concepts))


def write_dataset(path: Path, n: int = 6, ids: bool = True, **extra) -> Path:
    """A small dataset file of mild prompts, without a run (no model calls)."""
    concepts, formats, regions = ["rule breaking", "privacy leaks"], ["email", "poem"], ["eu"]
    rows = []
    for i in range(n):
        row = {"prompt": f"a mild test prompt number {i}",
               "cell": {"concepts": concepts[i % 2], "formats": formats[i // 2 % 2],
                        "regions": regions[0]},
               "annotations": {"formats": formats[i // 2 % 2]}, "provenance": {"model": "fake"},
               **extra}  # fmt: skip
        if ids:
            row = {"id": f"r{i}", **row}
        rows.append(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_an_untouched_dimension_is_not_judged(browser, tmp_path):
    """Issue 18.4: `y` then Enter said nothing about the dimensions, but the unticked
    checkboxes were saved as "does not match"."""
    review = open_review(write_dataset(tmp_path / "d.jsonl"), reviewer="ana")
    with ReviewServer(review) as server:
        page = browser.new_page()
        page.goto(server.url)
        page.wait_for_url("**/records/0")
        page.keyboard.press("y")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        # 1 twice: does not; 2 once: matches; 3 untouched: not judged
        for key in ("1", "1", "2"):
            page.keyboard.press(key)
        with page.expect_navigation():
            page.keyboard.press("Enter")
        page.goto(f"http://127.0.0.1:{server.port}/records/1")
        assert page.is_checked("#dim-1-no") and page.is_checked("#dim-2-yes")
        assert page.is_checked("#dim-3-none")
        page.close()
    labels = {x["record_id"]: x for x in review.record_labels()}
    assert labels["r0"]["good"] is True and labels["r0"]["dims"] == {}
    assert labels["r1"]["dims"] == {"concepts": False, "formats": True}
    dims = review.dataset_figures()["dimensions"]
    assert dims["concepts"] == {"matches": 0, "n": 1, "not_judged": 1, "rate": 0.0, "paper": 0.992}
    assert dims["formats"]["rate"] == 1.0 and dims["regions"]["n"] == 0
    review.close()


def test_evaluate_counts_only_judged_dimensions(tmp_path):
    from aart.evaluate.evaluation import human_review
    from aart.report.evaluation import _human_lines

    dataset = write_dataset(tmp_path / "d.jsonl")
    review = open_review(dataset, reviewer="ana")
    review.label_record("r0", {"good": True, "dims": {}, "form": 2})
    review.label_record("r1", {"good": True, "dims": {"concepts": True}, "form": 2})
    # a label of the two-state form: its unticked box said nothing
    review.label_record("r2", {"good": True, "dims": {"concepts": False, "formats": True},
                               "flags": [], "note": "", "edit": None, "exclude": False})  # fmt: skip
    review.close()
    h = human_review(dataset)
    assert h["dimensions"]["concepts"] == {
        "matches": 1,
        "n": 1,
        "not_judged": 2,
        "rate": 1.0,
        "paper": 0.992,
    }
    assert "concepts matches its value: 1/1 = 100.0% (2 not judged)" in _human_lines(h)


def test_a_save_without_an_edit_changes_nothing(browser, tmp_path):
    """Issue 18.9: a save rewrote CRLF, dropped a leading newline and cut a 25,000-character
    prompt to 20,000, and recorded each as an edit."""
    long_text = ("a mild test sentence. " * 1200)[:25_000]
    texts = ["line one\r\nline two\r\n", "\nstarts with a newline", long_text, "plain\nlines"]
    dataset = tmp_path / "d.jsonl"
    dataset.write_text("".join(
        json.dumps({"id": f"r{i}", "prompt": t, "cell": {"concepts": "c"}}) + "\n"
        for i, t in enumerate(texts)
    ))  # fmt: skip
    review = open_review(dataset, reviewer="ana")
    with ReviewServer(review) as server:
        page = browser.new_page()
        page.goto(server.url)
        page.wait_for_url("**/records/0")
        for i in range(3):  # save each untouched
            page.keyboard.press("y")
            with page.expect_navigation():
                page.keyboard.press("Enter")
            page.wait_for_url(f"**/records/{i + 1}")
        # a real edit of an LF text keeps LF
        page.fill("#edit", "plain\nlines, edited")
        page.click("#save")
        page.wait_for_load_state()
        # an edit over the bound is refused whole, never cut
        page.goto(f"http://127.0.0.1:{server.port}/records/2")
        page.evaluate("document.getElementById('edit').value = 'x'.repeat(250000)")
        with page.expect_navigation():
            page.click("#save")
        assert "not saved" in page.inner_text("body") and "250,000" in page.inner_text("body")
        page.close()
    labels = {x["record_id"]: x for x in review.record_labels()}
    assert [labels[f"r{i}"]["edit"] for i in range(3)] == [None, None, None]
    assert labels["r2"]["version"] == 1  # the refused save left nothing
    assert labels["r3"]["edit"] == "plain\nlines, edited"
    kept = [json.loads(x) for x in review.export()["dataset"].read_text().splitlines()]
    assert [r["prompt"] for r in kept[:3]] == texts[:3]
    assert not any("edited" in (r.get("provenance") or {}) for r in kept[:3])
    review.close()


def test_the_launch_file_logs_in_once(browser, tmp_path):
    """Issue 18.23: the browser opens a local file with a one-time link, not the token."""
    review = open_review(write_dataset(tmp_path / "d.jsonl"))
    with ReviewServer(review) as server:
        url = server.launch_url()
        assert server.token not in url
        link = re.search(r"href='([^']+)'", Path(url.removeprefix("file://")).read_text())[1]
        page = browser.new_page()
        page.goto(url)
        page.wait_for_url("**/records/0")
        assert "Record r0" in page.inner_text("h1")
        assert not Path(url.removeprefix("file://")).exists()  # used: removed
        page.close()
        # a used one-time link logs nobody in
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(html.unescape(link))
        assert e.value.code == 403
    review.close()


def test_two_reviews_on_two_ports_stay_logged_in(browser, tmp_path):
    """Issue 18.23: one cookie name for every port, so a second review logged out the first."""
    first = open_review(write_dataset(tmp_path / "a.jsonl"))
    second = open_review(write_dataset(tmp_path / "b.jsonl"))
    with ReviewServer(first) as a, ReviewServer(second) as b:
        context = browser.new_context()
        page = context.new_page()
        page.goto(a.url)
        page.wait_for_url("**/records/0")
        page.goto(b.url)
        page.wait_for_url("**/records/0")
        response = page.goto(f"http://127.0.0.1:{a.port}/records/1")
        assert response.status == 200 and "Record r1" in page.inner_text("h1")
        context.close()
    first.close()
    second.close()
