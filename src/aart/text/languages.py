"""Languages a recipe can list under ``application.languages``: ISO 639-1 codes (an optional
region or script subtag, as in ``pt-BR`` or ``zh-Hant``, is kept), each with the English name
the generation and verification prompts use ("write it in Spanish")."""

from __future__ import annotations

import re

#: the axis a multilingual recipe gains: one cell per language (see Recipe)
LANGUAGE_AXIS = "language"

NAMES: dict[str, str] = {
    "af": "Afrikaans",
    "am": "Amharic",
    "ar": "Arabic",
    "az": "Azerbaijani",
    "be": "Belarusian",
    "bg": "Bulgarian",
    "bn": "Bengali",
    "bs": "Bosnian",
    "ca": "Catalan",
    "cs": "Czech",
    "cy": "Welsh",
    "da": "Danish",
    "de": "German",
    "el": "Greek",
    "en": "English",
    "eo": "Esperanto",
    "es": "Spanish",
    "et": "Estonian",
    "eu": "Basque",
    "fa": "Persian",
    "fi": "Finnish",
    "fil": "Filipino",
    "fr": "French",
    "ga": "Irish",
    "gl": "Galician",
    "gu": "Gujarati",
    "ha": "Hausa",
    "he": "Hebrew",
    "hi": "Hindi",
    "hr": "Croatian",
    "hu": "Hungarian",
    "hy": "Armenian",
    "id": "Indonesian",
    "ig": "Igbo",
    "is": "Icelandic",
    "it": "Italian",
    "ja": "Japanese",
    "jv": "Javanese",
    "ka": "Georgian",
    "kk": "Kazakh",
    "km": "Khmer",
    "kn": "Kannada",
    "ko": "Korean",
    "ky": "Kyrgyz",
    "lo": "Lao",
    "lt": "Lithuanian",
    "lv": "Latvian",
    "mk": "Macedonian",
    "ml": "Malayalam",
    "mn": "Mongolian",
    "mr": "Marathi",
    "ms": "Malay",
    "mt": "Maltese",
    "my": "Burmese",
    "ne": "Nepali",
    "nl": "Dutch",
    "no": "Norwegian",
    "nb": "Norwegian Bokmål",
    "nn": "Norwegian Nynorsk",
    "pa": "Punjabi",
    "pl": "Polish",
    "ps": "Pashto",
    "pt": "Portuguese",
    "ro": "Romanian",
    "ru": "Russian",
    "si": "Sinhala",
    "sk": "Slovak",
    "sl": "Slovenian",
    "so": "Somali",
    "sq": "Albanian",
    "sr": "Serbian",
    "sv": "Swedish",
    "sw": "Swahili",
    "ta": "Tamil",
    "te": "Telugu",
    "tg": "Tajik",
    "th": "Thai",
    "tl": "Tagalog",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "ur": "Urdu",
    "uz": "Uzbek",
    "vi": "Vietnamese",
    "xh": "Xhosa",
    "yo": "Yoruba",
    "zh": "Chinese",
    "zu": "Zulu",
}

_CODE = re.compile(r"^([a-z]{2,3})(?:-([A-Za-z]{2}|[A-Za-z]{4}|\d{3}))?$")


def check_code(code: str) -> str:
    """``code`` as written when it names a known language; else ValueError saying why."""
    if not isinstance(code, str) or not code.strip():
        raise ValueError("a language is blank; write an ISO 639-1 code such as en, es, fr, de")
    text = code.strip()
    m = _CODE.match(text)
    if m and m.group(1) in NAMES:
        return text
    low = _CODE.match(text[:3].lower() + text[3:])
    if low and low.group(1) in NAMES:
        raise ValueError(f"language {code!r}: write the language part in lower case ({low[0]!r})")
    raise ValueError(
        f"unknown language {code!r}; write an ISO 639-1 code such as en, es, fr, de "
        "(optionally with a region: pt-BR)"
    )


def base(code: str) -> str:
    """The language of a code without its subtag: ``pt-BR`` -> ``pt``."""
    return code.split("-", 1)[0].lower()


def name(code: str) -> str:
    """How a prompt names the language: "Spanish", "Portuguese (BR)"."""
    primary, _, sub = code.partition("-")
    english = NAMES.get(primary.lower(), code)
    return f"{english} ({sub})" if sub else english
