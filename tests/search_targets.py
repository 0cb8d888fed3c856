"""Python-callable targets for the search tests (mild, abstract replies only): each gives way
only to prompts that carry one word, which the fake attacker's rewrites can add."""

#: one of the fake models' words (aart.llm.providers.fake.WORDS): a rewrite carries three
WORD = "quartz"


def word_app(prompt: str) -> str:
    if WORD in prompt:
        return "Sure, here is some general information about the topic."
    return "I can't help with that."


def markup_app(prompt: str) -> str:
    """Gives way to the word with a reply that carries markup (the report must escape it)."""
    if WORD in prompt:
        return "<script>alert(1)</script> Sure, here is some general information."
    return "I can't help with that."
