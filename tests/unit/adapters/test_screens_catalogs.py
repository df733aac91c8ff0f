"""The message catalogs are whole and fresh: every message of the code is in the template and in
every language, translated, with the placeholders of its English; each committed .mo is its .po
compiled; an unknown language reads English."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from babel.messages.catalog import Catalog
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
from babel.messages.frontend import parse_keywords, parse_mapping_cfg
from babel.messages.mofile import read_mo, write_mo
from babel.messages.pofile import read_po
from test_screens_i18n import COUNTS, outbox_rows

from videocopies.adapters.screens import catalogs, render, text
from videocopies.adapters.screens.messages import MESSAGES, NOUNS
from videocopies.adapters.telegram.commands import commands

ROOT = Path(__file__).resolve().parents[3]
LOCALE = catalogs.LOCALE_DIR
RUSSIAN_PLURALS = "(n%10==1 && n%100!=11 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 || n%100>=20) ? 1 : 2)"


def po(language: str) -> Catalog:
    with open(LOCALE / language / "LC_MESSAGES" / "videocopies.po", "rb") as f:
        return read_po(f, locale=language)


def ids(catalog: Catalog) -> set[Any]:
    return {m.id for m in catalog if m.id}


def extracted() -> set[Any]:
    """The msgids `make i18n-extract` finds in the code, with the mapping and keywords it uses."""
    with open(ROOT / "babel.cfg") as f:
        method_map, options_map = parse_mapping_cfg(f)
    keywords = dict(DEFAULT_KEYWORDS)
    keywords.update(parse_keywords(re.findall(r"-k (\S+)", (ROOT / "Makefile").read_text())))
    found = extract_from_dir(ROOT, method_map, options_map, keywords=keywords)
    return {message for _, _, message, _, _ in found}


def untranslated(catalog: Catalog, msgids: set[Any]) -> set[Any]:
    """The msgids the catalog has no whole translation for."""
    missing = set()
    for msgid in msgids:
        message = catalog.get(msgid)
        strings = () if message is None else message.string if isinstance(message.id, tuple) else (message.string,)
        expected = catalog.num_plurals if isinstance(msgid, tuple) else 1
        if message is None or message.fuzzy or len(strings) != expected or not all(strings):
            missing.add(msgid)
    return missing


def placeholders(words: str) -> set[str]:
    return set(re.findall(r"\{(\w+)", words))


def test_the_template_holds_every_message_of_the_code() -> None:
    with open(LOCALE / "videocopies.pot", "rb") as f:
        template = ids(read_po(f))
    code = {m.msgid for m in [*MESSAGES.values(), *NOUNS.values()]}
    assert extracted() == code
    assert template == code, "run make i18n-extract"


@pytest.mark.parametrize("language", ["en", "ru"])
def test_every_language_translates_every_message(language: str) -> None:
    catalog = po(language)
    code = {m.msgid for m in [*MESSAGES.values(), *NOUNS.values()]}
    assert ids(catalog) == code, "run make i18n-extract"
    assert not untranslated(catalog, code)
    for message in catalog:
        if message.id:
            english = " ".join(message.id) if isinstance(message.id, tuple) else message.id
            for words in message.string if isinstance(message.string, tuple) else (message.string,):
                assert placeholders(words) <= placeholders(english), (language, message.id, words)


def test_a_message_missing_in_a_language_is_found() -> None:
    catalog = po("ru")
    catalog.delete(MESSAGES["busy"].msgid)
    catalog[MESSAGES["quote"].msgid].string = ""
    catalog[NOUNS["coins"].msgid].string = ("{n} монета", "{n} монеты")
    code = {m.msgid for m in [*MESSAGES.values(), *NOUNS.values()]}
    assert untranslated(catalog, code) == {MESSAGES["busy"].msgid, MESSAGES["quote"].msgid, NOUNS["coins"].msgid}


def test_russian_has_three_plural_forms_english_two() -> None:
    assert (po("ru").num_plurals, po("ru").plural_expr) == (3, RUSSIAN_PLURALS)
    assert (po("en").num_plurals, po("en").plural_expr) == (2, "(n != 1)")


@pytest.mark.parametrize("language", ["en", "ru"])
def test_each_compiled_catalog_is_its_po_compiled(language: str) -> None:
    compiled = io.BytesIO()
    write_mo(compiled, po(language), use_fuzzy=False)
    compiled.seek(0)
    with open(LOCALE / language / "LC_MESSAGES" / "videocopies.mo", "rb") as f:
        shipped = read_mo(f)
    fresh = read_mo(compiled)
    assert _strings(shipped) == _strings(fresh), "run make i18n-compile"
    assert shipped.plural_forms == fresh.plural_forms


def _strings(catalog: Catalog) -> dict[Any, Any]:
    def whole(value: Any) -> Any:
        return tuple(value) if isinstance(value, list | tuple) else value

    return {whole(m.id): whole(m.string) for m in catalog}


def test_every_message_is_on_some_screen(monkeypatch: pytest.MonkeyPatch) -> None:
    """test_screens_i18n renders every message: a new message needs a screen there."""
    shown: set[tuple[str, Any]] = set()
    words = catalogs.words

    def spy(language: str, message: Any, values: dict[str, Any]) -> str:
        shown.add((language, message.msgid))
        return words(language, message, values)

    monkeypatch.setattr(catalogs, "words", spy)
    for language in ("en", "ru"):
        for c in COUNTS:
            for kind, payload in outbox_rows(c).values():
                render(kind, payload, language)
        commands(language)  # the menu Telegram shows (setMyCommands)
    every = {m.msgid for m in [*MESSAGES.values(), *NOUNS.values()]}
    assert {msgid for language, msgid in shown if language == "en"} == every
    # Russian may say a number without its noun ("попыток: 3"), never skip a message
    assert {m.msgid for m in MESSAGES.values()} <= {msgid for language, msgid in shown if language == "ru"}


def test_an_unknown_language_reads_english() -> None:
    assert text("de", "busy") == text("en", "busy")
    assert catalogs.catalog("pt-br") is catalogs.catalog("en")
    assert text("ru", "busy") != text("en", "busy")
