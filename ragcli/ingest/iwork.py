"""Apple iWork files — Pages (.pages), Numbers (.numbers), Keynote (.key) — as Sections, with the standard
library only. iWork '13 and later: a zip of .iwa files (``snappy`` frames them) holding protobuf messages;
the text is in TSWP.StorageArchive messages (its field 3) and a table's strings in TST.TableDataList
ones. Read without Apple's schema: the few field numbers used here come from the message definitions
dumped from the apps (psobot/keynote-parser's protos). Pages: the document's text, then its text boxes,
headers, footnotes and table cells, in one section; Keynote: a section per slide ("Deck > Slide title",
cited "slide 3"), with its notes; Numbers: the strings of each table ("Workbook > Sheet > Table") and the
text boxes. Numbers' numeric cells (kept as numbers in the table's tiles), styles and formulas are not
read. iWork '09: a zip of XML (index.xml, index.apxl) whose paragraphs (sf:p) and cell strings are read.
Where neither gives text, the QuickLook/Preview.pdf older files carry is read as a PDF. ``reader`` calls
``iwork_sections``."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path
from typing import Iterator, NamedTuple

from ragcli.ingest.formats import Section, SkipFile
from ragcli.ingest.snappy import SnappyError, iwa_unframe, varint
from ragcli.ingest.zipxml import parsed, read_capped, skips

MAX_BYTES = 200 * 1024 * 1024  # all of a file's .iwa unpacked, or its XML: a bomb is skipped, not read
_KINDS = {"pages": "Pages", "numbers": "Numbers", "key": "Keynote"}
_STORAGE = {2001, 2005}  # TSWP.StorageArchive (2005: as some versions number it)
_DATA_LIST, _TABLE_INFO, _TABLE_MODEL = 6005, 6000, 6001  # TST.TableDataList, .TableInfoArchive, .TableModelArchive
_KN_SHOW, _KN_SLIDE_NODE, _KN_SLIDE, _KN_PLACEHOLDER = 2, 4, 5, 7  # in a Keynote deck
_TN_SHEET = 2  # TN.SheetArchive, in a Numbers workbook
_NOTE, _CELL = 4, 5  # StorageArchive.kind: a slide's presenter notes, a table cell's text
_OBJECT = re.compile("[\ufffc\u200b\ufeff\x00-\x08\x0b-\x1f]")  # an attachment's place (a table, an image), controls
_SF = "{http://developer.apple.com/namespaces/sf}"
_SFA = "{http://developer.apple.com/namespaces/sfa}"
_KEY = "{http://developer.apple.com/namespaces/keynote2}"


class _Damaged(ValueError):
    """An .iwa's protobuf is cut short or no protobuf."""


class _Object(NamedTuple):
    type: int
    payload: bytes
    file: str


def iwork_sections(path: Path, data: bytes) -> list[Section]:
    """The sections of a .pages, .numbers or .key file whose bytes are ``data``; SkipFile if it is not one,
    is protected by a password, or holds no text."""
    kind = path.suffix.lower()[1:]
    name = _KINDS.get(kind, "iWork")
    if not data.startswith(b"PK"):
        if kind == "key":
            pem = b"-----BEGIN" in data[:4096]
            raise SkipFile("not a Keynote deck (" + ("a PEM key or certificate" if pem else "no zip: a cryptographic "
                                                     "key, perhaps") + ")")
        raise SkipFile(f"not a {name} file (not the zip it should be)")
    with skips(name, f"not a {name} file (a damaged zip)"), zipfile.ZipFile(io.BytesIO(data)) as z:
        names = z.namelist()
        if any(n.lower().endswith(".iwph") for n in names) or any(
                i.compress_type not in (0, 8, 12, 14) for i in z.infolist()):
            raise SkipFile(f"{name} file protected by a password")  # (iWork's own encryption: no zip method)
        root = _package_root(names)
        if root is None:
            if kind == "key":
                raise SkipFile("not a Keynote deck (a zip without a Keynote document in it)")
            raise SkipFile(f"not a {name} file (a zip without an iWork document in it)")
        sections: list[Section] = []
        damage = ""
        try:
            sections = _iwa_sections(z, root, kind, path.stem) or _xml_sections(z, root, kind, path.stem)
        except (_Damaged, SnappyError) as exc:
            damage = str(exc) or "cut short"
        except SyntaxError as exc:  # ElementTree's ParseError: iWork '09's XML
            damage = f"its XML is damaged ({exc})"
        except (zipfile.BadZipFile, KeyError, EOFError, NotImplementedError, OSError, RuntimeError) as exc:
            damage = f"a damaged part ({type(exc).__name__})"
        if sections:
            return sections
        preview = next((n for n in names if n[len(root):] in ("QuickLook/Preview.pdf", "preview.pdf")), None)
        if preview is not None:
            return _pdf_sections(read_capped(z, preview, MAX_BYTES), path.stem)
    if damage:
        raise SkipFile(f"damaged {name} file: {damage}")
    raise SkipFile(f"no text found in this {name} file (a Keynote deck of images, an empty document?)")


def _package_root(names: list[str]) -> str | None:
    """The folder in the zip that holds the document ("" or "Deck.key/", a package zipped with its folder),
    or None where there is none (nor a preview of one)."""
    for n in names:
        for part in ("Index.zip", "Index/Document.iwa", "index.xml", "index.xml.gz", "index.apxl", "index.apxl.gz",
                     "QuickLook/Preview.pdf"):
            if n.endswith(part) and n[:-len(part)].count("/") <= 1 and (n == part or n[-len(part) - 1] == "/"):
                return n[:-len(part)]
    return None


# --- iWork '13 and later --------------------------------------------------------------------------------------

def _iwa_files(z: zipfile.ZipFile, root: str) -> Iterator[tuple[str, bytes, str]]:
    """(name, unpacked bytes, why it is damaged or "") of each .iwa in the document (in Index.zip or
    Index/), in the zip's order; a damaged one's bytes are those of its chunks before the damage."""
    names = z.namelist()
    if root + "Index.zip" in names:
        z = zipfile.ZipFile(io.BytesIO(read_capped(z, root + "Index.zip", MAX_BYTES)))
        names, root = z.namelist(), ""
    total = 0
    for n in names:
        if n.startswith(root + "Index/") and n.endswith(".iwa"):
            out = bytearray()
            try:
                iwa_unframe(read_capped(z, n, MAX_BYTES), MAX_BYTES - total, out)
                damage = ""
            except SnappyError as exc:
                damage = str(exc)
            total += len(out)
            yield n[len(root) + len("Index/"):], bytes(out), damage


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    return varint(data, pos, 10, _Damaged, "a protobuf cut short")  # (64 bits: ten bytes at most)


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) of each field of a protobuf message: an int for a varint (and fixed ones), the
    bytes of a length-delimited field."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if length > len(data) - pos:
                raise _Damaged("a protobuf field cut short")
            value, pos = data[pos:pos + length], pos + length
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            if pos + width > len(data):
                raise _Damaged("a protobuf field cut short")
            value, pos = int.from_bytes(data[pos:pos + width], "little"), pos + width
        else:
            raise _Damaged(f"no protobuf (wire type {wire})")
        out.append((number, value))
    return out


def _get(fields: list, number: int, default=None):
    return next((v for n, v in fields if n == number), default)


def _all(fields: list, number: int) -> list:
    return [v for n, v in fields if n == number]


def _ref(fields: list, number: int) -> int | None:
    """The object a TSP.Reference field points at (its identifier, field 1)."""
    value = _get(fields, number)
    return _get(_fields(value), 1) if isinstance(value, bytes) else None


def _objects(z: zipfile.ZipFile, root: str) -> tuple[dict[int, _Object], str]:
    """({identifier: object} of every message in the document's .iwa files, in their order; why one was
    damaged, or ""). A damaged .iwa (a master slide's, a table's) costs its own objects from the damage on,
    not the document's others."""
    objects: dict[int, _Object] = {}
    damage = ""
    for name, raw, broken in _iwa_files(z, root):
        try:
            _read_objects(name, raw, objects)
        except _Damaged as exc:
            broken = broken or str(exc)
        damage = damage or (f"{name}: {broken}" if broken else "")
    return objects, damage


def _read_objects(name: str, raw: bytes, objects: dict[int, _Object]) -> None:
    pos = 0
    while pos < len(raw):
        length, pos = _varint(raw, pos)
        if length > len(raw) - pos:
            raise _Damaged("an archive header cut short")
        info = _fields(raw[pos:pos + length])
        pos += length
        identifier = _get(info, 1)
        for message in _all(info, 2):
            message = _fields(message) if isinstance(message, bytes) else []
            size = _get(message, 3, 0)
            if not isinstance(size, int) or size > len(raw) - pos:
                raise _Damaged("a message cut short")
            if isinstance(identifier, int) and identifier not in objects:
                objects[identifier] = _Object(_get(message, 1, 0), raw[pos:pos + size], name)
            pos += size


def _text(obj: _Object) -> tuple[int, str]:
    """(kind, text) of a StorageArchive: its text strings joined, without attachments' marks; (0, "") where
    it is damaged."""
    try:
        fields = _fields(obj.payload)
    except _Damaged:
        return 0, ""
    text = "".join(v.decode("utf-8", "replace") for v in _all(fields, 3) if isinstance(v, bytes))
    text = _OBJECT.sub("", text.replace("\u2028", "\n").replace("\u2029", "\n"))
    kind = _get(fields, 1, 0)
    return (kind if isinstance(kind, int) else 0), "\n".join(line.strip() for line in text.splitlines() if line.strip())


def _strings(obj: _Object) -> list[str]:
    """The strings of a TableDataList of strings (listType 1), by key: the order they were first typed;
    those before the damage where it is damaged."""
    try:
        fields = _fields(obj.payload)
    except _Damaged:
        return []
    if _get(fields, 1) != 1:
        return []
    entries = []
    for entry in _all(fields, 3):
        try:
            e = _fields(entry) if isinstance(entry, bytes) else []
        except _Damaged:
            break
        s = _get(e, 3)
        if isinstance(s, bytes) and s.strip():
            key = _get(e, 1, 0)
            entries.append((key if isinstance(key, int) else 0, s.decode("utf-8", "replace").strip()))
    return [s for _, s in sorted(entries)]


def _iwa_sections(z: zipfile.ZipFile, root: str, kind: str, stem: str) -> list[Section]:
    names = z.namelist()
    if root + "Index.zip" not in names and not any(n.startswith(root + "Index/") for n in names):
        return []
    objects, damage = _objects(z, root)
    if kind == "key":
        sections = _keynote(objects, stem)
    elif kind == "numbers":
        sections = _numbers(objects, stem)
    else:
        texts = [t for o in objects.values() if o.type in _STORAGE and o.file != "DocumentStylesheet.iwa"
                 for k, t in [_text(o)] if t]
        cells = [s for o in objects.values() if o.type == _DATA_LIST for s in _strings(o)]
        body = "\n\n".join(texts + (["\n".join(cells)] if cells else []))
        sections = [Section(stem, body)] if body.strip() else []
    if damage and not sections:  # (where some text was read, the rest of a damaged file is let go)
        raise _Damaged(damage)
    return sections


def _keynote(objects: dict[int, _Object], deck: str) -> list[Section]:
    """A section per slide, in the show's order, titled by its title placeholder's text."""
    slides = _slide_order(objects)
    sections = []
    for number, slide_id in enumerate(slides, start=1):
        slide = objects[slide_id]
        fields = _fields(slide.payload)
        title_storage = _placeholder_storage(objects, _ref(fields, 5))
        title = _text(objects[title_storage])[1] if title_storage in objects else ""
        said, notes = [], []
        if title:
            said.append(title)
        for ident, o in objects.items():
            if o.file != slide.file or o.type not in _STORAGE or ident == title_storage:
                continue
            k, t = _text(o)
            if t:
                (notes if k == _NOTE else said).append(t)
        if notes:
            said.append("Notes: " + "\n\n".join(notes))
        if said:
            heading = " ".join(title.split())
            sections.append(Section(f"{deck} > {heading}" if heading else deck, "\n\n".join(said),
                                    part=f"slide {number}"))
    return sections


def _slide_order(objects: dict[int, _Object]) -> list[int]:
    """The slides' identifiers in the show's order (ShowArchive.slideTree.slides → SlideNode.slide); where
    no show says it, those of the files named Slide*.iwa in the zip's order."""
    order = []
    show = next((o for o in objects.values() if o.type == _KN_SHOW and o.file == "Document.iwa"), None)
    if show is not None:
        tree = _get(_fields(show.payload), 3)
        for node in _all(_fields(tree), 2) if isinstance(tree, bytes) else []:
            node_id = _get(_fields(node), 1) if isinstance(node, bytes) else None
            node_obj = objects.get(node_id)
            if node_obj is not None and node_obj.type == _KN_SLIDE_NODE:
                slide_id = _ref(_fields(node_obj.payload), 2)
                if slide_id in objects and objects[slide_id].type == _KN_SLIDE and slide_id not in order:
                    order.append(slide_id)
    if order:
        return order
    return [i for i, o in objects.items() if o.type == _KN_SLIDE and o.file.startswith("Slide")]


def _placeholder_storage(objects: dict[int, _Object], placeholder: int | None) -> int | None:
    """The StorageArchive a placeholder's shape owns (PlaceholderArchive.super → ShapeInfo.owned_storage)."""
    obj = objects.get(placeholder)
    if obj is None or obj.type != _KN_PLACEHOLDER:
        return None
    shape = _get(_fields(obj.payload), 1)
    if not isinstance(shape, bytes):
        return None
    shape_fields = _fields(shape)
    return _ref(shape_fields, 4) or _ref(shape_fields, 2)


def _numbers(objects: dict[int, _Object], workbook: str) -> list[Section]:
    """A section per table ("Workbook > Sheet > Table": its strings), then one of the text boxes."""
    sections, seen = [], set()
    for sheet in [o for o in objects.values() if o.type == _TN_SHEET and o.file == "Document.iwa"]:
        fields = _fields(sheet.payload)
        sheet_name = _get(fields, 1)
        sheet_name = sheet_name.decode("utf-8", "replace").strip() if isinstance(sheet_name, bytes) else ""
        for ref in _all(fields, 2):
            info = objects.get(_get(_fields(ref), 1) if isinstance(ref, bytes) else None)
            if info is None or info.type != _TABLE_INFO:
                continue
            model = objects.get(_ref(_fields(info.payload), 2))
            if model is None or model.type != _TABLE_MODEL:
                continue
            model_fields = _fields(model.payload)
            table_name = _get(model_fields, 8)
            table_name = table_name.decode("utf-8", "replace").strip() if isinstance(table_name, bytes) else ""
            store = _get(model_fields, 4)
            strings_id = _ref(_fields(store), 4) if isinstance(store, bytes) else None
            strings = objects.get(strings_id)
            seen.add(strings_id)
            cells = _strings(strings) if strings is not None and strings.type == _DATA_LIST else []
            if cells:
                title = " > ".join(p for p in (workbook, sheet_name, table_name) if p)
                sections.append(Section(title, "\n".join(cells)))
    loose = [s for i, o in objects.items() if o.type == _DATA_LIST and i not in seen for s in _strings(o)]
    texts = [t for o in objects.values() if o.type in _STORAGE and o.file != "DocumentStylesheet.iwa"
             for k, t in [_text(o)] if t]
    if texts or loose:
        sections.append(Section(workbook, "\n\n".join(texts + (["\n".join(loose)] if loose else []))))
    return sections


# --- iWork '09, and the preview --------------------------------------------------------------------------------

def _xml_sections(z: zipfile.ZipFile, root: str, kind: str, stem: str) -> list[Section]:
    import gzip

    names = z.namelist()
    part = next((root + p for p in ("index.apxl", "index.xml", "index.apxl.gz", "index.xml.gz")
                 if root + p in names), None)
    if part is None:
        return []
    data = read_capped(z, part, MAX_BYTES)
    if part.endswith(".gz"):
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
            data = fh.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            raise SkipFile(f"its {part} unzips to more than {MAX_BYTES >> 20} MB")
    tree = parsed(data, part)
    if kind == "key":
        sections = []
        for number, slide in enumerate(tree.iter(_KEY + "slide"), start=1):
            title_el = next(slide.iter(_KEY + "title-placeholder"), None)
            title = " ".join(_paragraphs(title_el)) if title_el is not None else ""
            said = [p for p in _paragraphs(slide)]
            notes = next(slide.iter(_KEY + "notes"), None)
            noted = _paragraphs(notes) if notes is not None else []
            said = [p for p in said if p not in noted] + (["Notes: " + "\n".join(noted)] if noted else [])
            if said:
                sections.append(Section(f"{stem} > {' '.join(title.split())}" if title.strip() else stem,
                                        "\n\n".join(said), part=f"slide {number}"))
        return sections
    said = _paragraphs(tree)
    body = "\n\n".join(said)
    return [Section(stem, body)] if body.strip() else []


_NOT_TEXT = {"section-prototypes", "prototype", "stylesheet", "styles", "ghost-text", "master-slides",
             "master-slide", "theme-list", "metadata"}  # templates, placeholder text, styles


def _paragraphs(el) -> list[str]:
    """The text of each sf:p under ``el`` and each table cell's string (sf:ct sfa:s="…"), in document
    order, a table's name (sf:tabular-model sf:name) before its cells; none in a template, a style or a
    master slide."""
    out = []
    stack = [el]
    while stack:
        node = stack.pop()
        local = node.tag.rpartition("}")[2] if isinstance(node.tag, str) else ""
        if local in _NOT_TEXT:
            continue
        if node.tag == _SF + "p":
            text = _OBJECT.sub("", " ".join("".join(node.itertext()).split()))
        elif node.tag == _SF + "ct":
            text = " ".join((node.get(_SFA + "s") or "").split())
        elif node.tag == _SF + "tabular-model":
            text = " ".join((node.get(_SF + "name") or "").split())
            text = "" if text == "Unnamed Table" else text  # (what Numbers '09 names a table no one named)
        else:
            text = ""
        if text:
            out.append(text)
        if node.tag != _SF + "p":
            stack.extend(reversed(list(node)))
    return out


def _pdf_sections(data: bytes, stem: str) -> list[Section]:
    """The sections of the document's QuickLook/Preview.pdf, read as a PDF file named after the document."""
    import tempfile

    from ragcli.ingest.pdf import pdf_sections

    with tempfile.TemporaryDirectory() as folder:
        pdf = Path(folder) / f"{stem or 'preview'}.pdf"
        pdf.write_bytes(data)
        return list(pdf_sections(pdf))
