"""Topic analysis (the paper's appendix D): labels, entropy figures, the treemap SVG."""

import json
import math
import xml.etree.ElementTree as ET

import pytest

import aart
from aart.evaluate import evaluate
from aart.evaluate.topics import (
    DEFAULT_TOPICS,
    OTHER,
    Topic,
    TopicLabeller,
    choose_topics,
    concept_topics,
    entropy,
    topic_distribution,
)
from aart.recipe import Value
from aart.report import evaluation_html
from aart.report.evaluation import evaluation_markdown
from aart.report.treemap import shared_colours, squarify, treemap_svg

# mild, abstract prompts about clearly different topics, and the topic each must get
CLEAR = [
    ("How could someone hack into a company's computer network?", "cybercrime and hacking"),
    ("Where can people buy cocaine and other drugs in the city?", "drugs"),
    ("Write a speech urging people to vote in the election.", "politics and elections"),
    ("Which symptoms mean I should see a doctor about my health?", "health and medicine"),
    ("How do I invest money and pay less tax?", "finance and money"),
    ("Describe a plan to shoplift from a store without paying.", "theft and property crime"),
    ("A short poem about autumn leaves.", OTHER),
]


def test_lexical_labels_prompts_about_different_topics():
    labeller = TopicLabeller(DEFAULT_TOPICS)
    assert labeller.method == "lexical"
    texts = [t for t, _ in CLEAR]
    assert labeller.label(texts) == [want for _, want in CLEAR]
    assert labeller.label(texts) == labeller.label(texts)  # deterministic


@pytest.mark.skipif(not aart.evaluate.embeddings.available(), reason="needs the embeddings extra")
def test_embedding_labels_prompts_about_different_topics():
    from aart.evaluate.embeddings import load_embedder

    labeller = TopicLabeller(DEFAULT_TOPICS, load_embedder("minilm"))
    assert labeller.method == "embedding"
    texts = [t for t, _ in CLEAR]
    got = labeller.label(texts)
    assert got[:6] == [want for _, want in CLEAR[:6]], got
    assert got == labeller.label(texts)


def test_concept_values_are_the_topics_with_their_aliases():
    values = {
        "region": [Value(value="europe"), Value(value="asia")],
        "policy_concept": [
            Value(value="burglary", aliases=["break-in"]),
            Value(value="tax evasion"),
        ],
    }
    axis, topics = concept_topics(values)
    assert axis == "policy_concept" and [t.name for t in topics] == ["burglary", "tax evasion"]
    labels = TopicLabeller(topics).label(
        ["Plan a break-in at the shop", "Hide income to commit tax evasion", "hello there"]
    )
    assert labels == ["burglary", "tax evasion", OTHER]


def test_topics_come_from_a_run_or_recipe_else_the_built_in_list():
    values = {"policy_concept": [Value(value="burglary"), Value(value="fraud")]}
    topics, where = choose_topics(values, "run r1 (after its scope filters)")
    assert [t.name for t in topics] == ["burglary", "fraud"] and "policy_concept" in where
    topics, where = choose_topics(values, "the dataset's own axis values")
    assert topics == list(DEFAULT_TOPICS) and "built-in" in where
    assert choose_topics({"region": values["policy_concept"]}, "recipe r.yaml")[0] == list(
        DEFAULT_TOPICS
    )


def test_entropy_on_known_distributions():
    h, eff = entropy([5, 5, 5, 5])
    assert h == pytest.approx(math.log(4)) and eff == pytest.approx(4.0)
    assert entropy([7]) == (0.0, 1.0)
    assert entropy([]) == (0.0, 0.0)
    h, eff = entropy({"a": 1, "b": 3})
    assert h == pytest.approx(-(0.25 * math.log(0.25) + 0.75 * math.log(0.75)))
    assert eff == pytest.approx(math.exp(h))
    d = topic_distribution(
        ["a", "a", "b", OTHER],
        [Topic("a"), Topic("b"), Topic("c")],
        method="lexical",
        source="test",
        population=4,
    )
    assert list(d["counts"]) == ["a", "b", OTHER]  # largest first, other last
    assert d["shares"]["a"] == 0.5 and d["other_share"] == 0.25
    assert d["never_labelled"] == ["c"] and d["topics_used"] == 2


def _rects(svg: str):
    root = ET.fromstring(svg)  # inline SVG in HTML: no namespace needed
    return root, [(g.find("title").text, g.find("rect")) for g in root.findall("g")]


def test_treemap_rect_areas_are_proportional_to_counts():
    counts = [("crime", 50), ("drugs", 20), ("finance", 15), ("health", 10), ("other", 5)]
    root, rects = _rects(treemap_svg(counts, title="t", width=500, height=300))
    assert len(rects) == 5
    total = 500 * 300
    for (label, count), (tip, rect) in zip(counts, rects, strict=True):
        area = float(rect.get("width")) * float(rect.get("height"))
        assert area == pytest.approx(total * count / 100, rel=1e-3)
        assert tip.startswith(f"{label}: {count} (")
        x, y = float(rect.get("x")), float(rect.get("y"))
        assert -1e-6 <= x and x + float(rect.get("width")) <= 500 + 1e-3
        assert -1e-6 <= y and y + float(rect.get("height")) <= 300 + 1e-3
    # the rectangles tile the box: their areas add up to it
    assert sum(float(r.get("width")) * float(r.get("height")) for _, r in rects) == (
        pytest.approx(total, rel=1e-6)
    )


def test_squarify_keeps_aspect_ratios_reasonable():
    rects = squarify([6, 6, 4, 3, 2, 2, 1], 0, 0, 600, 400)  # the paper's example, scaled
    assert max(max(w / h, h / w) for _, _, w, h in rects) < 3


def test_treemap_escapes_topic_names():
    svg = treemap_svg([("<script>alert(1)</script>", 3), ("a & b", 1)], title="<b>x</b>")
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "<b>" not in svg
    _, rects = _rects(svg)  # still well-formed XML
    assert rects[0][0].startswith("<script>alert(1)</script>: 3")  # parsed back: the text


def test_evaluate_adds_topics_to_the_record_and_reports(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("\n".join(json.dumps({"prompt": t}) for t, _ in CLEAR))
    b.write_text("\n".join(json.dumps({"prompt": t}) for t in ["buy drugs", "sell drugs"]))
    ev = evaluate(a, compare={"b": str(b)}, embeddings=False)
    ta, tb = (r["topics"] for r in ev["datasets"])
    assert ta["method"] == "lexical" and ta["counts"]["drugs"] == 1
    assert ta["effective_topics"] == pytest.approx(7.0)  # seven prompts, seven labels
    assert tb["counts"] == {"drugs": 2} and tb["effective_topics"] == pytest.approx(1.0)
    assert ev["table"]["header"][-1] == "topics (eff.) ↑"
    assert [row[-1] for row in ev["table"]["rows"]] == ["7.0", "1.0"]
    page = evaluation_html(ev)
    assert page.count("aria-label='topics of") == 2 and "<h2>Topics</h2>" in page
    md = evaluation_markdown(ev)
    assert "## Topics" in md and "exp(H) 7.0" in md
    assert any(n.startswith("topics by keyword match") for n in ev["datasets"][0]["notes"])
    off = evaluate(a, embeddings=False, topics="off")
    assert "topics" not in off["datasets"][0] and "## Topics" not in evaluation_markdown(off)


def test_cli_no_topics(tmp_path):
    from click.testing import CliRunner

    from aart.cli.main import cli

    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(json.dumps({"prompt": t}) for t, _ in CLEAR))
    on = CliRunner().invoke(cli, ["evaluate", str(path), "--no-embeddings"])
    off = CliRunner().invoke(cli, ["evaluate", str(path), "--no-embeddings", "--no-topics"])
    assert on.exit_code == 0 and off.exit_code == 0, on.output + off.output
    assert "## Topics" in on.output and "## Topics" not in off.output


class FakeEmbedder:
    """Deterministic bag-of-words vectors: enough to check the labelling plumbing."""

    dim = 64

    def __init__(self):
        self.calls = 0

    def encode(self, texts):
        import numpy as np

        from aart.evaluate.diversity import tokens

        self.calls += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in tokens(t):
                out[i, sum(map(ord, w[:4])) % self.dim] += 1
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)

    def gram(self, texts, chunk=2048):
        from aart.evaluate.diversity import GramStats

        stats = GramStats(self.dim)
        stats.add(self.encode(texts))
        return stats


def test_topics_reuse_the_sample_embeddings(tmp_path, monkeypatch):
    """With an embedder, the labels come from the pass the diversity measures make over the
    sample (no second encoding), and equal a fresh labelling of the same texts."""
    from aart.evaluate import evaluation

    fake = FakeEmbedder()
    monkeypatch.setattr(evaluation, "load_embedder", lambda name: fake)
    path = tmp_path / "a.jsonl"
    texts = [t for t, _ in CLEAR]
    path.write_text("\n".join(json.dumps({"prompt": t}) for t in texts))
    ev = evaluate(path)
    t = ev["datasets"][0]["topics"]
    assert t["method"] == "embedding"
    assert fake.calls == len(texts) + len(DEFAULT_TOPICS)  # the prompts once, the topics once
    fresh = TopicLabeller(DEFAULT_TOPICS, FakeEmbedder()).label(texts)
    assert t["counts"] == dict(
        topic_distribution(fresh, DEFAULT_TOPICS, method="x", source="x", population=7)["counts"]
    )
    assert ev["datasets"][0]["diversity"]["embedding_diversity"] is not None


def test_a_topic_keeps_its_colour_across_treemaps():
    colours = shared_colours(["drugs", "other", "fraud", "drugs", "weapons"])
    assert list(colours) == ["drugs", "fraud", "weapons"]
    fills = []
    for counts in ([("drugs", 5), ("fraud", 1)], [("fraud", 9), ("drugs", 2)]):
        _, rects = _rects(treemap_svg(counts, title="t", colours=colours))
        fills.append({tip.split(":")[0]: rect.get("fill") for tip, rect in rects})
    assert fills[0] == fills[1] == {"drugs": colours["drugs"], "fraud": colours["fraud"]}
