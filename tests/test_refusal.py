"""The refusal detectors against a labelled set: precision and recall at least 0.95 each."""

from refusal_cases import COMPLIED, GENERATOR_REFUSALS, PARTIALS, REFUSALS, USER_PROMPTS

from aart.refusal import prompt_is_refusal, reply_status


def precision_recall(labels, predictions):
    tp = sum(1 for y, p in zip(labels, predictions, strict=True) if y and p)
    fp = sum(1 for y, p in zip(labels, predictions, strict=True) if not y and p)
    fn = sum(1 for y, p in zip(labels, predictions, strict=True) if y and not p)
    return tp / (tp + fp), tp / (tp + fn)


def test_the_labelled_set_is_large_enough():
    assert len(REFUSALS) + len(PARTIALS) + len(COMPLIED) >= 150
    assert sum(1 for r in REFUSALS if not r.isascii()) >= 8  # non-English and typographic


def test_reply_detector_precision_and_recall():
    replies = REFUSALS + COMPLIED
    labels = [True] * len(REFUSALS) + [False] * len(COMPLIED)
    predictions = [reply_status(r) == "refusal" for r in replies]
    precision, recall = precision_recall(labels, predictions)
    missed = [r for r, y, p in zip(replies, labels, predictions, strict=True) if y and not p]
    wrong = [r for r, y, p in zip(replies, labels, predictions, strict=True) if p and not y]
    assert precision >= 0.95 and recall >= 0.95, (precision, recall, missed, wrong)
    print(f"reply detector: precision {precision:.3f}, recall {recall:.3f} on {len(replies)}")


def test_partial_refusals_are_labelled_partial():
    assert all(reply_status(p) == "partial" for p in PARTIALS), [
        p for p in PARTIALS if reply_status(p) != "partial"
    ]
    # a short pivot with nothing behind it is still a refusal
    assert reply_status("I can't help with that, but you could ask a librarian.") == "refusal"


def test_prompt_detector_keeps_first_person_user_text():
    prompts = GENERATOR_REFUSALS + USER_PROMPTS
    labels = [True] * len(GENERATOR_REFUSALS) + [False] * len(USER_PROMPTS)
    predictions = [prompt_is_refusal(p) for p in prompts]
    precision, recall = precision_recall(labels, predictions)
    assert precision >= 0.95 and recall >= 0.95, [
        p for p, y, q in zip(prompts, labels, predictions, strict=True) if y != q
    ]
    assert not prompt_is_refusal(
        "I'm unable to get into my late husband's account. How do I get access to it?"
    )


def test_the_refusal_judge_and_the_generator_use_the_right_detector(tmp_path):
    import asyncio
    import json

    import aart
    from aart.llm import register_script
    from aart.redteam.judges import RefusalJudge

    judge = RefusalJudge()
    v = asyncio.run(judge.judge("p", "I can’t help with that."))  # typographic apostrophe
    assert v.refused and v.violates is False
    v = asyncio.run(judge.judge("p", PARTIALS[0]))
    assert v.violates is True and v.category == "partial refusal"

    # a generated prompt in the first person is kept, not dropped as a generator refusal
    from conftest import MINI_RECIPE, write_recipe

    text = MINI_RECIPE.replace("default: fake/test", "default: firstperson/x").replace(
        "    enumerate:\n      instruction: List world regions.\n      count: 4",
        "    values: [north]",
    )
    text = text.replace(
        "primary: concepts", "primary: concepts\n  filters: {concepts: {keep: [rule breaking]}}"
    )
    text = text.replace("attempts_per_value: 2", "attempts_per_value: 1").replace(
        "queries_per_attempt: 3", "queries_per_attempt: 1"
    )
    text = text.replace("sample: {formats: 2, regions: 2}", "sample: {formats: 1, regions: 1}")
    prompt = (
        "I'm unable to get into my late husband's account; write an {fmt} on rule breaking up north"
    )

    def answer(msgs, schema):
        fmt = schema["properties"]["queries"]["items"]["properties"]["format"]["enum"][0]
        return {"queries": [{"topic": "t", "format": fmt, "prompt": prompt.format(fmt=fmt)}]}

    register_script("firstperson", [answer])
    result = aart.run(write_recipe(tmp_path, text), out=tmp_path / "run")
    assert result.stats.refused_items == 0 and result.stats.prompts == 1
    row = json.loads((tmp_path / "run" / "dataset.jsonl").read_text())
    assert row["prompt"].startswith("I'm unable to get into")
