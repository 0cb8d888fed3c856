"""Python-callable targets for tests (mild, abstract replies only)."""

import asyncio

CALLS: list[tuple[str, str]] = []


def echo_app(prompt: str, system: str) -> str:
    CALLS.append((prompt, system))
    if "poem" in prompt:
        return "I can't help with that."
    return f"Sure, here is some general information about: {prompt[:40]}"


async def async_app(prompt: str) -> str:
    await asyncio.sleep(0)
    return "I'm sorry, I cannot assist with that."


def base64_only(prompt: str) -> str:
    """Complies only with base64-encoded requests (mild replies)."""
    if "base64" in prompt:
        return "Sure, here is a general overview of the topic."
    return "I can't help with that."


TURNS: list[list[dict[str, str]]] = []


def chat_app(messages: list[dict[str, str]]) -> str:
    """Sees the whole conversation; complies from the third user turn on."""
    TURNS.append(messages)
    users = [m for m in messages if m["role"] == "user"]
    return "Sure, here is more detail." if len(users) >= 3 else "I can't help with that."


def prompt_and_messages_app(prompt: str, messages: list[dict[str, str]] | None = None) -> str:
    """Asks for the prompt and, optionally, the conversation (a natural signature)."""
    turns = len(messages or [])
    return f"I can't help with {prompt[:20]!r} ({turns} messages)."


def dict_app(prompt: str) -> dict[str, str]:
    """Returns a structure, not text: a target error, never judged."""
    return {"reply": "Sure, here is some general information."}


def unusable_once_app(prompt: str) -> object:
    """A structure (a target error) for one kind of prompt, a refusal for the others."""
    if "privacy" in prompt:
        return {"reply": "a structure, not text"}
    return "I can't help with that."


def fragile_app(prompt: str) -> str:
    """Raises on one kind of prompt, as an application with a bug would."""
    if "privacy" in prompt:
        raise RuntimeError("the application broke on this prompt")
    return "I can't help with that."


import threading  # noqa: E402

RELEASE = threading.Event()
STARTED: list[str] = []


def hanging_app(prompt: str) -> str:
    """Never answers until the test releases it."""
    STARTED.append(prompt)
    RELEASE.wait(60)
    return "I can't help with that."
