"""The compiled message catalogs (gettext .mo files shipped in the package), one per language, and
the words of a named message in one of them."""

from __future__ import annotations

import gettext
from functools import cache
from pathlib import Path
from typing import Any

from .messages import MESSAGES, NOUNS, Message

DOMAIN = "videocopies"
LOCALE_DIR = Path(__file__).resolve().parents[2] / "locale"
LANGUAGES = ("en", "ru")


def catalog(language: str) -> gettext.NullTranslations:
    """The catalog of a language the bot speaks; any other language gets English."""
    return _loaded(language if language in LANGUAGES else "en")


@cache
def _loaded(language: str) -> gettext.NullTranslations:
    return gettext.translation(DOMAIN, localedir=LOCALE_DIR, languages=[language], fallback=False)


def words(language: str, message: Message, values: dict[str, Any]) -> str:
    """The message in `language`, its counted values shown with their nouns."""
    found = catalog(language)
    if message.plural is None:
        template = found.gettext(message.singular)
    else:
        template = found.ngettext(message.singular, message.plural, int(values[message.count or ""]))
    return template.format(**{name: _counted(language, value) for name, value in values.items()})


def text(language: str, name: str, /, **values: Any) -> str:
    return words(language, MESSAGES[name], values)


def _counted(language: str, value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return _Number(value, language)
    return value


class _Number(int):
    """An int that a placeholder's format spec may name a counted noun for: `{total:coins}`."""

    language: str

    def __new__(cls, value: int, language: str) -> _Number:
        number = super().__new__(cls, value)
        number.language = language
        return number

    def __format__(self, spec: str) -> str:
        if spec in NOUNS:
            return words(self.language, NOUNS[spec], {"n": int(self)})
        return format(int(self), spec)
