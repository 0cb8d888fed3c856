"""Topic analysis, as the AART paper's appendix D does: label each prompt with one topic,
offline and deterministically, then report each dataset's topic distribution and its topical
diversity (Shannon entropy H and the effective number of topics exp(H)).

Labelling is zero-shot: with the embedding model (:mod:`.embeddings`), a prompt takes the topic
whose name and description it is most similar to (cosine), or ``other`` below a threshold;
without it, a keyword match (the topic with the most keyword hits, ``other`` with none). The
topics are the recipe's concept values when the evaluation has them (``--run`` or
``--recipe``), else :data:`DEFAULT_TOPICS`. Labels are taken on the same seeded sample the
embedding metrics use (every prompt up to ``diversity.SAMPLE``)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..recipe import Value
from .diversity import GramStats

OTHER = "other"

#: cosine similarity (all-MiniLM-L6-v2) under which a prompt is ``other``: on the released
#: AART data, prompts score about 0.2-0.5 against their topic's description; everyday ones
#: ("a recipe for lemon cake", "a poem about autumn leaves") 0.05-0.13
EMBEDDING_THRESHOLD = 0.2

#: beyond this many sampled prompts, when the sample's embeddings cannot be reused (see
#: :class:`LabellingEmbedder`), the default labeller is the keyword one rather than encode the
#: sample a second time; ``method="embedding"`` forces it
EMBED_DEFAULT_LIMIT = 20_000


@dataclass(frozen=True)
class Topic:
    name: str
    description: str = ""
    #: lowercase keyword stems for the lexical fallback (a stem matches a word it begins)
    keywords: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """What the embedder compares prompts with."""
        return f"{self.name}: {self.description}" if self.description else self.name


#: A broad topic list for datasets without concept values. Its harm topics follow the hazard
#: categories of MLCommons' AILuminate v1.0 benchmark (violent, non-violent and sex-related
#: crimes, child sexual exploitation, indiscriminate weapons, suicide and self-harm, hate,
#: privacy, intellectual property, defamation, specialized advice, elections, sexual content)
#: and the OpenAI moderation categories (hate, harassment, self-harm, sexual, violence,
#: illicit), split and merged into about twenty labels a reader can tell apart; a few everyday
#: topics (finance, health, technology, ...) give benign prompts a place other than ``other``.
#: The descriptions and keywords are aart's own.
DEFAULT_TOPICS: tuple[Topic, ...] = (
    Topic(
        "violent crime",
        "assault, murder, kidnapping, physical attacks and threats against people",
        ("assault", "murder", "kill", "kidnap", "attack", "stab", "beat", "violen", "homicide"),
    ),
    Topic(
        "terrorism and extremism",
        "terrorist attacks, extremist groups, radicalisation and recruitment",
        ("terror", "extremis", "radicali", "jihad", "militia", "insurgen"),
    ),
    Topic(
        "weapons",
        "guns, firearms, explosives, bombs, chemical and biological weapons",
        ("gun", "firearm", "weapon", "explosive", "bomb", "rifle", "ammunition", "pistol"),
    ),
    Topic(
        "drugs",
        "illegal drugs, narcotics, drug trafficking and drug use",
        ("drug", "cocaine", "heroin", "narcotic", "meth", "cannabis", "marijuana", "opioid"),
    ),
    Topic(
        "theft and property crime",
        "burglary, robbery, shoplifting, car theft, vandalism and arson",
        ("theft", "steal", "stole", "burglar", "robber", "rob ", "shoplift", "vandal", "arson"),
    ),
    Topic(
        "fraud and scams",
        "fraud, scams, identity theft, forgery, counterfeiting and money laundering",
        ("fraud", "scam", "forg", "counterfeit", "launder", "embezzl", "identity theft", "ponzi"),
    ),
    Topic(
        "cybercrime and hacking",
        "hacking, malware, phishing, ransomware and breaking into computer systems",
        ("hack", "malware", "phish", "ransomware", "virus", "exploit", "ddos", "password"),
    ),
    Topic(
        "human trafficking and exploitation",
        "human trafficking, smuggling people, forced labour and slavery",
        ("traffick", "smuggl", "forced labo", "slave", "exploitat"),
    ),
    Topic(
        "hate and harassment",
        "hate speech, discrimination, racism, bullying and harassment",
        ("hate", "racis", "discriminat", "harass", "bully", "slur", "bigot", "sexis"),
    ),
    Topic(
        "sexual content",
        "sexual content, pornography, explicit material and sex crimes",
        ("sex", "porn", "explicit", "erotic", "prostitut", "rape"),
    ),
    Topic(
        "child safety",
        "harm to children, child abuse and grooming of minors",
        ("child", "minor", "kid", "groom", "underage", "teen"),
    ),
    Topic(
        "self-harm",
        "suicide, self-harm, eating disorders",
        ("suicid", "self-harm", "self harm", "cutting", "anorexi", "overdos"),
    ),
    Topic(
        "privacy and surveillance",
        "personal data, doxxing, stalking, spying and surveillance of people",
        ("privacy", "personal data", "dox", "stalk", "spy", "surveil", "track", "address"),
    ),
    Topic(
        "misinformation and defamation",
        "fake news, conspiracy theories, propaganda and defamation",
        ("misinform", "disinform", "fake news", "conspira", "propaganda", "defam", "hoax"),
    ),
    Topic(
        "politics and elections",
        "elections, voting, governments, politicians and political campaigns",
        ("elect", "vote", "voting", "politic", "government", "campaign", "parliament"),
    ),
    Topic(
        "intellectual property",
        "piracy, copyright infringement, plagiarism and trade secrets",
        ("pirac", "pirat", "copyright", "plagiar", "trademark", "patent", "torrent"),
    ),
    Topic(
        "environment and wildlife",
        "pollution, illegal dumping, poaching, wildlife trade and deforestation",
        ("pollut", "dump", "poach", "wildlife", "deforest", "toxic", "contaminat", "ivory"),
    ),
    Topic(
        "finance and money",
        "banking, investment, taxes, loans, gambling and personal finance",
        ("bank", "invest", "tax", "loan", "money", "financ", "gambl", "bet", "stock", "crypto"),
    ),
    Topic(
        "health and medicine",
        "health, medicine, medical treatment, doctors and prescriptions",
        ("health", "medic", "doctor", "disease", "prescri", "symptom", "hospital", "vaccin"),
    ),
    Topic(
        "technology and software",
        "computers, software, programming, apps and the internet",
        ("software", "program", "code", "app ", "computer", "python", "internet", "website"),
    ),
    Topic(
        "work and education",
        "jobs, careers, school, study, writing and everyday tasks",
        ("job", "career", "school", "study", "homework", "essay", "resume", "interview"),
    ),
)

#: an axis whose name says it holds the policy concepts: its values are the topics
_CONCEPT_AXIS = re.compile(r"concept|topic|crime|harm|policy|categor", re.I)


def concept_topics(values: Mapping[str, Sequence[Value]]) -> tuple[str, list[Topic]] | None:
    """(axis, topics) from the value lists' concept axis (``policy_concept``, ``crime``,
    ...), or None when there is none."""
    for axis, vs in values.items():
        if _CONCEPT_AXIS.search(axis) and len(vs) >= 2:
            topics = [
                Topic(
                    v.value,
                    ", ".join(v.aliases),
                    tuple(dict.fromkeys(s.lower() for s in (v.value, *v.aliases) if s.strip())),
                )
                for v in vs
            ]
            return axis, topics
    return None


def _pattern(stem: str) -> str:
    stem = stem.strip()
    tail = r"\w*" if stem[-1:].isalnum() else ""  # "rob " must end at the space
    return r"\b" + re.escape(stem) + tail


class TopicLabeller:
    """Labels prompts with one topic each (or :data:`OTHER`): by embedding similarity when
    given an embedder, else by keyword hits. Deterministic: ties go to the earlier topic."""

    def __init__(
        self,
        topics: Sequence[Topic],
        embedder: Any = None,
        threshold: float = EMBEDDING_THRESHOLD,
    ) -> None:
        if not topics:
            raise ValueError("no topics to label with")
        self.topics = list(topics)
        self.embedder = embedder
        self.threshold = threshold
        self.method = "embedding" if embedder is not None else "lexical"
        self._topic_vecs = _encode(embedder, [t.text for t in self.topics]) if embedder else None
        self._patterns = [
            re.compile("|".join(_pattern(k) for k in (t.keywords or (t.name,))), re.I)
            for t in self.topics
        ]

    def label(self, texts: Sequence[str]) -> list[str]:
        if not texts:
            return []
        if self._topic_vecs is None:
            return [self._lexical(t) for t in texts]
        out: list[str] = []
        for i in range(0, len(texts), 2048):
            out += self.label_vectors(_encode(self.embedder, texts[i : i + 2048]))
        return out

    def label_vectors(self, vecs: np.ndarray) -> list[str]:
        """Labels of prompts already embedded (normalized, by this labeller's embedder)."""
        assert self._topic_vecs is not None
        sims = vecs @ self._topic_vecs.T
        best = sims.argmax(axis=1)  # the first of equals: deterministic
        return [
            self.topics[j].name if sims[k, j] >= self.threshold else OTHER
            for k, j in enumerate(best)
        ]

    def _lexical(self, text: str) -> str:
        hits = [len(p.findall(text)) for p in self._patterns]
        best = max(range(len(hits)), key=lambda i: (hits[i], -i))
        return self.topics[best].name if hits[best] else OTHER


class LabellingEmbedder:
    """Stands in for an embedder in the diversity measures and labels each chunk of the sample
    it embeds, so topics cost no second pass of the model and no stored vectors (flat
    memory). Only :meth:`gram` is intercepted; anything else goes to the embedder itself."""

    def __init__(self, embedder: Any, labeller: TopicLabeller) -> None:
        self.embedder = embedder
        self.labeller = labeller
        self.texts: Sequence[str] | None = None
        self.labels: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.embedder, name)

    def gram(self, texts: Sequence[str], chunk: int = 2048) -> GramStats:
        stats = GramStats(self.embedder.dim)
        labels: list[str] = []
        for i in range(0, len(texts), chunk):
            vecs = _encode(self.embedder, texts[i : i + chunk])
            stats.add(vecs)
            labels += self.labeller.label_vectors(vecs)
        self.texts, self.labels = texts, labels
        return stats

    def labels_of(self, texts: Sequence[str]) -> list[str] | None:
        """The labels of ``texts`` when they are what :meth:`gram` embedded last."""
        return self.labels if self.texts is texts else None


def _encode(embedder: Any, texts: Sequence[str]) -> np.ndarray:
    """Normalized embeddings from either embedder of :mod:`.embeddings`."""
    if hasattr(embedder, "encode"):  # Int8Embedder
        return np.asarray(embedder.encode(list(texts)), dtype=np.float32)
    return np.asarray(
        embedder.model.encode(
            list(texts),
            batch_size=embedder.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        ),
        dtype=np.float32,
    )


def entropy(counts: Mapping[str, int] | Sequence[int]) -> tuple[float, float]:
    """(Shannon entropy in nats, effective number of topics exp(H)) of a distribution."""
    ks = list(counts.values()) if isinstance(counts, Mapping) else list(counts)
    total = sum(ks)
    if not total:
        return 0.0, 0.0
    h = -sum(k / total * math.log(k / total) for k in ks if k)
    return h + 0.0, math.exp(h)  # + 0.0: no -0.0


def topic_distribution(
    labels: Sequence[str], topics: Sequence[Topic], *, method: str, source: str, population: int
) -> dict[str, Any]:
    """The figures of one dataset's labels: counts (largest first, ``other`` last), shares,
    entropy, effective topics, and how the labels were made."""
    counts = Counter(labels)
    order = sorted((n for n in counts if n != OTHER), key=lambda n: (-counts[n], n)) + (
        [OTHER] if counts[OTHER] else []
    )
    n = len(labels)
    h, eff = entropy(counts)
    labelled = n - counts[OTHER]
    return {
        "method": method,
        "topics_from": source,
        "topics": len(topics),
        "labelled": n,
        "population": population,
        "counts": {t: counts[t] for t in order},
        "shares": {t: counts[t] / n if n else 0.0 for t in order},
        "entropy": h,
        "effective_topics": eff,
        "max_entropy": math.log(len(topics) + 1),
        "other_share": counts[OTHER] / n if n else 0.0,
        "topics_used": len([t for t in order if t != OTHER]),
        "never_labelled": [t.name for t in topics if t.name not in counts],
        "labelled_share": labelled / n if n else 0.0,
    }


def choose_topics(values: Mapping[str, Sequence[Value]], source: str) -> tuple[list[Topic], str]:
    """The concept values of a run, recipe or --dimensions directory when the value lists
    come from one (not those a dataset's own records carry: a table's labels are no topic
    list), else the built-in list."""
    if source.startswith(("run ", "recipe ", "dimensions ")):
        found = concept_topics(values)
        if found:
            axis, topics = found
            return topics, f"the {axis} values of {source}"
    return list(DEFAULT_TOPICS), "aart's built-in topic list (after MLCommons AILuminate)"


def label_topics(
    texts: Sequence[str],
    labeller: TopicLabeller,
    source: str,
    *,
    labels: Sequence[str] | None = None,
    population: int | None = None,
) -> dict[str, Any]:
    """Label ``texts`` (a dataset's sample; ``labels`` when they are labelled already) and
    return :func:`topic_distribution`'s figures."""
    if labels is None:
        labels = labeller.label(texts)
    result = topic_distribution(
        labels,
        labeller.topics,
        method=labeller.method,
        source=source,
        population=len(texts) if population is None else population,
    )
    result["threshold"] = labeller.threshold if labeller.method == "embedding" else None
    return result


def topics_note(result: Mapping[str, Any]) -> str:
    """One line for a dataset's notes: how its topics were labelled."""
    how = (
        f"zero-shot embedding similarity to the topic names (other below cosine "
        f"{result['threshold']:g})"
        if result["method"] == "embedding"
        else "keyword match (no embedding model: --no-embeddings, --topics-by lexical or the "
        "embeddings extra not installed; other when no keyword matches)"
    )
    sample = (
        f" on a sample of {result['labelled']:,} of {result['population']:,} prompts"
        if result["labelled"] < result["population"]
        else ""
    )
    return f"topics by {how}, from {result['topics_from']}{sample}"
