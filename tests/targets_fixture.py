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
