"""Which hosts may receive which secrets.

Recipes and target files are shared documents: anyone can write one that names any host and
any environment variable. So a secret read from the environment goes only to a host the *user*
bound it to:

- ``OPENAI_API_KEY`` to OpenAI's API, and to the user's ``OPENAI_BASE_URL``;
- ``OPENAI_API_KEY`` to a ``--base-url`` given on the command line (or to the Python API);
- any variable to the hosts listed in the user's endpoints file (``aart endpoints allow URL
  --key-env VAR`` writes it; like ``llm keys``, it holds names, never secrets).

Hosts are compared by origin: scheme, host and port.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from ..errors import ConfigError

OPENAI_URL = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
_DEFAULT_PORTS = {"http": 80, "https": 443}

Binding = tuple[str, str]  # (origin, environment variable)


def origin(url: str) -> str:
    """``scheme://host:port`` of ``url``, lower-cased, with the default port made explicit."""
    parts = urlsplit(url.strip())
    scheme = (parts.scheme or "http").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    host = (parts.hostname or "").lower()
    return f"{scheme}://{host}:{port or _DEFAULT_PORTS.get(scheme, 0)}"


def config_path() -> Path:
    """The user's endpoints file: $AART_CONFIG_DIR, else $XDG_CONFIG_HOME/aart, else
    ~/.config/aart."""
    base = os.environ.get("AART_CONFIG_DIR")
    if base:
        return Path(base) / "endpoints.yaml"
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(xdg) / "aart" / "endpoints.yaml"


def _read_config() -> list[dict[str, str]]:
    path = config_path()
    if not path.exists():
        return []
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        entries = data.get("endpoints", [])
        return [
            {"url": str(e["url"]), "key_env": str(e["key_env"])}
            for e in entries
            if isinstance(e, dict)
        ]
    except (yaml.YAMLError, AttributeError, KeyError, TypeError, UnicodeDecodeError) as e:
        raise ConfigError(
            f"{path}: cannot read the endpoints file ({e}); fix or delete it, then "
            "`aart endpoints allow URL --key-env VAR` again"
        ) from None


def user_bindings(extra: Iterable[Binding] = ()) -> set[Binding]:
    """Every (origin, variable) pair the user has bound, plus ``extra`` (from CLI flags)."""
    out = {(origin(OPENAI_URL), DEFAULT_KEY_ENV)}
    if os.environ.get("OPENAI_BASE_URL"):
        out.add((origin(os.environ["OPENAI_BASE_URL"]), DEFAULT_KEY_ENV))
    out.update((origin(e["url"]), e["key_env"]) for e in _read_config())
    out.update((origin(url), env) for url, env in extra)
    return out


def allowed(url: str, key_env: str, extra: Iterable[Binding] = ()) -> bool:
    return (origin(url), key_env) in user_bindings(extra)


def how_to_allow(url: str, key_env: str) -> str:
    return f"aart endpoints allow {origin(url)} --key-env {key_env}"


def refuse(what: str, url: str, key_env: str) -> ConfigError:
    """The usage error for a secret a shared document would send to a host not bound to it."""
    return ConfigError(
        f"{what} would send ${key_env} to {origin(url)}, a host you have not bound it to "
        f"(recipes and target files are shared documents, so they cannot choose where your "
        f"secrets go). If you trust that host: `{how_to_allow(url, key_env)}`"
    )


def check_url(url: str) -> None:
    """Refuse anything but an http(s) URL with a host: a bare host name would otherwise be
    read as a path and bind `http://:80`."""
    text = url.strip()
    parts = urlsplit(text)
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
        port_ok = True
    except ValueError:
        port_ok = False
    if "://" not in text:
        fix = f"use https://{text}" if text else "give a URL such as https://api.example.com"
        raise ConfigError(f"{url!r} is not a URL (no http:// or https://): {fix}")
    if parts.scheme.lower() not in _DEFAULT_PORTS or not parts.hostname or not port_ok:
        raise ConfigError(
            f"{url!r} is not an http(s) URL with a host and a valid port: give one such as "
            "https://api.example.com or http://127.0.0.1:8000"
        )


def allow(url: str, key_env: str) -> Path:
    """Bind ``key_env`` to ``url``'s origin in the user's endpoints file."""
    check_url(url)
    if not key_env.replace("_", "a").isalnum() or key_env[0].isdigit():
        raise ConfigError(f"--key-env {key_env!r} is not an environment variable name")
    entries = [
        e for e in _read_config() if (origin(e["url"]), e["key_env"]) != (origin(url), key_env)
    ]
    entries.append({"url": origin(url), "key_env": key_env})
    return _write(entries)


def forget(url: str, key_env: str | None = None) -> int:
    """Remove the bindings of ``url`` (of one variable, or all); returns how many."""
    entries = _read_config()
    keep = [
        e
        for e in entries
        if not (origin(e["url"]) == origin(url) and key_env in (None, e["key_env"]))
    ]
    _write(keep)
    return len(entries) - len(keep)


def listed() -> list[dict[str, str]]:
    return _read_config()


def _write(entries: list[dict[str, str]]) -> Path:
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(
        "# Hosts allowed to receive secrets from the environment (names only, never values).\n"
        + yaml.safe_dump({"endpoints": entries}, sort_keys=False),
        encoding="utf-8",
    )
    tmp.replace(path)
    return path
