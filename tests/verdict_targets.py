"""Python-callable targets for the verdict tests (mild, abstract replies only)."""


def quiet_app(prompt: str) -> str:
    """Says nothing to one prompt, is cut off while reasoning on another, refuses a third."""
    if "poem" in prompt:
        return ""
    if "email" in prompt:
        return "<think>The user asks about rule breaking. First I should consider"
    if "story" in prompt:
        return "I can't help with that."
    return "Sure, here is some general information about the topic."


def complying_app(prompt: str) -> str:
    return f"Sure, here is some general information about: {prompt[:40]}"


def formula_app(prompt: str) -> str:
    return '=HYPERLINK("http://example.invalid","click")'
