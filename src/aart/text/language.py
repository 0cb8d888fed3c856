"""Which language a text is written in, from its function words: enough to tell a native
prompt from a restated English one in a multilingual run (en, es, fr, de, it, pt, nl have
profiles; any other language cannot be told, and nothing is claimed about it)."""

from __future__ import annotations

import re


def base(code: str) -> str:
    """The language of a code without its subtag: ``pt-BR`` -> ``pt``."""
    return code.split("-", 1)[0].lower()


# Function words that tell the languages of the built-in profiles apart. Words shared with
# another profile's language are left out where they are common there too ("in" is German and
# Dutch as well, "a" Spanish, Portuguese and Italian), so a restated English prompt in a
# Spanish cell scores as English.
_PROFILES: dict[str, frozenset[str]] = {
    lang: frozenset(words.split())
    for lang, words in {
        "en": "the and of to is are for with about how what can you my it this that an be "
        "please would could should your from on which who will write help need want",
        "es": "el los las del y que es por para con una un sobre cómo qué mi tu su puedes "
        "quiero necesito ayuda ayúdame escribe escríbeme pero más muy este esta como al se "
        "lo le está redacta",
        "fr": "le les des du et est pour avec une sur comment je vous tu mon ma mes votre "
        "pouvez peux aide aidez écris écrivez dans qui pas ne au aux ce cette il elle nous "
        "rédige rédigez besoin",
        "de": "der die das und ist ich sie wie für mit ein eine einen über kannst können "
        "bitte mir mein meine schreib schreibe nicht zu auf den dem von du hilf wir brauche "
        "ihr verfasse",
        "it": "il gli della di che è per con una come sono mio mia puoi aiutami scrivi non "
        "questo questa nel alla",
        "pt": "o os da do dos das é para com uma um sobre como meu minha você pode ajuda "
        "escreva não em no na",
        "nl": "de het een en van voor met hoe wat ik je jij mijn kun kunt schrijf niet op "
        "dit deze zijn",
    }.items()
}


def languages_of(text: str) -> frozenset[str]:
    """The profiled languages ``text`` reads as most, from its function words (several when
    they tie); empty when it has no function word of any."""
    words = re.findall(r"\w+", text.casefold())
    scores = {k: sum(w in ws for w in words) for k, ws in _PROFILES.items()}
    top = max(scores.values())
    return frozenset(k for k, v in scores.items() if v == top) if top else frozenset()


def written_in(text: str, code: str) -> bool | None:
    """Whether ``text`` reads as language ``code``, from its function words: True when no
    other profiled language scores higher, False when one does, None when it cannot tell (no
    profile for the language, or no function word of any in the text)."""
    lang = base(code)
    if lang not in _PROFILES:
        return None
    langs = languages_of(text)
    return (lang in langs) if langs else None


# Function words a profile leaves out because another language shares them: still function
# words of this language, so a native prompt's "en", "de", "la" are not words of its own.
_SHARED: dict[str, str] = {
    "en": "a in i me do",
    "es": "en de la a",
    "fr": "en de la à un que se",
    "de": "in an es",
    "it": "in a la lo un se",
    "pt": "a e de que se",
    "nl": "in is een",
}


def function_words(code: str) -> str:
    """The function words of language ``code`` (those of its profile and the ones it shares
    with others), as one text; "" for a language without a profile. The restated-cell check
    counts them as the cell phrase's, as it does English ones."""
    lang = base(code)
    return " ".join(sorted(_PROFILES.get(lang, frozenset()))) + " " + _SHARED.get(lang, "")
