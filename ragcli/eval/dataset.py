"""QA datasets in the development pool's JSONL format, with filters and sampling."""

from __future__ import annotations

import codecs
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ragcli.errors import InputPathError, UsageError
from ragcli.types import Document


_WIDE_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
              (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of a data set's lines: UTF-8, with or without a byte-order mark, or UTF-16
    or UTF-32 with one (PowerShell's ``>`` writes UTF-16). A line that is not UTF-8 is refused by
    number (it was a traceback; a file starting with a byte-order mark was "not a dataset record")."""
    with path.open("rb") as fh:
        head = fh.read(4)
        wide = next((name for mark, name in _WIDE_BOMS if head.startswith(mark)), None)
        if wide is not None:
            fh.seek(0)
            try:
                text = fh.read().decode(wide)
            except UnicodeDecodeError as exc:
                raise UsageError(f"{path} is not {wide.upper()} throughout (byte {exc.start})",
                                 hint="save the data set as UTF-8") from None
            # not splitlines: a JSON string may hold U+2028 (a line break only outside JSON: \r, \n are escaped in it)
            yield from enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), start=1)
            return
        fh.seek(len(codecs.BOM_UTF8) if head.startswith(codecs.BOM_UTF8) else 0)
        lineno = 0
        for chunk in fh:  # lines as text mode reads them: "\n", "\r\n" or a lone "\r" (an old Mac export) ends one
            for raw in chunk.splitlines():
                lineno += 1
                try:
                    yield lineno, raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise UsageError(f"{path}:{lineno} is not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
                                     hint="save the data set as UTF-8 (from a Windows code page: iconv -f cp1252 -t utf-8)") from None


@dataclass(frozen=True)
class Example:
    id: str
    question: str
    answers: tuple[str, ...]
    dataset: str = ""
    type: str = ""
    paragraphs: tuple[dict, ...] = field(default=(), repr=False)

    @property
    def gold_pids(self) -> list[str]:
        return [p["pid"] for p in self.paragraphs if p.get("is_supporting")]

    def gold_documents(self) -> list[Document]:
        return [Document(p["pid"], p.get("title", ""), p.get("text") or "", 1.0, "gold", "gold paragraph")
                for p in self.paragraphs if p.get("is_supporting")]


def _question(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f'"question" is {type(value).__name__}, not text')
    return value


def _answers(value: object) -> tuple[str, ...]:
    """The reference answers: a list of texts (a lone text is one answer; numbers are read as they are
    written, 1912 as "1912"), never the letters of one string."""
    if value is None:
        return ()
    items = [value] if isinstance(value, (str, int, float)) and not isinstance(value, bool) else value
    if not isinstance(items, list):
        raise TypeError(f'"answers" is {type(value).__name__}, not a list of texts')
    out = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise TypeError(f'an answer is {json.dumps(item)}, not text')
        out.append(item if isinstance(item, str) else json.dumps(item))
    return tuple(out)


def _paragraphs(value: object) -> tuple[dict, ...]:
    """The paragraphs, each with a "pid" and a text "title": one without a pid gets the one
    ``ragcli index`` gives such a record (its "id" as text, else its title and collapsed text hashed;
    an "id" that is a number numbers it within its question only), so that recall finds it in a
    ``--corpus`` built from the same records. A "text" is needed only where one is read: to index
    the paragraphs themselves, or as an oracle's documents."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(p, dict) for p in value):
        raise TypeError('"paragraphs" is not a list of objects')
    from ragcli.ingest.passages import normalise, record_pid, record_title

    out = []
    for i, p in enumerate(value, start=1):
        text = p.get("text")
        if text is not None and not isinstance(text, str):
            raise TypeError(f'paragraph {i} has a "text" that is not text')
        if p.get("pid") in (None, "") and text is None:
            raise TypeError(f'paragraph {i} has neither a "pid" nor a "text"')
        title = record_title(p)
        out.append(dict(p, title=title, pid=record_pid(p, title, normalise(text or ""), number_ids=False)))
    return tuple(out)


def load_examples(path: Path, *, dataset: str | None = None, type_: str | None = None, limit: int | None = None,
                  sample: int | None = None, seed: int = 0, per_dataset: int | None = None,
                  skip_per_dataset: int = 0, need_answers: bool = True) -> list[Example]:
    """The dataset's answerable questions (``need_answers``; all for long-form requests) after the
    filters; ``skip_per_dataset`` leaves out the first N of each data set (in file order: a slice not
    used while tuning), ``per_dataset`` keeps the first N of each after that, then ``sample`` and
    ``limit``. An id used twice is refused: results are kept, scored and resumed by id."""
    if not path.is_file():
        raise InputPathError(f"dataset not found: {path}")
    out: list[Example] = []
    datasets = {d.strip() for d in dataset.split(",") if d.strip()} if dataset else None
    types = {t.strip() for t in type_.split(",") if t.strip()} if type_ else None
    seen_datasets: set[str] = set()
    seen_types: set[str] = set()
    ids: dict[str, int] = {}
    unanswered = 0
    for lineno, line in _lines(path):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
            ex = Example(str(r["id"]), _question(r["question"]), _answers(r.get("answers")),
                         r.get("dataset", ""), r.get("type", ""), _paragraphs(r.get("paragraphs")))
        except KeyError as exc:
            raise UsageError(f"{path}:{lineno} is not a dataset record: it has no \"{exc.args[0]}\" field",
                             hint='each line needs "id" and "question"; "answers" and "paragraphs" for scores') from None
        except (ValueError, TypeError, AttributeError) as exc:
            raise UsageError(f"{path}:{lineno} is not a dataset record ({exc})") from None
        seen_datasets.add(ex.dataset)
        seen_types.add(ex.type)
        if datasets and ex.dataset not in datasets:
            continue
        if types and ex.type not in types:
            continue
        if not ex.answers and need_answers:  # unanswerable (SQuAD 2.0): no EM/F1 possible
            unanswered += 1
            continue
        if ex.id in ids:  # of the questions run: a resumed run scored the last one's result for each
            raise UsageError(f"{path}:{lineno} repeats the id {ex.id!r} of line {ids[ex.id]}",
                             hint="give each question an id of its own: results are kept and resumed by id")
        ids[ex.id] = lineno
        out.append(ex)
    _check_named(path, "data set", "--dataset", datasets, seen_datasets)
    _check_named(path, "type", "--type", types, seen_types)
    if per_dataset is not None or skip_per_dataset:
        counts: dict[str, int] = {}
        kept = []
        for ex in out:
            counts[ex.dataset] = n = counts.get(ex.dataset, 0) + 1
            if n > skip_per_dataset and (per_dataset is None or n <= skip_per_dataset + per_dataset):
                kept.append(ex)
        out = kept
    if sample is not None and sample < len(out):
        out = random.Random(seed).sample(out, sample)
    if limit is not None:
        out = out[:limit]
    if not out:
        filtered = datasets or types or limit is not None or sample is not None or per_dataset is not None or skip_per_dataset
        if unanswered and not filtered:
            raise UsageError(f"no question in {path} has reference answers (\"answers\"), which EM and F1 need",
                             hint='give each line "answers": [...], or ask for paragraphs with --long-form')
        left_out = f" ({unanswered} without reference answers left out)" if unanswered else ""
        raise UsageError(f"no questions in {path} match the filters{left_out}")
    return out


def _check_named(path: Path, what: str, flag: str, named: set[str] | None, seen: set[str]) -> None:
    """A name given to ``flag`` that no question has is an error, not a filter that drops it without a
    word ("--dataset hotpotqa,squad" ran HotpotQA alone: the pool's SQuAD is "squad_v2")."""
    unknown = sorted((named or set()) - seen)
    if unknown:
        has = ", ".join(sorted(n for n in seen if n)) or "none"
        raise UsageError(f"no {what} {', '.join(repr(n) for n in unknown)} in {path.name}",
                         hint=f"{flag} takes any of its {what}s: {has}")


def long_form(examples: list[Example]) -> list[Example]:
    """Each question turned into a request for a paragraph about its first supporting page
    ("Tell me about Neil Peart."), FLARE's own setting. Its gold paragraphs are that page's; there is
    no short answer, so EM and F1 are not computed: read recall and *sourced* (groundedness)."""
    out = []
    for ex in examples:
        title = next((p.get("title", "") for p in ex.paragraphs if p.get("is_supporting")), "")
        if not title:
            continue
        paragraphs = tuple(dict(p, is_supporting=bool(p.get("is_supporting")) and p.get("title") == title)
                           for p in ex.paragraphs)
        out.append(Example(ex.id, f"Tell me about {title}.", (), ex.dataset, ex.type, paragraphs))
    if not out:
        raise UsageError("--long-form: no question has a supporting paragraph with a title")
    return out


def corpus_records(examples: list[Example]) -> list[dict]:
    """The union of the examples' paragraphs, as {pid, title, text} records (an eval corpus)."""
    seen: dict[str, dict] = {}
    for ex in examples:
        for p in ex.paragraphs:
            if p.get("text") is None:
                raise UsageError(f"question {ex.id!r} has a paragraph without \"text\" ({p['pid']}): the data "
                                 "set's paragraphs cannot be indexed", hint="give --corpus FILE or --index DIR to retrieve from")
            seen.setdefault(p["pid"], {"pid": p["pid"], "title": p.get("title", ""), "text": p["text"]})
    return list(seen.values())
