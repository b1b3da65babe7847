"""Subtitles and transcripts (.srt, .vtt: a meeting's transcript from Teams or Zoom, a lecture's or a
video's captions) as Sections: the words said, without cue numbers, timestamps and markup, each
speaker's name once where the speaker changes, in passages of about ``TARGET_WORDS`` words cited by
the time they cover ("meeting.vtt 00:12:30-00:14:05"). Rolling captions (YouTube's, where each cue
repeats the line before it) are read once. ``reader`` calls ``subtitle_sections`` with the file's text;
None where it holds no cue (a .srt that is something else: read as text)."""

from __future__ import annotations

import re
from pathlib import Path

from ragcli.ingest.formats import Section
from ragcli.ingest.passages import TARGET_WORDS

__all__ = ["subtitle_sections"]

# "00:01:02,500 --> 00:01:04,000" (SRT), "01:02.500 --> 01:04.000 align:start" (WebVTT, hours optional)
_TIMING = re.compile(r"^\s*((?:\d+:)?\d{1,2}:\d{2}[,.]\d{1,3})\s*-->\s*((?:\d+:)?\d{1,2}:\d{2}[,.]\d{1,3})")
_VOICE = re.compile(r"<v(?:\.[^\s>]*)?\s+([^>]*)>")  # WebVTT's <v Roger Bingham> (Teams writes one per cue)
_TAG = re.compile(r"<[^>]*>|\{\\[^}]*\}")  # <i>, <c.yellow>, <00:00:01.000> (karaoke), {\an8} (SRT's ASS tags)
# "Roger Bingham: We are …" (Zoom's transcripts name the speaker so): a name of one to four capitalised words
_SAID_BY = re.compile(r"^((?:[A-Z][\w'.-]*)(?: [A-Z][\w'.-]*){0,3}):\s+(?=\S)")
_BLOCKS = ("NOTE", "STYLE", "REGION")  # WebVTT blocks that are no cues


def subtitle_sections(path: Path, text: str) -> list[Section] | None:
    """The sections of the subtitle file ``path`` whose text is ``text``; None where it has no cue."""
    cues = list(_cues(text))
    if not cues:
        return None
    # "Name: " names a speaker where half the cues or more start so (Zoom's transcripts); in captions where
    # a cue or two do ("Note: the exit is closed") it is words said
    named = [m[1] for _, _, who, said in cues if not who and (m := _SAID_BY.match(said))]
    speakers = set(named) if len(named) >= 2 and 2 * len(named) >= len(cues) else set()
    cues = [(start, end, who, said) if who or not (m := _SAID_BY.match(said)) or m[1] not in speakers
            else (start, end, m[1], said[m.end():]) for start, end, who, said in cues]
    sections: list[Section] = []
    lines: list[str] = []
    words = 0
    first = last = ""
    speaker = None
    for start, end, who, said in cues:
        if who and who != speaker:
            said = f"{who}: {said}"
            speaker = who
        n = len(said.split())
        if lines and words + n > TARGET_WORDS:
            sections.append(_section(path, lines, first, last))
            lines, words = [], 0
        if not lines:
            first = start
        lines.append(said)
        words += n
        last = end
    if lines:
        sections.append(_section(path, lines, first, last))
    return sections


def _section(path: Path, lines: list[str], first: str, last: str) -> Section:
    return Section(path.stem, "\n".join(lines), part=f"{first}-{last}")


def _cues(text: str):
    """(start, end, speaker or "", text) of each cue with words, times as "00:12:30"; a line that the
    cue before it showed already (rolling captions) left out."""
    blocks = re.split(r"\n\s*\n", text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff"))
    shown: list[str] = []  # the previous cue's lines
    for block in blocks:
        lines = [line for line in block.split("\n") if line.strip()]
        at = next((i for i, line in enumerate(lines[:3]) if _TIMING.match(line)), None)
        if at is None or lines[0].split(" ", 1)[0] in _BLOCKS:
            continue
        timing = _TIMING.match(lines[at])
        who, said = "", []
        for line in lines[at + 1:]:
            voice = _VOICE.search(line)
            if voice:
                who = " ".join(voice[1].split())
            plain = " ".join(_TAG.sub("", line).split())
            if plain and plain not in shown:
                said.append(plain)
        shown = [" ".join(_TAG.sub("", line).split()) for line in lines[at + 1:]]
        if said:
            yield _clock(timing[1]), _clock(timing[2]), who, " ".join(said)


def _clock(stamp: str) -> str:
    """ "1:02.500" or "00:01:02,500" as "00:01:02" (to the second: what a citation needs)."""
    parts = re.split(r"[:,.]", stamp)[:-1]
    h, m, s = ([0] * (3 - len(parts)) + [int(p) for p in parts])[-3:]
    return f"{h:02}:{m:02}:{s:02}"
