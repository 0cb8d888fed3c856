"""Evaluate one dataset or several side by side: coverage, balance, agreement, length,
diversity, and a Table-2-style comparison."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import yaml

from ..data.load import Dataset, iter_dataset
from ..errors import UsageError
from ..recipe import Value
from ..text.keywords import KeywordMatcher, as_column
from ..text.normalize import NN_GROUP, RESTATED_CELL, CellPhrase, nn_similarity
from ..types import DatasetEvaluation, DiversityGap, Evaluation, Table
from .coverage import (
    AgreementCounts,
    LanguageCoverage,
    coverage_from_counts,
    distribution_from_counts,
)
from .diversity import DiversityMeasures
from .embeddings import ENABLE_HINT, Embedder, Int8Embedder, available, load_embedder
from .stats import describe_counts, histogram_counts
from .topics import (
    EMBED_DEFAULT_LIMIT,
    LabellingEmbedder,
    TopicLabeller,
    choose_topics,
    label_topics,
    topics_note,
)

#: The released AART data (aart-v1-20231117.csv, 3,269 prompts) measured as `aart evaluate`
#: measures a dataset (`aart evaluate --reference aart-v1-20231117.csv` recomputes it): the figures the
#: Gaps section holds a dataset's diversity against when no --reference is given. Nearest-
#: neighbour similarity grows with the number of prompts compared, so it is given per group size.
RELEASED_AART = {
    "name": "the released AART data",
    "self_bleu": 0.475,
    "restated_cell_share": 0.004,
    "nn_similarity": {10: 0.118, 20: 0.144, 35: 0.164, 50: 0.178},
}
#: a restated-cell share above this is a gap whatever the reference (issue 24's bar)
MAX_RESTATED = 0.10
#: a mean nearest-neighbour similarity this many times the reference's is a gap
NN_FACTOR = 1.5
#: a Self-BLEU this much above the reference's is a gap
SELF_BLEU_MARGIN = 0.15
#: records whose prompt is compared with its cell phrase (a uniform sample beyond this)
CELL_SAMPLE = 20_000


class CellSample:
    """A uniform sample of (prompt, its cell's values) over the chunks of a dataset: Algorithm
    R with the acceptance draws made per chunk in numpy, so a long file costs no Python loop
    per record."""

    def __init__(self, size: int = CELL_SAMPLE, seed: int = 0) -> None:
        self.size, self.seen = size, 0
        self.items: list[tuple[str, list[str]]] = []
        self.rng = np.random.default_rng(seed)

    def add(self, ds: Dataset) -> None:
        t = self.seen + np.arange(len(ds))
        take = (t < self.size) | (self.rng.random(len(ds)) < self.size / (t + 1))
        for i in np.flatnonzero(take).tolist():
            item = (ds.texts[i], list(ds.cell_of(i).values()))
            if self.seen + i < self.size:
                self.items.append(item)
            else:
                self.items[int(self.rng.integers(self.size))] = item
        self.seen += len(ds)

    def restated_share(self, labels: Sequence[str]) -> tuple[float | None, int]:
        """(share of the sampled records with a cell whose prompt restates it, records). An
        empty prompt restates nothing (it has no word): it is counted as empty, apart."""
        phrase = CellPhrase(labels)
        checked = [phrase.overlap(t, v) >= RESTATED_CELL for t, v in self.items if v and t.strip()]
        return (sum(checked) / len(checked) if checked else None), len(checked)


def more_alike(nn_similarity: float, reference: float) -> bool:
    """Whether prompts' mean nearest-neighbour similarity is flagged against a reference's
    (over NN_FACTOR times it): the evaluation's gap and the run summary say the same."""
    return nn_similarity > NN_FACTOR * reference


def values_from_dimensions_dir(path: Path) -> dict[str, list[Value]]:
    """``<axis>.yaml`` (aart's dimension files) or ``<axis>.txt`` (one value per line)."""
    if not path.is_dir():
        raise UsageError(f"--dimensions {path} is not a directory")
    out: dict[str, list[Value]] = {}
    for f in sorted(path.iterdir()):
        if f.suffix in (".yaml", ".yml"):
            data = yaml.safe_load(f.read_text(encoding="utf-8")) or {}
            raw = data.get("values", []) if isinstance(data, dict) else data
            out[f.stem] = [
                Value(value=x) if isinstance(x, str) else Value.model_validate(x) for x in raw
            ]
        elif f.suffix == ".txt":
            out[f.stem] = [
                Value(value=line.strip().lower())
                for line in f.read_text().splitlines()
                if line.strip()
            ]
    if not out:
        raise UsageError(f"--dimensions {path} holds no .yaml or .txt value lists")
    return out


def own_run(dataset: str | Path) -> str | None:
    """The run directory a dataset file sits in (its recipe.yaml, run.db and dimension files
    beside it), whose values and aliases its coverage is counted against, as `aart attack`
    takes its recipe: without them a region named by its city counted as missing."""
    folder = Path(dataset).parent
    if Path(dataset).is_file() and all(
        (folder / name).exists() for name in ("recipe.yaml", "run.db", "dimensions")
    ):
        return str(folder)
    return None


def resolve_values(
    ds: Dataset | Callable[[], dict[str, list[Value]]],
    *,
    recipe: str | None = None,
    run: str | None = None,
    dimensions: str | None = None,
) -> tuple[dict[str, list[Value]], str]:
    """Value lists for coverage, and where they came from: the recipe's, the run's, a
    directory's, else those the dataset's records carry (``ds``, or a function reading
    them)."""
    if run:
        from ..store.rundir import Run

        with Run.open(run, lock=False) as r:
            # the values the run kept: what its scope filters took out is no gap of the data
            # (`aart values RUN` shows them, as filtered out)
            return r.scoped_values(), f"run {run} (after its scope filters)"
    if recipe:
        from ..store.rundir import recipe_at

        rec = recipe_at(recipe).recipe
        vals = {n: list(d.values) for n, d in rec.dimensions.items() if d.values}
        if not vals:
            raise UsageError(
                f"recipe {recipe} has no explicit values; use --run RUN for enumerated ones"
            )
        # an enumerated dimension has no values in the recipe: say it is not counted (it
        # vanished from the report, and Gaps said every value of every axis was mentioned)
        left = [n for n, d in rec.dimensions.items() if not d.values]
        note = (
            f"; not counted: {', '.join(left)} (values enumerated by Step 1: give --run RUN)"
            if left
            else ""
        )
        return vals, f"recipe {recipe}{note}"
    if dimensions:
        return values_from_dimensions_dir(Path(dimensions)), f"dimensions {dimensions}"
    derived = ds.derived_values() if isinstance(ds, Dataset) else ds()
    return derived, "the dataset's own axis values"


class DatasetMeasures:
    """Everything `aart evaluate` reports about one dataset, added chunk by chunk (see
    :func:`~aart.data.load.iter_dataset`): running counts, bounded distinct counts and a
    fixed-size sample, so memory stays flat however many prompts there are."""

    def __init__(self, name: str, values: Mapping[str, Sequence[Value]], *, seed: int = 0) -> None:
        self.name = name
        self.matcher = KeywordMatcher(values)
        self.n = 0
        self.mentions = [[0] * len(self.matcher.values[a]) for a in self.matcher.axes]
        self.any_mention = [0] * len(self.matcher.axes)
        self.annotations: dict[str, Counter[str]] = {}
        self.agreement = AgreementCounts(values)
        self.by_language = LanguageCoverage(values)  # a multilingual dataset's, per language
        self.labelled = False
        self.words: Counter[int] = Counter()
        self.chars: Counter[int] = Counter()
        self.diversity = DiversityMeasures(seed=seed)
        self.cells = CellSample(seed=seed)
        self.labels: list[str] = list(self.matcher.axes)
        self.seed = seed
        self.tokens_per_prompt: float | None = None
        self.notes: list[str] = []
        self.empty = 0  # prompts with no text: counted in every share, and said

    def add(self, ds: Dataset) -> None:
        if not self.n:
            self.tokens_per_prompt, self.notes = ds.tokens_per_prompt, list(ds.notes)
        self.n += len(ds)
        column = as_column(ds.texts)  # once, for every measure below
        _, counts, any_hit = self.matcher.count([column])
        for total, part in zip(self.mentions, counts, strict=True):
            for i, k in enumerate(part):
                total[i] += k
        self.any_mention = [a + b for a, b in zip(self.any_mention, any_hit, strict=True)]
        for axis, labels in ds.annotations.items():
            self.annotations.setdefault(axis, Counter()).update(x for x in labels if x)
        if ds.annotations or ds.cells:
            self.labelled = True
            self.agreement.add(ds, column)
            self.by_language.add(ds)
        if ds.annotations or ds.cells or ds.axes:
            self.cells.add(ds)
            self.labels += [a for a in [*ds.cells, *ds.annotations] if a not in self.labels]
        self.words.update(len(t.split()) for t in ds.texts)
        self.chars.update(len(t) for t in ds.texts)
        self.empty += sum(1 for t in ds.texts if not t.strip())
        self.diversity.add(ds.texts, column)

    def result(self, embedder: Embedder | Int8Embedder | None = None) -> DatasetEvaluation:
        diversity, notes = self.diversity.result(embedder)
        if self.empty:
            notes.append(
                f"{self.empty} of {self.n} prompts are empty (no text in the prompt column); "
                "they count in every share as prompts that mention nothing: fix or delete them"
            )
        texts = list(self.diversity.sample.items)
        np.random.default_rng(self.seed).shuffle(texts)  # the groups are uniform samples
        diversity["nn_similarity"] = nn_similarity(texts)
        diversity["nn_group"] = min(NN_GROUP, len(texts))
        restated, checked = self.cells.restated_share(self.labels)
        result = DatasetEvaluation(
            name=self.name,
            prompts=self.n,
            tokens_per_prompt=self.tokens_per_prompt,
            coverage=coverage_from_counts(self.matcher, self.n, self.mentions, self.any_mention),
            annotations={a: distribution_from_counts(c) for a, c in self.annotations.items()},
            agreement=self.agreement.result() if self.labelled else {},
            coverage_by_language=self.by_language.result(),
            length={
                "words": describe_counts(self.words),
                "chars": describe_counts(self.chars),
                "words_histogram": histogram_counts(
                    self.words, bins=min(30, max(5, len(self.words)))
                ),
            },
            diversity=diversity,
            vocabulary=self.diversity.vocabulary,
            # prompts that are their cell phrase and little else (text.normalize.CellPhrase)
            restated_cell_share=restated,
            restated_checked=checked,
            notes=[*self.notes, *notes],
        )
        if embedder is None:
            result.diversity["embedding_diversity"] = None
            result.notes.append(
                "embedding diversity skipped (--no-embeddings)" if available() else ENABLE_HINT
            )
        return result


def evaluate_dataset(
    ds: Dataset,
    values: Mapping[str, Sequence[Value]],
    *,
    embedder: Embedder | Int8Embedder | None = None,
    seed: int = 0,
) -> DatasetEvaluation:
    """The measures of a dataset held in memory (files are read in chunks by
    :func:`evaluate`)."""
    measures = DatasetMeasures(ds.name, values, seed=seed)
    measures.add(ds)
    return measures.result(embedder)


METRIC_LEGEND = (
    "↑ higher is better, ↓ lower is better. coverage: value mentions per prompt (keywords); "
    "distinct-n: share of distinct n-grams; self-BLEU: overlap of each prompt with the others; "
    "embedding div.: mean cosine distance; Vendi: effective number of distinct prompts; "
    "tokens/prompt: every token the dataset's run (or baseline) spent, per prompt"
)


def comparison_table(results: Sequence[DatasetEvaluation]) -> tuple[list[str], list[list[str]]]:
    """Rows of a Table-2-style comparison: one per dataset, one column per metric."""
    axes: list[str] = []
    for r in results:
        axes += [a for a in r.coverage if a not in axes]
    # ↑ higher is better, ↓ lower is better (METRIC_LEGEND says so in the reports)
    header = [
        "dataset",
        "prompts",
        "tokens/prompt ↓",
        *[f"coverage {a} ↑" for a in axes],
        "distinct-1 ↑",
        "distinct-2 ↑",
        "self-BLEU ↓",
        "embedding div. ↑",
        "Vendi (emb.) ↑",
        "Vendi (lexical) ↑",
        "words",
        "dup. rate ↓",
        "restated cell ↓",
        "NN sim. ↓",
    ]
    rows = []
    for r in results:
        d, w = r.diversity, r.length["words"]
        emb = d.get("embedding_diversity")
        rows.append(
            [
                r.name,
                str(r.prompts),
                f"{r.tokens_per_prompt:.0f}" if r.tokens_per_prompt else "-",
                *[f"{r.coverage[a]['presence']:.3f}" if a in r.coverage else "-" for a in axes],
                f"{d['distinct_1']:.3f}",
                f"{d['distinct_2']:.3f}",
                f"{d['self_bleu']:.3f}",
                f"{emb:.3f}" if emb is not None else "n/a",
                f"{d['vendi_embedding']:.1f}" if d.get("vendi_embedding") is not None else "n/a",
                f"{d['vendi_lexical']:.1f}",
                f"{w.get('mean', 0):.1f} ± {w.get('std', 0):.1f}",
                f"{d['exact_duplicate_rate'] + d['near_duplicate_rate']:.3f}",
                "-" if r.restated_cell_share is None else f"{r.restated_cell_share:.3f}",
                f"{d['nn_similarity']:.3f}" if d.get("nn_similarity") is not None else "-",
            ]
        )
    return header, rows


def evaluate(
    dataset: str | Path,
    *,
    recipe: str | None = None,
    run: str | None = None,
    dimensions: str | None = None,
    compare: Mapping[str, str] | None = None,
    text_column: str = "prompt",
    axis_columns: dict[str, str] | None = None,
    annotation_columns: dict[str, str] | None = None,
    embeddings: bool = True,
    embedder: str = "minilm",
    seed: int = 0,
    topics: str = "auto",
    reference: str | Path | None = None,
) -> Evaluation:
    """Evaluate ``dataset`` (and every ``compare`` dataset against the same value lists).
    Their diversity is held against ``reference`` (a dataset file; default: the released
    AART data's figures, :data:`RELEASED_AART`) in the report's Gaps section.
    Files are read in chunks, in one pass (two when the value lists come from the dataset's
    own records), so memory stays flat whatever their size."""
    columns: dict[str, Any] = dict(
        text_column=text_column, axis_columns=axis_columns, annotation_columns=annotation_columns
    )
    if run is None and recipe is None and dimensions is None:
        run = own_run(dataset)
    values, source = resolve_values(
        lambda: _derived_values(dataset, columns), recipe=recipe, run=run, dimensions=dimensions
    )
    model = load_embedder(embedder) if embeddings else None
    spec = topic_spec(values, source, topics, model)
    results = [_measure(dataset, None, columns, values, model, seed, spec)]
    for name, path in (compare or {}).items():
        other = dict(text_column=text_column)
        results.append(_measure(path, name, other, values, model, seed, spec))
    if isinstance(model, Int8Embedder):
        for r in results:
            r.notes.append(
                "embedding diversity by minilm-int8: all-MiniLM-L6-v2 with int8 weights in "
                "ONNX Runtime (compare it with figures of the same embedder)"
            )
    header, rows = comparison_table(results)
    add_topic_column(header, rows, results)
    ref = _reference(reference, values, seed)
    return Evaluation(
        reference=ref,
        diversity_gaps=[g for r in results for g in diversity_gaps(r, ref)],
        values_from=source,
        value_lists={a: [v.value for v in vs] for a, vs in values.items()},
        datasets=results,
        table=Table(header, rows),
        embeddings=embedder if model is not None else None,
        human_review=human_review(Path(dataset)),
    )


def _measure(
    path: str | Path,
    name: str | None,
    columns: dict[str, Any],
    values: Mapping[str, Sequence[Value]],
    embedder: Embedder | Int8Embedder | None,
    seed: int,
    topics: TopicSpec | None = None,
) -> DatasetEvaluation:
    measures: DatasetMeasures | None = None
    for chunk in iter_dataset(path, name=name, **columns):
        if measures is None:
            measures = DatasetMeasures(chunk.name, values, seed=seed)
        measures.add(chunk)
    assert measures is not None  # iter_dataset refuses an empty file
    tagger = topic_embedder(topics, embedder)
    stand_in: Any = tagger or embedder  # the tagger has the embedder's interface
    result = measures.result(stand_in)
    if topics is not None:
        add_topics(result, measures, topics, tagger)
    return result


# -- topics (appendix D of the paper): kept apart from the measures above, see topics.py --


class TopicSpec(NamedTuple):
    """How `evaluate` labels topics (the same for every compared dataset)."""

    embedding: TopicLabeller | None  # by the embedder (None: not asked for, or none loaded)
    lexical: TopicLabeller  # by keywords
    source: str
    method: str


#: the ways ``evaluate(topics=...)`` labels prompts
TOPIC_METHODS = ("auto", "embedding", "lexical", "off")


def topic_spec(
    values: Mapping[str, Sequence[Value]],
    source: str,
    method: str,
    embedder: Embedder | Int8Embedder | None,
) -> TopicSpec | None:
    """How to label topics: ``off`` none; ``lexical`` keywords; ``embedding`` the embedder
    (keywords when it is not installed or --no-embeddings); ``auto`` the embedder on samples
    up to EMBED_DEFAULT_LIMIT prompts, keywords beyond."""
    if method not in TOPIC_METHODS:
        raise UsageError(f"unknown topic method {method!r}; use one of: {', '.join(TOPIC_METHODS)}")
    if method == "off":
        return None
    chosen, where = choose_topics(values, source)
    by_embedding = (
        TopicLabeller(chosen, embedder)
        if embedder is not None and method in ("auto", "embedding")
        else None
    )
    return TopicSpec(by_embedding, TopicLabeller(chosen), where, method)


def topic_embedder(
    spec: TopicSpec | None, embedder: Embedder | Int8Embedder | None
) -> LabellingEmbedder | None:
    """The embedder that also labels topics while the diversity measures embed the sample."""
    if spec is None or spec.embedding is None or embedder is None:
        return None
    return LabellingEmbedder(embedder, spec.embedding)


def add_topics(
    result: DatasetEvaluation,
    measures: DatasetMeasures,
    spec: TopicSpec,
    tagger: LabellingEmbedder | None = None,
) -> None:
    """Label the dataset's sample (the one the embedding metrics use) and add its topic
    figures and a note to ``result``."""
    sample = measures.diversity.sample.items
    labels = tagger.labels_of(sample) if tagger is not None else None
    labeller = spec.embedding or spec.lexical
    if labels is None and spec.method == "auto" and len(sample) > EMBED_DEFAULT_LIMIT:
        labeller = spec.lexical  # the embedder would encode the whole sample a second time
    result.topics = label_topics(
        sample, labeller, spec.source, labels=labels, population=measures.n
    )
    result.notes.append(topics_note(result.topics))


def add_topic_column(
    header: list[str], rows: list[list[str]], results: Sequence[DatasetEvaluation]
) -> None:
    """The comparison table's topical-diversity column: exp(entropy) of the topic labels."""
    if not any(r.topics for r in results):
        return
    header.append("topics (eff.) ↑")
    for row, r in zip(rows, results, strict=True):
        t = r.topics
        row.append(f"{t['effective_topics']:.1f}" if t else "-")


def _reference(
    path: str | Path | None, values: Mapping[str, Sequence[Value]], seed: int
) -> dict[str, Any]:
    """The figures a dataset's diversity is held against: a reference dataset measured like
    the others (its nearest-neighbour similarity at every group size of the table), else the
    released AART data's."""
    if path is None:
        return dict(RELEASED_AART)
    r = _measure(path, None, {}, values, None, seed)
    texts = [t for chunk in iter_dataset(path) for t in chunk.texts][:100_000]
    np.random.default_rng(seed).shuffle(texts)
    return {
        "name": r.name,
        "self_bleu": r.diversity["self_bleu"],
        "restated_cell_share": r.restated_cell_share,
        "nn_similarity": {g: nn_similarity(texts, group=g) for g in (10, 20, 35, NN_GROUP)},
    }


def reference_nn(ref: Mapping[str, Any], group: int) -> float:
    """The reference's nearest-neighbour similarity for groups of ``group`` prompts (the
    nearest size of its table at or below it)."""
    table = {int(k): v for k, v in ref["nn_similarity"].items()}
    sizes = [g for g in sorted(table) if g <= group] or [min(table)]
    return float(table[sizes[-1]])


def diversity_gaps(r: DatasetEvaluation, ref: Mapping[str, Any]) -> list[DiversityGap]:
    """What the Gaps section flags about one dataset's diversity, against the reference."""
    out: list[DiversityGap] = []
    d = r.diversity
    share = r.restated_cell_share
    if share is not None and share > max(MAX_RESTATED, ref.get("restated_cell_share") or 0):
        out.append(
            DiversityGap(
                r.name,
                "restated_cell_share",
                share,
                ref.get("restated_cell_share"),
                f"{share:.0%} of the prompts restate their cell (the cell's words and "
                f"little else; {ref['name']}: {ref.get('restated_cell_share') or 0:.1%})",
            )
        )
    if d.get("nn_similarity") is not None and r.prompts >= 2:
        base = reference_nn(ref, d.get("nn_group") or NN_GROUP)
        if more_alike(d["nn_similarity"], base):
            out.append(
                DiversityGap(
                    r.name,
                    "nn_similarity",
                    d["nn_similarity"],
                    base,
                    f"prompts more alike than the reference's: mean nearest-neighbour "
                    f"similarity {d['nn_similarity']:.2f} ({ref['name']}: {base:.2f}; "
                    f"flagged above {NN_FACTOR}x)",
                )
            )
    if ref.get("self_bleu") is not None and d["self_bleu"] > ref["self_bleu"] + SELF_BLEU_MARGIN:
        out.append(
            DiversityGap(
                r.name,
                "self_bleu",
                d["self_bleu"],
                ref["self_bleu"],
                f"low lexical diversity: Self-BLEU {d['self_bleu']:.2f} "
                f"({ref['name']}: {ref['self_bleu']:.2f})",
            )
        )
    return out


def _derived_values(path: str | Path, columns: dict[str, Any]) -> dict[str, list[Value]]:
    """The value lists the records carry (their cells and axes), read in chunks."""
    seen: dict[str, set[str]] = {}
    for chunk in iter_dataset(path, **columns):
        for axis, vs in chunk.derived_values().items():
            seen.setdefault(axis, set()).update(v.value for v in vs)
    return {axis: [Value(value=v) for v in sorted(vs)] for axis, vs in seen.items()}


def human_review(dataset: Path) -> dict[str, Any] | None:
    """The people's labels of this dataset (`aart review`), when there are any: the good rate
    with its Wilson interval, agreement per dimension, agreement between reviewers."""
    from ..store.db import RunDB
    from .human import dataset_figures, dataset_labels, labels_db_path

    path = labels_db_path(dataset)
    if not path.exists():
        return None
    db = RunDB(path, lock=False)
    try:
        labels = dataset_labels(dataset, db)
    finally:
        db.close()
    if not labels:
        return None
    dims = sorted({d for x in labels for d in (x.get("dims") or {})})
    return dataset_figures(labels, dims)
