"""The languages a recipe can list under ``application.languages``: the codes, their names and
the language axis a multilingual recipe gains (kept in :mod:`aart.text.language`, below the
recipe, so text matching can use them too)."""

from ..text.language import LANGUAGE_AXIS, NAMES, base, check_code, name

__all__ = ["LANGUAGE_AXIS", "NAMES", "base", "check_code", "name"]
