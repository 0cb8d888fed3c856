import pytest

from aart.llm import looks_like_refusal
from aart.llm.structured import (
    extract_json_text,
    parse_json,
    schema_errors,
    strip_reasoning,
)

SCHEMA = {
    "type": "object",
    "properties": {"values": {"type": "array", "items": {"type": "string"}}},
    "required": ["values"],
}


def test_plain_json():
    assert parse_json('{"values": ["a", "b"]}') == {"values": ["a", "b"]}


def test_code_fence_and_prose():
    text = 'Sure! Here it is:\n```json\n{"values": ["a"]}\n```\nHope that helps.'
    assert parse_json(text) == {"values": ["a"]}


def test_reasoning_preamble_removed():
    text = '<think>The user wants {"values": ["wrong"]} maybe</think>\n{"values": ["right"]}'
    assert strip_reasoning(text).startswith('{"values": ["right"]')
    assert parse_json(text) == {"values": ["right"]}


def test_unclosed_reasoning_is_dropped():
    assert parse_json_or_none("<think>still thinking {") is None


def parse_json_or_none(text):
    try:
        return parse_json(text)
    except ValueError:
        return None


def test_truncated_json_is_repaired():
    assert parse_json('{"values": ["a", "b", "c') == {"values": ["a", "b", "c"]}


def test_trailing_comma_repaired():
    assert parse_json('{"values": ["a", "b",]}') == {"values": ["a", "b"]}


def test_no_json_raises():
    with pytest.raises(ValueError):
        parse_json("I cannot help with that request.")


def test_schema_errors_report_path():
    assert schema_errors({"values": ["a"]}, SCHEMA) == []
    errs = schema_errors({"values": [1]}, SCHEMA)
    assert errs and errs[0].startswith("values/0")


def test_extract_prefers_fenced_block():
    assert extract_json_text("x {bad\n```json\n[1, 2]\n```") == "[1, 2]"


@pytest.mark.parametrize(
    "text,expected",
    [
        ("I'm sorry, but I can't help with that.", True),
        ("I cannot assist with this request.", True),
        ("As an AI language model, I must decline.", True),
        ('{"values": ["email"]}', False),
        ("Write a poem about the harbor at night.", False),
    ],
)
def test_refusal_detection(text, expected):
    assert looks_like_refusal(text) is expected


def test_the_candidate_that_matches_the_schema_wins():
    schema = {
        "type": "object",
        "properties": {"values": {"type": "array", "items": {"type": "string"}}},
        "required": ["values"],
    }
    text = 'Here are [3] queries: {"values": ["a", "b", "c"]} and a note {"x": 1}'
    assert parse_json(text, schema) == {"values": ["a", "b", "c"]}
    # without a schema the value where the JSON starts is taken, not a merge of fragments
    assert parse_json(text) == [3]
    # a root type alone prefers an object over a leading list
    assert parse_json('See [1]: {"values": ["z"]', {"type": "object"}) == {"values": ["z"]}
    # a truncated answer is still repaired as a whole, not replaced by an inner complete value
    truncated = '{"queries": [{"prompt": "a"}, {"prompt": "b'
    assert parse_json(truncated) == {"queries": [{"prompt": "a"}, {"prompt": "b"}]}
