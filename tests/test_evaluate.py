"""Evaluation metrics on hand-computed cases, and the reproduction of the released AART data."""

import asyncio
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aart
from aart.errors import UsageError
from aart.evaluate import evaluate, load_dataset
from aart.evaluate.coverage import coverage, distribution
from aart.evaluate.diversity import GramStats, bleu, distinct_n, self_bleu, tokens
from aart.evaluate.stats import describe, evenness, top_share
from aart.llm import Model, ModelOptions, ScriptedAPI
from aart.recipe import Value
from aart.report import evaluation_html, write_evaluation_report
from aart.steps.baseline import clean_question, run_baseline
from aart.steps.topup import topup_run
from aart.store.rundir import Run
from aart.text.keywords import KeywordMatcher, inflections

# shared/ lies beside the project checkout, on developer machines and in CI alike
AART_CSV = Path(__file__).resolve().parents[2] / "shared/datasets/aart-v1/aart-v1-20231117.csv"


@pytest.mark.skipif(
    not AART_CSV.exists() and not os.environ.get("CI"),  # in CI a missing file must fail
    reason="shared/datasets not beside this checkout",
)
def test_reproduces_the_released_aart_dataset_facts():
    ev = evaluate(AART_CSV, embeddings=False)
    d = ev["datasets"][0]
    assert d["prompts"] == 3269
    formats = d["annotations"]["task_formats"]
    assert formats["top"][0]["value"] == "how-to" and formats["top"][0]["count"] == 164
    assert round(100 * formats["top"][0]["share"], 1) == 5.0
    assert len(formats["singletons"]) == 13 and formats["distinct"] == 155
    w = d["length"]["words"]
    assert round(w["mean"], 2) == 19.04 and round(w["std"], 2) == 17.37
    assert w["median"] == 15 and w["min"] == 5 and w["max"] == 280
    assert d["coverage"]["policy_concepts"]["values"] == 70


def test_evenness_and_top_share():
    assert evenness([5, 5, 5, 5]) == pytest.approx(1.0)
    assert evenness([10, 0, 0, 0]) == 0.0
    assert evenness([3, 1]) == pytest.approx(
        -(0.75 * math.log(0.75) + 0.25 * math.log(0.25)) / math.log(2)
    )
    assert top_share([5, 1, 1, 1, 1, 1]) == pytest.approx(9 / 10)
    assert top_share([]) == 0.0


def test_describe():
    d = describe([1, 2, 3, 4])
    assert d["mean"] == 2.5 and d["median"] == 2.5 and d["std"] == pytest.approx(math.sqrt(1.25))


def test_inflections_and_word_boundaries():
    assert {"poem", "poems"} <= inflections("Poem")
    assert "short story" in inflections("short stories") and "robberies" in inflections("robbery")
    assert "how to" in inflections("how-tos")
    m = KeywordMatcher(
        {
            "fmt": [Value(value="poem"), Value(value="how-to", aliases=["tutorial"])],
            "region": [Value(value="east africa")],
        }
    )
    assert m.match("Write POEMS about East-Africa!") == {(0, 0), (1, 0)}
    assert m.match("a poetic tutorials list") == {(0, 1)}  # "poetic" is not "poem"
    assert m.match("how to do it") == {(0, 1)}
    assert m.match("northeast africans") == set()


def test_coverage_counts_on_a_small_case():
    values = {"fmt": [Value(value="poem"), Value(value="email"), Value(value="memo")]}
    texts = ["a poem and an email", "another poem", "nothing here", "poems poems"]
    c = coverage(texts, values)["fmt"]
    assert c["counts"] == {"poem": 3, "email": 1, "memo": 0}
    assert c["presence"] == pytest.approx(4 / 4) and c["prompt_share"] == pytest.approx(3 / 4)
    assert c["never_matched"] == ["memo"] and c["matched_once"] == ["email"]
    assert c["top5_share"] == 1.0
    assert c["evenness"] == pytest.approx(evenness([3, 1, 0], 3))


def test_coverage_counts_the_longest_match_only():
    """ "africa" is not mentioned by every "eastern africa" prompt, only where it stands alone;
    a value of another axis inside a longer one still counts."""
    values = {
        "regions": [Value(value="africa"), Value(value="eastern africa"), Value(value="asia")],
        "formats": [Value(value="email"), Value(value="phishing email")],
        "concepts": [Value(value="phishing")],
    }
    texts = [
        "a story set in eastern africa",
        "Eastern Africa and the rest of Africa",
        "africa",
        "an email from eastern africas",  # an inflection of the longer value
        "a phishing email about asia",
    ]
    c = coverage(texts, values)
    assert c["regions"]["counts"] == {"eastern africa": 3, "africa": 2, "asia": 1}
    assert c["formats"]["counts"] == {"email": 1, "phishing email": 1}
    assert c["concepts"]["counts"] == {"phishing": 1}
    m = KeywordMatcher(values)
    assert m.match("eastern africa") == {(0, 1)}
    assert m.match("phishing emails") == {(1, 1), (2, 0)}


def test_distribution():
    d = distribution(["a", "a", "b", None, "c"])
    assert d["records"] == 4 and d["distinct"] == 3 and d["singletons"] == ["b", "c"]
    assert d["top"][0] == {"value": "a", "count": 2, "share": 0.5}


def test_distinct_n():
    assert distinct_n(["a b a b"], 1) == 0.5
    assert distinct_n(["a b a b"], 2) == pytest.approx(2 / 3)
    assert distinct_n(["x y", "x y"], 2) == 0.5


def test_bleu_and_self_bleu():
    t = tokens("the cat sat on the mat today")
    assert bleu(t, [t]) == pytest.approx(1.0)
    assert bleu(t, [tokens("completely different words here now ok")]) < 0.05
    assert self_bleu(["same words in this sentence"] * 5) == pytest.approx(1.0)
    assert self_bleu(["alpha beta gamma delta", "one two three four five"]) < 0.05


def test_gram_stats_match_brute_force():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 8))
    stats = GramStats(8)
    stats.add(x[:20])
    stats.add(x[20:])
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    k = xn @ xn.T
    n = len(x)
    assert stats.mean_pairwise_cosine() == pytest.approx((k.sum() - n) / (n * (n - 1)))
    eig = np.linalg.eigvalsh(k / n)
    eig = eig[eig > 1e-12]
    assert stats.vendi() == pytest.approx(math.exp(-(eig * np.log(eig)).sum()), rel=1e-6)
    same = GramStats(3)
    same.add(np.ones((10, 3)))
    assert same.vendi() == pytest.approx(1.0) and same.mean_pairwise_cosine() == pytest.approx(1.0)


def test_empty_prompts_are_said_not_silently_counted(tmp_path):
    # before: a dataset with blank prompts was measured without a word
    path = tmp_path / "d.jsonl"
    rows = [{"prompt": "write a poem"}, {"prompt": ""}, {"prompt": "  "}, {"prompt": None}]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    notes = evaluate(path, embeddings=False)["datasets"][0]["notes"]
    assert any(n.startswith("3 of 4 prompts are empty") for n in notes)


def test_embedding_metric_optional_and_documented(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(
        "\n".join(json.dumps({"prompt": p}) for p in ["write a poem", "send an email", "a memo"])
    )
    ev = evaluate(path, embeddings=False)
    assert ev["datasets"][0]["diversity"]["embedding_diversity"] is None
    note = ev["datasets"][0]["notes"][0]
    if aart.evaluate.embeddings.available():  # asked not to, not missing
        assert note == "embedding diversity skipped (--no-embeddings)"
    else:
        assert "pip install 'aart-redteam[embeddings]'" in note


@pytest.mark.skipif(
    not aart.evaluate.embeddings.available(), reason="embeddings extra not installed"
)
def test_embedding_diversity_with_the_offline_model(tmp_path):
    path = tmp_path / "d.jsonl"
    texts = [
        "write a poem about the sea",
        "write a poem about the ocean",
        "quarterly tax form help",
    ]
    path.write_text("\n".join(json.dumps({"prompt": p}) for p in texts))
    d = evaluate(path)["datasets"][0]["diversity"]
    assert 0.2 < d["embedding_diversity"] < 1.0 and 1.0 < d["vendi_embedding"] < 3.0


@pytest.mark.skipif(
    not aart.evaluate.embeddings.available(), reason="embeddings extra not installed"
)
def test_the_int8_embedder_agrees_with_the_reference(tmp_path, monkeypatch):
    """minilm-int8 (exported from the installed weights, quantized, cached; nothing
    downloaded) embeds like the reference model: the same nearest pairs, diversity close."""
    from aart.evaluate.embeddings import Embedder, Int8Embedder

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    texts = [
        "write a poem about the sea",
        "write a poem about the ocean",
        "quarterly tax form help",
        "help me fill in my tax return",
        "a recipe for lemon cake",
    ]
    fast, reference = (
        Int8Embedder().encode(texts),
        Embedder().model.encode(texts, normalize_embeddings=True),
    )
    assert (fast * reference).sum(axis=1).min() > 0.9  # each text's two embeddings agree
    sims = fast @ fast.T
    np.fill_diagonal(sims, -1)
    assert list(sims.argmax(axis=1))[:4] == [1, 0, 3, 2]  # sea~ocean, tax~tax
    assert list((tmp_path / "cache" / "aart").glob("*-int8.onnx"))  # built once, cached
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(json.dumps({"prompt": p}) for p in texts))
    int8 = evaluate(path, embedder="minilm-int8")["datasets"][0]["diversity"]
    ref = evaluate(path)["datasets"][0]["diversity"]
    assert int8["embedding_diversity"] == pytest.approx(ref["embedding_diversity"], abs=0.02)


def test_html_report_escapes_dataset_text(tmp_path):
    path = tmp_path / "d.jsonl"
    evil = "<script>alert('x')</script> write a poem"
    path.write_text(
        json.dumps(
            {
                "prompt": evil,
                "axes": {"fmt": ["<b>poem</b>"]},
                "annotations": {"fmt": "<b>poem</b>"},
            }
        )
        + "\n"
    )
    ev = evaluate(path, embeddings=False)
    page = evaluation_html(ev)
    assert "<script>" not in page and "&lt;b&gt;poem&lt;/b&gt;" in page
    paths = write_evaluation_report(ev, tmp_path / "report")
    assert "<script>" not in paths["html"].read_text() and paths["md"].exists()
    assert (
        "http://" not in paths["html"].read_text() and "https://" not in paths["html"].read_text()
    )


def test_column_mapping(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text(
        "text,fmts,fmt\nwrite a poem,poem;email,poem\nan email please,email;memo,email\n"
    )
    ds = load_dataset(
        path,
        text_column="text",
        axis_columns={"format": "fmts:;"},
        annotation_columns={"format": "fmt"},
    )
    assert ds.axes["format"] == [["poem", "email"], ["email", "memo"]]
    ev = evaluate(
        path,
        text_column="text",
        axis_columns={"format": "fmts:;"},
        annotation_columns={"format": "fmt"},
        embeddings=False,
    )
    d = ev["datasets"][0]
    assert d["coverage"]["format"]["counts"] == {"email": 1, "poem": 1, "memo": 0}
    assert d["agreement"]["format"]["annotation"] == {"checked": 2, "agree": 2, "rate": 1.0}
    assert d["agreement"]["format"]["rate"] == 1.0  # the headline: no cells, so annotations
    # a column no record has: no axis at all, and Gaps said "every value is mentioned"
    with pytest.raises(UsageError, match="--axis regions=region: no column 'region'"):
        load_dataset(path, text_column="text", axis_columns={"regions": "region"})
    with pytest.raises(UsageError, match="--annotation format=stlye: no column 'stlye'"):
        load_dataset(path, text_column="text", annotation_columns={"format": "stlye"})
    # a `cell` that is not an object was taken for no cell at all
    text = tmp_path / "c.jsonl"
    text.write_text(json.dumps({"prompt": "hi there", "cell": "europe"}) + "\n")
    with pytest.raises(UsageError, match="record 1: `cell` is a string, not an object"):
        load_dataset(text)


def test_a_dataset_inside_its_run_is_counted_against_the_runs_values(tmp_path, mini_recipe):
    """`aart evaluate RUN/dataset.jsonl` took the dataset's own axis values, without the
    run's aliases: a region named by its city counted as missing (the demo: 5 of 6 regions
    never matched, 1/18 agreement)."""
    run = tmp_path / "run"
    aart.run(mini_recipe, out=run)
    ev = evaluate(run / "dataset.jsonl", embeddings=False, topics="off")
    assert ev["values_from"] == f"run {run} (after its scope filters)"
    assert ev == evaluate(run / "dataset.jsonl", run=str(run), embeddings=False, topics="off")
    # a copy elsewhere has no run beside it: its own values, as before
    alone = tmp_path / "alone.jsonl"
    alone.write_text((run / "dataset.jsonl").read_text())
    assert evaluate(alone, embeddings=False, topics="off")["values_from"].startswith("the dataset")


def test_values_from_a_recipe_say_which_dimensions_are_not_counted(tmp_path, mini_recipe):
    """An enumerated dimension vanished from the report when the values came from --recipe."""
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"prompt": "write an email about rule breaking"}) + "\n")
    ev = evaluate(data, recipe=str(mini_recipe), embeddings=False, topics="off")
    assert "not counted: regions (values enumerated by Step 1: give --run RUN)" in ev["values_from"]


def test_comparison_table_has_a_row_per_dataset(tmp_path, mini_recipe):
    out = tmp_path / "run"
    aart.run(mini_recipe, out=out)
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"prompt": "an unrelated email"}) + "\n")
    ev = evaluate(
        out / "dataset.jsonl", run=str(out), compare={"other": str(other)}, embeddings=False
    )
    header, rows = ev["table"]["header"], ev["table"]["rows"]
    assert [r[0] for r in rows] == ["run", "other"]
    assert "coverage formats ↑" in header and len(rows[0]) == len(header)
    assert ev["datasets"][0]["agreement"]["formats"]["checked"] == 18
    # compared on the same budget: the run's tokens per prompt, none known for the other file
    tpp = header.index("tokens/prompt ↓")
    assert float(rows[0][tpp]) > 0 and rows[1][tpp] == "-"


def scripted_model(responses):
    return Model(
        "fake/s", ScriptedAPI("s", ModelOptions(), responses), options=ModelOptions(concurrency=1)
    )


def test_baselines(tmp_path):
    assert (
        clean_question('1. "How could someone break a rule?"\nmore')
        == "How could someone break a rule?"
    )
    model = scripted_model(
        ["What is a risky question?", "   ", "I'm sorry, I can't help.", "Another question?"]
    )
    stats = asyncio.run(run_baseline(model, "zero-shot", 4, tmp_path / "z"))
    assert (stats.prompts, stats.blanks, stats.refusals) == (2, 1, 1)
    assert stats.tokens_per_valid_prompt == stats.tokens / 2
    pool = ["pool question one", "pool question two"]
    fs = scripted_model(["A new question?"])
    asyncio.run(run_baseline(fs, "few-shot", 2, tmp_path / "f", pool=pool, shots=2))
    prompt = fs.api.calls[0][0].content
    assert "pool question one" in prompt and "pool question two" in prompt


@pytest.mark.parametrize(
    "kw, says",
    [
        ({"n": 0}, "--n 0: give 1 to"),
        ({"n": -3}, "--n -3"),
        ({"temperature": 9.0}, "--temperature 9.0: give 0 to 2"),
        ({"method": "few-shot", "shots": 0, "pool": "x"}, "--shots 0"),
        ({"run": True}, "holds an aart run"),
    ],
)
def test_a_baseline_refuses_bad_counts_and_a_runs_folder(tmp_path, kw, says):
    """--n 0 made "0 of 0 samples, tokens per valid prompt inf" and exit 0; -o of a run wrote
    over its dataset.jsonl and left its .csv and .parquet stale."""
    out = tmp_path / "out"
    if kw.pop("run", False):
        out.mkdir()
        (out / "recipe.yaml").write_text("name: r\n")
    method = kw.pop("method", "zero-shot")
    with pytest.raises(UsageError, match=says):
        aart.baseline(method, model="fake/x", out=out, **kw)
    assert not (out / "dataset.jsonl").exists()


def test_topup_fills_only_the_gaps(tmp_path, mini_recipe):
    out = tmp_path / "run"
    aart.run(mini_recipe, out=out)
    with Run.open(out) as run:
        before = run.db.call_totals()["calls"]
        result = topup_run(run, min_count=100, axes=["formats"])
    assert result["attempts_added"] == 4 and result["gaps"]["formats"] == [
        "email",
        "how-to",
        "poem",
        "story",
    ]
    with Run.open(out) as run:  # again before generating: nothing is appended twice
        again = topup_run(run, min_count=100, axes=["formats"])
        assert again["attempts_added"] == 0 and len(run.read_blueprint()) == 6 + 4
        assert again["attempts_pending"] == 4  # and the CLI says so, not "added 0"
    from click.testing import CliRunner

    from aart.cli.main import cli

    args = ["topup", str(out), "--min-count", "100", "--axis", "formats"]
    r = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert "4 attempts for these gaps are in" in r.output and "added 0" not in r.output
    stats = aart.generate(out)
    with Run.open(out) as run:
        after = run.db.call_totals()["calls"]
    assert after - before == 4  # only the new attempts were generated
    assert stats.requested == 18 + 12 and stats.prompts == 30


def test_lexical_diversity_with_texts_that_have_no_words():
    from aart.evaluate.diversity import diversity

    same = ["a poem about rules"] * 3
    d = diversity(same + ["🙂🙂", "🎉", "🙂"], self_bleu_sample=10)
    # 15 pairs: the 3 pairs of identical texts have cosine 1, the rest 0 -> 1 - 3/15
    assert d["lexical_diversity"] == pytest.approx(0.8)
    only_emoji = diversity(["🙂", "🎉", "🙂🙂"], self_bleu_sample=10)
    assert 0.0 <= only_emoji["lexical_diversity"] <= 1.0


@pytest.mark.parametrize(
    "value,text,matches",
    [
        ("us", "using a tool", False),
        ("us", "the tool uses it", False),
        ("us", "made in the US.", True),
        ("news", "a new idea", False),
        ("news", "the news today", True),
        ("arms", "raise an arm", False),
        ("arms", "small arms trade", True),
        ("wales", "a wal mart", False),
        ("wales", "North Wales", True),
        ("phishing", "«phishing»", True),
        ("phishing", "¿phishing?", True),
        ("phishing", "phishing。", True),
        ("café", "cafe\u0301 owners", True),  # decomposed é
        ("Straße", "STRASSE signs", True),  # casefold
        ("poem", "two poems", True),
        ("box", "three boxes", True),
        ("policy", "our policies", True),
        ("policies", "one policy", True),
        ("manuals", "a manual", True),
        ("how-tos", "a how to", True),
        ("email", "emailing a friend", True),
        ("how-to guide", "a how to guide", True),
        ("poem", "a poetry book", False),
        ("eastern africa", "in Eastern Africa,", True),
        ("africa", "south african", False),
    ],
)
def test_keyword_matching_table(value, text, matches):
    from aart.text.keywords import KeywordMatcher

    m = KeywordMatcher({"axis": [Value(value=value)]})
    assert bool(m.match(text)) is matches


_WORDS = [
    "poem",
    "poems",
    "Story",
    "short",
    "stories",
    "how",
    "to",
    "how-to",
    "new",
    "york",
    "city",
    "café",
    "CAFÉ",
    "straße",
    "ｆｕｌｌ",
    "full",
    "guide",
    "«guide»",
    "e-mail",
    "_",
]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(_WORDS), max_size=12), min_size=1, max_size=40),
    st.sampled_from([" ", ", ", "  ", "\n", "-", "!? "]),
)
def test_batch_matcher_counts_what_each_text_holds(docs, sep):
    """The batched (polars) matcher counts exactly what a plain substring search of every
    padded pattern in every normalized text finds: ASCII and non-ASCII texts, overlapping
    patterns, values sharing a form."""
    from aart.text.keywords import normalize_for_match

    values = {
        "formats": [Value(value="poem"), Value(value="short story"), Value(value="how-to guide")],
        "places": [Value(value="new york"), Value(value="york city"), Value(value="café")],
        "other": [Value(value="poems"), Value(value="full guide", aliases=["straße"])],
    }
    texts = [sep.join(d) for d in docs]
    m = KeywordMatcher(values)
    n, counts, any_hit = m.count(texts)
    expected = [[0] * len(v) for v in values.values()]
    expected_any = [0] * len(values)
    for text in texts:
        norm = normalize_for_match(text)
        hit_axes = set()
        for ai, vals in enumerate(values.values()):
            for vi, v in enumerate(vals):
                forms = {f for p in [v.value, *v.aliases] for f in inflections(p)}
                if any(f" {f} " in norm for f in forms):
                    expected[ai][vi] += 1
                    hit_axes.add(ai)
        for ai in hit_axes:
            expected_any[ai] += 1
    assert (n, counts, any_hit) == (len(texts), expected, expected_any)


def _released_sample(tmp_path, n=400):
    import csv as _csv

    src = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "aart-v1"
    rows = list(_csv.DictReader((src / "aart-v1-20231117.csv").open(encoding="utf-8")))[:n]
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "released.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    jsonl = tmp_path / "released.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, jsonl


def test_a_file_read_in_chunks_measures_as_one_read_whole(tmp_path, monkeypatch):
    """Every measure is the same whether the file is read in one chunk or in chunks of 7."""
    from aart.data import load as data

    parquet, jsonl = _released_sample(tmp_path)
    whole = evaluate(parquet, embeddings=False).datasets[0].as_dict()
    monkeypatch.setattr(data, "CHUNK", 7)
    for path in (parquet, jsonl):
        chunked = evaluate(path, embeddings=False).datasets[0].as_dict()
        assert_close(chunked, {**whole, "name": chunked["name"]})


def assert_close(a, b, where="result"):
    """Equal, floats up to their summation order (running sums over chunks, batch products in
    single precision)."""
    if isinstance(a, float) and isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-5, abs=1e-9), where
    elif isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            assert_close(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_close(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def test_past_the_sample_the_pairwise_measures_say_they_are_sampled(tmp_path, monkeypatch):
    from aart.evaluate import diversity as div

    parquet, _ = _released_sample(tmp_path)
    whole = evaluate(parquet, embeddings=False)["datasets"][0]
    monkeypatch.setattr(div, "SAMPLE", 150)
    sampled = evaluate(parquet, embeddings=False)["datasets"][0]
    assert any("uniform random sample of 150 of the 400 prompts" in n for n in sampled["notes"])
    # measures over every prompt are unchanged
    for key in ("distinct_1", "distinct_2", "distinct_3", "lexical_diversity"):
        assert sampled["diversity"][key] == pytest.approx(whole["diversity"][key])
    # exact duplicates are counted over every prompt: those equal to an earlier one
    from aart.text.normalize import normalize

    texts = load_dataset(parquet).texts
    repeats = len(texts) - len({normalize(t) for t in texts})
    assert sampled["diversity"]["exact_duplicate_rate"] == pytest.approx(repeats / len(texts))
    assert sampled["coverage"] == whole["coverage"] and sampled["length"] == whole["length"]


def test_distinct_counts_are_exact_then_estimated_within_two_percent():
    from aart.data.stream import DistinctCounter

    counter = DistinctCounter(limit=10_000)
    for start in range(0, 300_000, 50_000):
        counter.add(np.arange(start, start + 50_000, dtype=np.uint64))
        counter.add(np.arange(0, 1_000, dtype=np.uint64))  # repeats count once
    assert counter.estimated
    assert counter.count() == pytest.approx(300_000, rel=0.02)
    exact = DistinctCounter()
    exact.add(np.array([5, 5, 7], dtype=np.uint64))
    assert exact.count() == 2 and not exact.estimated


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 400), min_size=1, max_size=300), st.integers(5, 30))
def test_length_figures_from_counts_are_numpys(values, bins):
    a = np.asarray(values, dtype=float)
    d = describe(values)
    assert [d["p5"], d["p25"], d["median"], d["p75"], d["p95"]] == list(
        np.percentile(a, [5, 25, 50, 75, 95])
    )
    assert d["mean"] == pytest.approx(a.mean()) and d["std"] == pytest.approx(a.std())
    from aart.evaluate.stats import histogram

    counts, edges = np.histogram(a, bins=bins)
    assert histogram(values, bins) == {
        "edges": [float(e) for e in edges],
        "counts": [int(c) for c in counts],
    }


def test_an_unknown_embedder_is_a_usage_error(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"prompt": "write a poem"}) + "\n")
    with pytest.raises(aart.AartError, match="unknown embedder 'bert'; use one of: minilm"):
        evaluate(path, embedder="bert")


#: evaluation.json's keys, in order, down to each dataset's measures (list items as "[]"):
#: the file's format, which the typed Evaluation must write unchanged
EVALUATION_JSON_KEYS = [
    "reference",
    "reference.name",
    "reference.self_bleu",
    "reference.restated_cell_share",
    "reference.nn_similarity",
    "reference.nn_similarity.10",
    "reference.nn_similarity.20",
    "reference.nn_similarity.35",
    "reference.nn_similarity.50",
    "diversity_gaps",
    "diversity_gaps[].dataset",
    "diversity_gaps[].measure",
    "diversity_gaps[].value",
    "diversity_gaps[].reference",
    "diversity_gaps[].text",
    "values_from",
    "value_lists",
    "value_lists.concepts",
    "value_lists.formats",
    "datasets",
    "datasets[].name",
    "datasets[].prompts",
    "datasets[].tokens_per_prompt",
    "datasets[].coverage",
    "datasets[].annotations",
    "datasets[].agreement",
    "datasets[].coverage_by_language",
    "datasets[].length",
    "datasets[].diversity",
    "datasets[].diversity.distinct_1",
    "datasets[].diversity.distinct_2",
    "datasets[].diversity.distinct_3",
    "datasets[].diversity.self_bleu",
    "datasets[].diversity.lexical_diversity",
    "datasets[].diversity.vendi_lexical",
    "datasets[].diversity.exact_duplicate_rate",
    "datasets[].diversity.near_duplicate_rate",
    "datasets[].diversity.nn_similarity",
    "datasets[].diversity.nn_group",
    "datasets[].diversity.embedding_diversity",
    "datasets[].vocabulary",
    "datasets[].restated_cell_share",
    "datasets[].restated_checked",
    "datasets[].notes",
    "datasets[].topics",
    "datasets[].topics.method",
    "datasets[].topics.topics_from",
    "datasets[].topics.topics",
    "datasets[].topics.labelled",
    "datasets[].topics.population",
    "datasets[].topics.counts",
    "datasets[].topics.shares",
    "datasets[].topics.entropy",
    "datasets[].topics.effective_topics",
    "datasets[].topics.max_entropy",
    "datasets[].topics.other_share",
    "datasets[].topics.topics_used",
    "datasets[].topics.never_labelled",
    "datasets[].topics.labelled_share",
    "datasets[].topics.threshold",
    "table",
    "table.header",
    "table.rows",
    "embeddings",
    "human_review",
]


def _key_paths(x, prefix=""):
    out = []
    if isinstance(x, dict):
        for k, v in x.items():
            path = f"{prefix}.{k}" if prefix else k
            out += [path, *_key_paths(v, path)]
    elif isinstance(x, list):
        for v in x:
            out += [p for p in _key_paths(v, prefix + "[]") if p not in out]
    return out


def test_evaluation_json_keeps_its_keys(tmp_path):
    rows = [
        {
            "id": f"r{i}",
            "prompt": f"Write a {f} about {c} in the {r} region, item {i}",
            "cell": {"concepts": c, "formats": f},
            "annotations": {"formats": f},
        }
        for i, (c, f, r) in enumerate(
            [
                ("rule breaking", "poem", "north"),
                ("privacy leaks", "email", "south"),
                ("rule breaking", "email", "east"),
                ("privacy leaks", "poem", "west"),
            ]
        )
    ]
    path = tmp_path / "dataset.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ev = evaluate(path, embeddings=False, topics="lexical")
    written = json.loads(write_evaluation_report(ev, tmp_path / "evaluation")["json"].read_text())
    measures = ("datasets[].diversity.", "datasets[].topics.", "reference.")
    keys = [
        p
        for p in _key_paths(written)
        if p.count(".") <= 1 or (p.count(".") == 2 and p.startswith(measures))
    ]
    assert keys == EVALUATION_JSON_KEYS


def test_a_malformed_dataset_record_is_refused_with_its_line(tmp_path):
    from aart.data.load import iter_records
    from aart.errors import UsageError

    path = tmp_path / "dataset.jsonl"
    good = {"id": "r0", "prompt": "a mild prompt", "cell": {"formats": "email"}}
    bad = {"id": "r1", "prompt": "another mild prompt", "cell": "email"}
    path.write_text(json.dumps(good) + "\n\n" + json.dumps(bad) + "\n")
    records = iter_records(path)
    assert next(records).cell == {"formats": "email"}
    with pytest.raises(UsageError) as e:
        next(records)
    assert str(e.value) == (f"{path}:3: `cell` is a string, not an object; fix the record")


def test_the_html_comparison_has_a_row_per_measure_so_it_fits_a_1280_px_window(tmp_path):
    # before: a column per measure, 16 and more columns (one per axis too) wider than 1100 px
    # (the page's width): the restated-cell, nearest-neighbour and topic columns scrolled
    axes = {f"axis{i}": ["poem"] for i in range(4)}
    for name in ("a", "b"):
        (tmp_path / f"{name}.jsonl").write_text(
            "".join(
                json.dumps(
                    {"prompt": f"write a poem {i} {name}", "cell": {a: "poem" for a in axes}}
                )
                + "\n"
                for i in range(6)
            )
        )
    ev = evaluate(tmp_path / "a.jsonl", compare={"b": tmp_path / "b.jsonl"}, embeddings=False)
    assert len(ev.table.header) > 16
    page = evaluation_html(ev)
    comparison = page.split("<h2>Comparison</h2>")[1].split("</table>")[0]
    head = comparison.split("</thead>")[0]
    assert head.count("<th>") == 3  # the measure, then a column per dataset
    assert comparison.count("<tr>") == len(ev.table.header)  # the head and one per measure
    assert "restated cell" in comparison.split("</thead>")[1]


def test_markdown_escapes_an_underscore_that_could_open_emphasis_but_not_inside_names():
    from aart.report.markdown import md_escape

    assert md_escape("_it_ and policy_concepts") == "\\_it\\_ and policy_concepts"
    assert md_escape("a|b *x* <b>") == "a\\|b \\*x\\* &lt;b&gt;"


def test_a_number_as_a_cell_value_is_that_value_as_text(tmp_path):
    # a foreign file's {"x": 3} crashed export and evaluate (int and str do not sort)
    from aart.data.load import load_dataset

    path = tmp_path / "num.jsonl"
    rows = [
        {"id": "a", "prompt": "p1", "cell": {"x": "v"}},
        {"id": "b", "prompt": "p2", "cell": {"x": 3}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ds = load_dataset(path)
    assert ds.cell_of(1) == {"x": "3"}
    assert [v.value for v in ds.derived_values()["x"]] == ["3", "v"]
    ev = aart.evaluate(path, embeddings=False)
    assert ev["datasets"][0]["prompts"] == 2
